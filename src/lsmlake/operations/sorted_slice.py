"""Key ranges over key-sorted rows by binary search: the rows a key-range filter keeps are one slice.

A primary-key data file is sorted by its key, so ``id BETWEEN a AND b`` keeps a contiguous run of its
rows. Finding the run's ends with two binary searches and slicing (no copy) replaces evaluating the
comparisons on every decoded row and filtering every column -- most of a small key-range read's work.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.core.predicate import Compare, Predicate, conjuncts

_INT64 = (-(2**63), 2**63)


def _comparisons(predicate: Predicate, column: str) -> list[Compare] | None:
    """The predicate as a conjunction of range comparisons with integer literals on ``column``."""
    out = []
    for leaf in conjuncts(predicate):
        if (
            not isinstance(leaf, Compare)
            or leaf.field != column
            or leaf.op not in ("=", "<", "<=", ">", ">=")
        ):
            return None
        lit = leaf.literal
        if type(lit) is not int or not _INT64[0] <= lit < _INT64[1]:
            return None
        out.append(leaf)
    return out


def _as_int64(chunked: pa.ChunkedArray) -> np.ndarray[Any, Any]:
    """A null-free integer column as one int64 array (zero-copy for a single int64 chunk)."""
    parts = [chunk.to_numpy(zero_copy_only=False) for chunk in chunked.chunks]
    values = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return values.astype(np.int64, copy=False)


def sorted_bounds(table: pa.Table, predicate: Predicate, column: str) -> tuple[int, int] | None:
    """``(start, stop)``: the rows of ``table`` that satisfy ``predicate``, when it is a conjunction of
    comparisons on the integer ``column`` and the table is sorted by it (checked); None otherwise."""
    comparisons = _comparisons(predicate, column)
    index = table.schema.get_field_index(column)
    if comparisons is None or index < 0:
        return None
    chunked = table.column(index)
    if not pa.types.is_integer(chunked.type) or chunked.null_count:
        return None
    values = _as_int64(chunked)
    if len(values) > 1 and not bool((values[1:] >= values[:-1]).all()):
        return None
    start, stop = 0, len(values)
    for c in comparisons:
        lit = c.literal
        if c.op in (">=", "="):
            start = max(start, int(np.searchsorted(values, lit, side="left")))
        if c.op == ">":
            start = max(start, int(np.searchsorted(values, lit, side="right")))
        if c.op in ("<=", "="):
            stop = min(stop, int(np.searchsorted(values, lit, side="right")))
        if c.op == "<":
            stop = min(stop, int(np.searchsorted(values, lit, side="left")))
    return start, max(start, stop)
