"""Stats pruning: whether any row of a file with given column min/max/null counts can match."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsmlake.expr.evaluate import PY_OPS, python_value
from lsmlake.expr.literals import FLOAT_ROOTS, is_nan
from lsmlake.expr.tree import Compare, In, IsNotNull, IsNull, Junction, Leaf, Not, Or, Predicate, StartsWith

_NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True)
class ColumnStats:
    """Per-file column statistics as Python values; None means unknown."""

    min: Any = None
    max: Any = None
    null_count: int | None = None


def _next_prefix(s: str) -> str | None:
    """The smallest string greater than every string starting with ``s`` (None if there is none)."""
    chars = list(s)
    while chars:
        c = ord(chars[-1]) + 1
        if c <= 0x10FFFF:
            chars[-1] = chr(0xE000 if c == 0xD800 else c)
            return "".join(chars)
        chars.pop()
    return None


def _leaf_might(p: Leaf, s: ColumnStats, row_count: int, neg: bool) -> bool:
    if isinstance(p, (IsNull, IsNotNull)):
        if s.null_count is None:
            return True
        return s.null_count > 0 if isinstance(p, IsNull) != neg else s.null_count < row_count
    if s.null_count is not None and s.null_count >= row_count:
        return False  # only nulls: no comparison holds, negated or not
    lo, hi = (None if v is None or is_nan(v) else python_value(v) for v in (s.min, s.max))
    floats = isinstance(s.min, float) or isinstance(s.max, float)
    if isinstance(p, Compare):
        if p.literal is None:
            return False
        floats = (
            floats or isinstance(p.literal, float) or (p.dtype is not None and p.dtype.root in FLOAT_ROOTS)
        )
        if neg and floats:
            return True  # NaN satisfies every negated comparison, and stats may leave NaN out
        op, lit = _NEGATED[p.op] if neg else p.op, python_value(p.literal)
        if op == "!=":  # truncated string/bytes bounds and NaN make equal bounds inconclusive
            return floats or isinstance(lit, (str, bytes)) or lo is None or not lo == hi == lit
        if op in ("=", "<", "<=") and lo is not None and not PY_OPS["<=" if op == "=" else op](lo, lit):
            return False
        return op not in ("=", ">", ">=") or hi is None or PY_OPS[">=" if op == "=" else op](hi, lit)
    if isinstance(p, In):
        if neg:
            return None not in p.literals
        eqs = (Compare(p.field, "=", v) for v in p.literals if v is not None)
        return any(_leaf_might(c, s, row_count, False) for c in eqs)
    if isinstance(p, StartsWith) and not neg:
        upper = _next_prefix(p.prefix)
        return (hi is None or hi >= p.prefix) and (upper is None or lo is None or lo < upper)
    return True


def might_match(p: Predicate | None, stats: Mapping[str, ColumnStats], row_count: int) -> bool:
    """False only when no row of a file with these stats can satisfy ``p`` (unknown stats -> True)."""
    if row_count <= 0:
        return False
    return p is None or _might(p, stats, row_count, False)


def _might(p: Predicate, stats: Mapping[str, ColumnStats], row_count: int, neg: bool) -> bool:
    if isinstance(p, Not):
        return _might(p.child, stats, row_count, not neg)
    if isinstance(p, Junction):
        parts = (_might(c, stats, row_count, neg) for c in p.children)
        return all(parts) if isinstance(p, Or) == neg else any(parts)
    if not isinstance(p, Leaf):
        return True  # an opaque filter (a pyarrow expression, a nested field): cannot prune
    s = stats.get(p.field)
    try:
        return s is None or _leaf_might(p, s, row_count, neg)
    except TypeError:  # stats of an unexpected type: cannot prune
        return True
