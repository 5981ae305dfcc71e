"""Key ranges over key-sorted rows by binary search: the rows a key-range filter keeps are one slice.

A primary-key data file is sorted by its key, so ``id BETWEEN a AND b`` keeps a contiguous run of its
rows. Finding the run's ends with two binary searches and slicing (no copy) replaces evaluating the
comparisons on every decoded row and filtering every column -- most of a small key-range read's work.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lsmlake.core.types import is_int64
from lsmlake.expr import Compare, Predicate, conjuncts
from lsmlake.mergetree.key_sort import integer_key


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
        if type(lit) is not int or not is_int64(lit):
            return None
        out.append(leaf)
    return out


def sorted_bounds(table: pa.Table, predicate: Predicate, column: str) -> tuple[int, int] | None:
    """``(start, stop)``: the rows of ``table`` that satisfy ``predicate``, when it is a conjunction of
    comparisons on the integer ``column`` and the table is sorted by it (checked); None otherwise."""
    comparisons = _comparisons(predicate, column)
    if comparisons is None or table.schema.get_field_index(column) < 0:
        return None
    keys = integer_key(table, [column])
    if keys is None:
        return None
    values = keys.astype(np.int64, copy=False)
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
