"""IntervalPartition: split a bucket's files into key-disjoint sections of minimal sorted runs."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.types import DataType
from lsmlake.metadata.data_file import DataFileMeta

T = TypeVar("T")
Bounds = Callable[[T], tuple[Any, Any]]
"""Maps an item to its (min key, max key); keys are mutually comparable (e.g. tuples)."""


def interval_partition(items: Sequence[T], bounds: Bounds[T]) -> list[list[list[T]]]:
    """Sections (ascending, key-disjoint) of sorted runs, as Java's ``IntervalPartition.partition``.

    Items are sorted by (min key, max key); a new section starts when an item's min key is
    strictly greater than every max key seen in the current section. Inside a section items are
    greedily assigned to the run whose last max key is smallest, when strictly below the item's
    min key, else they open a new run. The order of runs within a section carries no meaning.
    """
    ordered = sorted(items, key=lambda it: bounds(it))
    sections: list[list[list[T]]] = []
    current: list[T] = []
    bound: Any = None
    for item in ordered:
        lo, hi = bounds(item)
        if current and lo > bound:
            sections.append(_runs(current, bounds))
            current, bound = [], None
        current.append(item)
        if bound is None or hi > bound:
            bound = hi
    if current:
        sections.append(_runs(current, bounds))
    return sections


def _runs(section: list[T], bounds: Bounds[T]) -> list[list[T]]:
    """Minimal partition of one section's (sorted) items into runs with strictly increasing keys."""
    counter = 0
    heap: list[tuple[Any, int, list[T]]] = [(bounds(section[0])[1], counter, [section[0]])]
    for item in section[1:]:
        lo, hi = bounds(item)
        top_max, top_id, run = heapq.heappop(heap)
        if lo > top_max:
            run.append(item)
            heapq.heappush(heap, (hi, top_id, run))
        else:
            counter += 1
            heapq.heappush(heap, (top_max, top_id, run))
            heapq.heappush(heap, (hi, counter, [item]))
    heap.sort(key=lambda e: e[1])
    return [run for _, _, run in heap]


# --------------------------------------------------------------------------- BinaryRow keys


def _sortable(value: object) -> tuple[Any, ...]:
    """A total-order key for one decoded field: nulls first, NaN after every other float."""
    if value is None:
        return (0,)
    if isinstance(value, float):
        return (1, math.isnan(value), 0.0 if math.isnan(value) else value)
    return (1, value)


class KeyBounds:
    """Decodes ``_MIN_KEY``/``_MAX_KEY`` BinaryRows into comparable tuples, cached per byte string."""

    def __init__(self, key_types: Sequence[DataType]) -> None:
        self.key_types = list(key_types)
        self._cache: dict[bytes, tuple[tuple[Any, ...], ...]] = {}

    def key(self, serialized: bytes) -> tuple[tuple[Any, ...], ...]:
        cached = self._cache.get(serialized)
        if cached is None:
            values = deserialize_row(serialized, self.key_types)
            cached = tuple(_sortable(v) for v in values)
            self._cache[serialized] = cached
        return cached

    def __call__(self, f: DataFileMeta) -> tuple[tuple[tuple[Any, ...], ...], tuple[tuple[Any, ...], ...]]:
        return self.key(f.min_key), self.key(f.max_key)


def partition_files(
    files: Sequence[DataFileMeta], key_types: Sequence[DataType]
) -> list[list[list[DataFileMeta]]]:
    """IntervalPartition of data files, comparing their min/max keys decoded with ``key_types``."""
    return interval_partition(files, KeyBounds(key_types))
