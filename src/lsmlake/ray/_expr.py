"""Ray Data expressions (``ds.filter(expr=col("x") > 3)``) as lsmlake predicates, when they mean the same.

Ray evaluates a pushed-down filter with pyarrow kernels; lsmlake's predicates have SQL semantics
(a null result drops the row). The two agree on comparisons, IS [NOT] NULL, AND / OR (Kleene) and
IN, and on NOT over anything but IN: Ray's ``is_in`` is false (not null) for a null value, so
``NOT is_in`` keeps null rows where SQL's ``NOT IN`` drops them. Whatever does not translate, or
could change meaning, returns None and stays a Ray filter above the read.
"""

from __future__ import annotations

from typing import Any

from lsmlake.expr import And, Compare, In, IsNotNull, IsNull, Not, Or, Predicate
from lsmlake.expr.tree import FLIPPED

_COMPARE = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _op(expr: Any) -> str | None:
    op = getattr(expr, "op", None)
    return None if op is None else str(getattr(op, "value", op))


def _column(expr: Any) -> str | None:
    if type(expr).__name__ == "ColumnExpr":
        return str(expr.name)
    return None


_NO_LITERAL = object()


def _literal(expr: Any) -> Any:
    if type(expr).__name__ != "LiteralExpr":
        return _NO_LITERAL
    value = expr.value
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):  # numpy scalars
        try:
            value = value.item()
        except (TypeError, ValueError):
            return _NO_LITERAL
    return value


def to_predicate(expr: Any, *, under_not: bool = False) -> Predicate | None:
    """The lsmlake predicate equal in meaning to a Ray Data expression, or None."""
    kind = type(expr).__name__
    op = _op(expr)
    if kind == "AliasExpr":
        return to_predicate(expr.expr, under_not=under_not)
    if kind == "UnaryExpr":
        name = _column(expr.operand)
        if op == "is_null" and name is not None:
            return IsNull(name)
        if op == "is_not_null" and name is not None:
            return IsNotNull(name)
        if op == "not":
            inner = to_predicate(expr.operand, under_not=True)
            return None if inner is None else Not(inner)
        return None
    if kind != "BinaryExpr" or op is None:
        return None
    if op in ("and", "or"):
        left = to_predicate(expr.left, under_not=under_not)
        right = to_predicate(expr.right, under_not=under_not)
        if left is None or right is None:
            return None
        return And((left, right)) if op == "and" else Or((left, right))
    if op == "in":
        name, values = _column(expr.left), _literal(expr.right)
        if under_not or name is None or values is _NO_LITERAL:
            return None
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        if any(v is None for v in values):  # Ray's is_in matches null to a null in the list; SQL does not
            return None
        return In(name, tuple(values))
    if op in _COMPARE:
        sql = _COMPARE[op]
        name, value = _column(expr.left), _literal(expr.right)
        if name is None:
            name, value, sql = _column(expr.right), _literal(expr.left), FLIPPED[sql]
        if name is None or value is _NO_LITERAL or value is None or isinstance(value, (list, tuple, dict)):
            return None
        return Compare(name, sql, value)
    return None
