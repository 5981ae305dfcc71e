"""A predicate's SQL three-valued result on one row of Python values."""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Mapping
from typing import Any

from lsmlake.core.binary_row import Timestamp
from lsmlake.expr.tree import (
    OPS,
    Compare,
    In,
    IsNotNull,
    IsNull,
    Junction,
    Leaf,
    Not,
    Or,
    Predicate,
    StartsWith,
)

PY_OPS = dict(
    zip(OPS, (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge), strict=True)
)


def python_value(v: Any) -> Any:
    return Timestamp.from_datetime(v) if isinstance(v, dt.datetime) else v


def evaluate(p: Predicate | None, values: Mapping[str, Any]) -> bool | None:
    """SQL three-valued result of ``p`` on one row of Python values (None = unknown)."""
    if p is None:
        return True
    if isinstance(p, Not):
        r = evaluate(p.child, values)
        return None if r is None else not r
    if isinstance(p, Junction):
        decisive = isinstance(p, Or)  # the child result that decides the whole
        results = [evaluate(c, values) for c in p.children]
        return decisive if decisive in results else None if None in results else not decisive
    if not isinstance(p, Leaf):
        return None  # an opaque filter (a pyarrow expression): unknown here, applied to the rows read
    if p.field not in values:
        raise ValueError(f"no value for column {p.field!r}")
    v = python_value(values[p.field])
    if isinstance(p, (IsNull, IsNotNull)):
        return (v is None) == isinstance(p, IsNull)
    if v is None:
        return None
    if isinstance(p, Compare):
        return None if p.literal is None else PY_OPS[p.op](v, python_value(p.literal))
    if isinstance(p, In):
        if any(lit is not None and v == python_value(lit) for lit in p.literals):
            return True
        return None if None in p.literals else False
    if isinstance(p, StartsWith):
        return str(v).startswith(p.prefix)
    raise TypeError(f"unknown predicate {p!r}")
