"""SQL WHERE text (or an unbound tree) to a bound predicate: names resolved, literals coerced."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lsmlake.core.types import DataField
from lsmlake.errors import InvalidFilterError, NoSuchColumnError
from lsmlake.expr.arrow_filter import ArrowPredicate, from_arrow_expression, residual
from lsmlake.expr.filter_input import FilterInput, dnf_expression, resolve_path
from lsmlake.expr.literals import coerce_literal
from lsmlake.expr.tree import (
    FLIPPED,
    And,
    Compare,
    In,
    IsNotNull,
    IsNull,
    Junction,
    Leaf,
    Not,
    Predicate,
    StartsWith,
    and_,
    or_,
)

_SQL_CMP: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}


class _Binder:
    """Resolves column names (exact, else unique case-insensitive) and converts/binds trees."""

    def __init__(self, fields: Sequence[DataField]) -> None:
        self.fields = {f.name: f for f in fields}
        self.lower: dict[str, list[DataField]] = {}
        for f in fields:
            self.lower.setdefault(f.name.lower(), []).append(f)
        self.schema_fields = tuple(fields)
        self.paths: dict[str, tuple[str, ...]] = {}
        """Nested fields met so far: the dotted name a leaf uses -> the path from the top-level column."""

    def column(self, name: str, exact: bool = False) -> DataField:
        if name in self.fields:
            return self.fields[name]
        matches = [] if exact else self.lower.get(name.lower(), [])
        if len(matches) == 1:
            return matches[0]
        chain = None if exact else resolve_path(name, self.schema_fields)
        if chain is None:
            raise NoSuchColumnError(f"unknown column {name!r} in filter (columns: {sorted(self.fields)})")
        self.paths[name] = tuple(f.name for f in chain)
        return DataField(chain[-1].id, name, chain[-1].type)

    def nested(self, p: Predicate) -> Predicate:
        """``p`` (over one column) as a filter on rows when that column is a nested field: the tree's
        stats pruning and pushdown work on top-level columns only."""
        inner = p.fields() & self.paths.keys()
        if not inner:
            return p
        paths = self.paths
        expression = p._arrow(lambda name: pc.field(*paths[name]))
        return ArrowPredicate(expression, frozenset(paths[n][0] for n in inner), str(p))

    def bind(self, p: Predicate) -> Predicate:
        return self.nested(self._bind(p))

    def _bind(self, p: Predicate) -> Predicate:
        if isinstance(p, ArrowPredicate):
            return residual(p.expression, self.schema_fields, p.text)
        if isinstance(p, Junction):
            return type(p)(tuple(self.bind(c) for c in p.children))
        if isinstance(p, Not):
            return Not(self.bind(p.child))
        if not isinstance(p, Leaf):
            raise TypeError(f"unknown predicate {p!r}")
        col = self.column(p.field)
        if isinstance(p, Compare):
            return Compare(col.name, p.op, coerce_literal(p.literal, col.type, column=col.name), col.type)
        if isinstance(p, In):
            lits = tuple(coerce_literal(v, col.type, column=col.name) for v in p.literals)
            return In(col.name, lits, col.type)
        if isinstance(p, StartsWith) and not col.type.is_string:
            raise InvalidFilterError(f"LIKE needs a string column, {col.name!r} is {col.type}")
        return StartsWith(col.name, str(p.prefix)) if isinstance(p, StartsWith) else type(p)(col.name)

    def convert(self, node: exp.Expr) -> Predicate:
        if isinstance(node, (exp.Paren, exp.And, exp.Or)):
            return self._convert(node)
        return self.nested(self._convert(node))

    def _convert(self, node: exp.Expr) -> Predicate:
        if isinstance(node, exp.Paren):
            return self.convert(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            join = and_ if isinstance(node, exp.And) else or_
            return join(self.convert(node.left), self.convert(node.right))  # type: ignore[return-value]
        if isinstance(node, exp.Not):
            inner = node.this.unnest()
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                return IsNotNull(self._column(inner.this).name)
            return Not(self.convert(inner))
        if isinstance(node, exp.Is):
            col = self._column(node.this)
            if isinstance(node.expression, exp.Null):
                return IsNull(col.name)
            if isinstance(node.expression, exp.Boolean) and col.type.root == "BOOLEAN":
                value = bool(node.expression.this)
                return And((IsNotNull(col.name), Compare(col.name, "=", value, col.type)))
        elif type(node) in _SQL_CMP:
            op, left, right = _SQL_CMP[type(node)], node.this, node.expression
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                op, left, right = FLIPPED[op], right, left
            col = self._column(left)
            return Compare(col.name, op, self._literal(right, col), col.type)
        elif isinstance(node, exp.Between):
            col = self._column(node.this)
            lo, hi = self._literal(node.args["low"], col), self._literal(node.args["high"], col)
            return And((Compare(col.name, ">=", lo, col.type), Compare(col.name, "<=", hi, col.type)))
        elif isinstance(node, exp.In) and node.expressions and not node.args.get("query"):
            col = self._column(node.this)
            return In(col.name, tuple(self._literal(e, col) for e in node.expressions), col.type)
        elif isinstance(node, exp.Like) and not isinstance(node.expression, exp.Escape):
            like = self._like(self._column(node.this), _raw_literal(node.expression))
            return Not(like) if node.args.get("negate") else like
        elif isinstance(node, exp.Column) and self._column(node).type.root == "BOOLEAN":
            col = self._column(node)
            return Compare(col.name, "=", True, col.type)
        raise InvalidFilterError(f"unsupported filter construct: {node.sql()!r}")

    def _column(self, node: exp.Expr) -> DataField:
        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            raise InvalidFilterError(f"expected a column name, got {node.sql()!r}")
        if node.table:  # addr.city: a field of a ROW column
            try:
                return self.column(".".join(part.name for part in node.parts))
            except NoSuchColumnError:
                raise InvalidFilterError(
                    f"{node.sql()!r} is neither a column nor a nested field (columns: {sorted(self.fields)})"
                ) from None
        return self.column(node.name, exact=bool(node.this.args.get("quoted")))

    def _literal(self, node: exp.Expr, col: DataField) -> Any:
        return coerce_literal(_raw_literal(node), col.type, column=col.name)

    @staticmethod
    def _like(col: DataField, pattern: Any) -> Predicate:
        if not col.type.is_string or not isinstance(pattern, str):
            raise InvalidFilterError(f"LIKE needs a string column and pattern, got {col.name!r} {col.type}")
        head = re.match(r"[^%_]*", pattern).group(0)  # type: ignore[union-attr]
        if "\\" not in head and len(head) == len(pattern):
            return Compare(col.name, "=", head, col.type)
        if "\\" not in head and pattern[len(head) :].strip("%") == "":
            return StartsWith(col.name, head)
        raise InvalidFilterError(
            f"unsupported LIKE pattern {pattern!r} (only 'prefix%' or no wildcards, no escapes)"
        )


def _raw_literal(node: exp.Expr) -> Any:
    if isinstance(node, exp.Literal):
        text = str(node.this)
        return text if node.is_string else int(text) if re.fullmatch(r"[+-]?\d+", text) else Decimal(text)
    if isinstance(node, exp.Neg) and isinstance(inner := _raw_literal(node.this), (int, Decimal)):
        return inner.copy_negate() if isinstance(inner, Decimal) else -inner  # exact, no context rounding
    if isinstance(node, (exp.Boolean, exp.Null)):
        return None if isinstance(node, exp.Null) else bool(node.this)
    if isinstance(node, (exp.Cast, exp.TryCast, exp.Paren)):  # DATE '...', TIMESTAMP '...', CAST(...)
        return _raw_literal(node.this)
    raise InvalidFilterError(f"expected a literal, got {node.sql()!r}")


def parse_filter(filter: FilterInput, schema_fields: Sequence[DataField]) -> Predicate | None:
    """A bound Predicate (column names resolved, literals coerced) from SQL WHERE text, a tree, a
    ``pyarrow.compute.Expression`` or a DNF list (see :data:`FilterInput`)."""
    if filter is None or (isinstance(filter, str) and not filter.strip()):
        return None
    binder = _Binder(schema_fields)
    if isinstance(filter, Predicate):
        return binder.bind(filter)
    if isinstance(filter, pc.Expression):
        return from_arrow_expression(filter, schema_fields, binder.bind)
    if isinstance(filter, (list, tuple)):
        return from_arrow_expression(dnf_expression(filter, schema_fields), schema_fields, binder.bind)
    if not isinstance(filter, str):
        raise InvalidFilterError(
            "filter must be SQL text, a Predicate, a pyarrow.compute.Expression or a DNF list, "
            f"got {type(filter).__name__}"
        )
    return _parse_text(filter, tuple(schema_fields))


@lru_cache(maxsize=256)
def _parse_text(text: str, schema_fields: tuple[DataField, ...]) -> Predicate:
    """Parsed once per (text, schema): predicates are frozen, and a repeated read skips sqlglot."""
    try:
        tree = sqlglot.parse_one(text)
    except sqlglot.errors.SqlglotError as e:
        raise InvalidFilterError(f"cannot parse filter {text!r}: {sqlglot_error_text(e)}") from None
    return _Binder(schema_fields).convert(tree)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SQLGLOT_CLASS = re.compile(r"<class '(?:\w+\.)*(\w+)'>")


def sqlglot_error_text(e: sqlglot.errors.SqlglotError) -> str:
    """A sqlglot error as plain text from its structured errors: what, where and near which token
    (sqlglot's own message underlines the token with terminal escape codes)."""
    errors = getattr(e, "errors", None) or []
    if not errors:
        return _ANSI.sub("", str(e))
    first = errors[0]
    what = _SQLGLOT_CLASS.sub(r"\1", str(first.get("description") or "syntax error"))
    near = _ANSI.sub("", str(first.get("highlight") or "")).strip()
    where = f" at line {first.get('line')}, column {first.get('col')}" if first.get("line") else ""
    return what + where + (f" near {near!r}" if near else "")
