"""Stable sorts by primary key, with a numpy radix path for the common single integer key."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.mergetree.engines.segments import sort_nulls_first
from lsmlake.metadata.data_file import DataFileMeta

IntArray = np.ndarray[Any, np.dtype[np.int64]]

# Below this many rows Arrow's comparison sort is as fast as the radix passes.
_RADIX_MIN_ROWS = 4096
_DIGIT_BITS = 16
# Newest-of-key through a dense table when the key span is at most this many times the row count,
# and for at least this many rows (below it, setting up the table costs more than sorting).
_DENSE_SPAN_PER_ROW = 8
_DENSE_MIN_ROWS = 4096


def integer_key(table: pa.Table, key_names: Sequence[str]) -> np.ndarray[Any, Any] | None:
    """The single integer key column as a numpy array, or None when the key is not one such column
    (several columns, other types, or nulls)."""
    if len(key_names) != 1:
        return None
    column = table.column(key_names[0])
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    return np.asarray(column.to_numpy())


def radix_argsort(keys: np.ndarray[Any, Any]) -> IntArray:
    """Stable argsort of integers: least-significant-digit radix over 16-bit digits of ``keys - min``.

    numpy's stable sort is a linear radix sort for 16-bit values, so each digit costs one pass;
    a key range below 2**32 (the usual case) needs two passes.
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo
    if span == 0:
        return np.arange(n, dtype=np.int64)
    # keys - min wraps modulo 2**64 in int64 and so is exact once viewed as uint64
    shifted = (keys.astype(np.int64, copy=False) - np.int64(lo)).view(np.uint64)
    order = np.arange(n, dtype=np.int64)
    for shift in range(0, span.bit_length(), _DIGIT_BITS):
        digit = (shifted[order] >> np.uint64(shift)).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


def newest_of_each_key(
    keys: np.ndarray[Any, Any], run_lengths: Sequence[int], *, min_rows: int = _DENSE_MIN_ROWS
) -> np.ndarray[Any, np.dtype[np.int32]] | None:
    """Positions of each key's newest row, in key order, without sorting.

    ``keys`` is a concatenation of runs (files) of ``run_lengths`` rows, each later run newer. When
    every run is strictly increasing (one row per key, as Paimon writes files), the key span is small
    next to the row count and the rows are at least ``min_rows``, each run's positions are scattered
    into a table indexed by key -- later runs overwrite earlier ones -- and the table read in order.
    None otherwise.
    """
    n = len(keys)
    if n == 0 or n < min_rows or n >= 2**31 or sum(run_lengths) != n:
        return None
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo >= _DENSE_SPAN_PER_ROW * n:
        return None
    keys = keys.astype(np.int64, copy=False)  # narrow keys would wrap when shifted by ``lo``
    bounds = np.cumsum([0, *run_lengths])
    runs = [keys[a:b] for a, b in itertools.pairwise(bounds)]
    if not all(bool(np.all(r[1:] > r[:-1])) for r in runs):
        return None
    newest = np.full(hi - lo + 1, -1, dtype=np.int32)
    for start, run in zip(bounds, runs, strict=False):
        newest[run - lo] = np.arange(start, start + len(run), dtype=np.int32)
    return newest[np.flatnonzero(newest >= 0)]  # 5x faster than a boolean index at this density


def stable_key_order(
    table: pa.Table,
    key_names: Sequence[str],
    *,
    sorted_runs: bool = False,
    integer_keys: np.ndarray[Any, Any] | None = None,
) -> IntArray:
    """Indices that sort ``table`` by its key columns (ascending, nulls first), ties kept in row order.

    ``sorted_runs``: the rows are a few concatenated key-sorted runs (files), which numpy's timsort
    merges in near-linear time; otherwise a single integer key is radix-sorted. ``integer_keys``: the
    caller's ``integer_key(table, key_names)``, when it has one (else it is computed here).
    """
    keys = integer_keys if integer_keys is not None else integer_key(table, key_names)
    if keys is not None and sorted_runs:
        return np.asarray(np.argsort(keys, kind="stable"), dtype=np.int64)
    if keys is not None and len(keys) >= _RADIX_MIN_ROWS:
        return radix_argsort(keys)
    idx = sort_nulls_first(table.select(list(key_names)), [(k, "ascending") for k in key_names])
    return np.asarray(idx.to_numpy(), dtype=np.int64)


def by_sequence(files: Iterable[DataFileMeta]) -> tuple[list[DataFileMeta], bool]:
    """The files oldest first, and whether their sequence ranges are disjoint in that order: then their
    rows, concatenated in that order, merge with ``stable_key_order(..., sorted_runs=True)``."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    disjoint = all(a.max_sequence_number < b.min_sequence_number for a, b in itertools.pairwise(ordered))
    return ordered, disjoint
