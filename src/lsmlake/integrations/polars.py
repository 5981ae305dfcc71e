"""Polars: a table as a ``pl.LazyFrame`` through Polars' IO-plugin interface, with projection, predicate
and slice pushdown into lsmlake's scan (the ``polars`` extra)."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lsmlake.catalog import Catalog
from lsmlake.core.types import DataField
from lsmlake.errors import InvalidFilterError, NoSuchColumnError
from lsmlake.expr import And, Compare, IsNotNull, IsNull, Not, Predicate, StartsWith, and_, or_, parse_filter
from lsmlake.expr.tree import FLIPPED
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.options import ReadOptions
from lsmlake.read.table_read import Scan

if TYPE_CHECKING:
    import polars as pl

_OPS = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_INTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT"})
_INT_LITERALS = frozenset({"Int", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"})
_EPOCH = dt.date(1970, 1, 1)
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}


def open_table(table_or_path: TableHandle | str | os.PathLike[str]) -> TableHandle:
    """A table, or the one in a filesystem warehouse directory ``<warehouse>/<db>.db/<table>``."""
    if isinstance(table_or_path, TableHandle):
        return table_or_path
    path = os.path.normpath(os.fspath(table_or_path))
    db_dir, name = os.path.split(path)
    warehouse, db = os.path.split(db_dir)
    if not db.endswith(".db") or not name:
        raise ValueError(f"{table_or_path!r} is not a table directory <warehouse>/<database>.db/<table>")
    return Catalog(warehouse).open_table(f"{db[:-3]}.{name}")


class PolarsSource:
    """The IO source behind :func:`scan_table`: called by Polars once per collect with the columns, the
    predicate and the row count the query needs. ``scans`` lists the lsmlake scans it made (their
    ``plan_summary`` shows what planning pruned)."""

    def __init__(self, table: TableHandle, options: ReadOptions | None = None) -> None:
        self.table = table
        self.options = options if options is not None else ReadOptions()
        self.scans: list[Scan] = []
        self._schema = Scan(table, self.options).schema

    def polars_schema(self) -> pl.Schema:
        import polars as pl

        frame = pl.from_arrow(self._schema.empty_table())
        assert isinstance(frame, pl.DataFrame)
        return frame.schema

    def lazy(self) -> pl.LazyFrame:
        from polars.io.plugins import register_io_source

        return register_io_source(
            self, schema=self.polars_schema(), explain_name="lsmlake", explain_detail=self.table.name
        )

    def __call__(
        self,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        import polars as pl

        fields = self._fields()
        pushed, exact = (None, True) if predicate is None else translate(predicate, fields)
        columns = None
        if with_columns is not None:
            wanted = set(with_columns) | (
                set(predicate.meta.root_names()) if predicate is not None else set()
            )
            columns = [f.name for f in fields if f.name in wanted]
        limit = n_rows if exact else None  # a limit below an untranslated filter would cut too early
        scan = Scan(self.table, replace(self.options, filter=pushed, columns=columns, limit=limit))
        self.scans.append(scan)
        remaining = n_rows
        for batch in scan.to_batches():
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:  # Polars' own semantics decide: the pushed part only prunes
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            yield frame
            if remaining == 0:
                return

    def _fields(self) -> Sequence[DataField]:
        names = set(self._schema.names)
        return [f for f in Scan(self.table, self.options).table.schema.fields if f.name in names]


def scan_table(
    table_or_path: TableHandle | str | os.PathLike[str],
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    as_of_millis: int | None = None,
) -> pl.LazyFrame:
    """A lazy frame over the table (now, or at a snapshot, tag or time): Polars pushes the columns it
    needs, the filter (translated to an lsmlake predicate where exact, for planning to prune with; Polars
    applies the whole filter to what is read) and a row limit into the scan."""
    options = ReadOptions(snapshot_id=snapshot_id, tag=tag, as_of_millis=as_of_millis)
    return PolarsSource(open_table(table_or_path), options).lazy()


# -- Polars expressions to predicates --------------------------------------------------------------


class _Untranslatable(Exception):
    """No exact equivalent in the predicate tree."""


def translate(predicate: pl.Expr, fields: Sequence[DataField]) -> tuple[Predicate | None, bool]:
    """The bound lsmlake predicate for the top-level conjuncts of ``predicate`` that translate exactly,
    and whether all did. Read from Polars' JSON form of the expression; anything unknown stays with Polars.
    Float columns stay with Polars too: it orders NaN above every number and equal to itself."""
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except (ValueError, TypeError, AttributeError):  # a Polars without the JSON form
        return None, False
    roots = {f.name: f.type for f in fields}
    parts, exact = [], True
    for node in _conjuncts(tree):
        try:
            parts.append(parse_filter(_node(node, roots), fields))
        except (_Untranslatable, InvalidFilterError, NoSuchColumnError, KeyError, TypeError, ValueError):
            exact = False
    return and_(*parts), exact


def _conjuncts(node: Any) -> list[Any]:
    b = node.get("BinaryExpr") if isinstance(node, dict) else None
    if b is not None and b.get("op") in ("And", "LogicalAnd"):
        return _conjuncts(b["left"]) + _conjuncts(b["right"])
    return [node]


def _column(node: Any, roots: dict[str, Any]) -> str:
    if not isinstance(node, dict) or not isinstance(node.get("Column"), str) or node["Column"] not in roots:
        raise _Untranslatable
    return str(node["Column"])


def _literal(node: Any, column_type: Any) -> Any:
    """The literal's value when its kind matches the column's (int, string, date, boolean)."""
    lit = node.get("Literal") if isinstance(node, dict) else None  # {"Dyn": {"Int": 1}}, {"Scalar": {...}}
    holder = next(iter(lit.values())) if isinstance(lit, dict) and len(lit) == 1 else None
    if not isinstance(holder, dict) or len(holder) != 1:
        raise _Untranslatable
    ((kind, value),) = holder.items()
    root = column_type.root
    if kind in _INT_LITERALS and root in _INTS and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind in ("String", "Str") and column_type.is_string and isinstance(value, str):
        return value
    if kind == "Boolean" and root == "BOOLEAN" and isinstance(value, bool):
        return value
    if kind == "Date" and root == "DATE" and isinstance(value, int):
        return _EPOCH + dt.timedelta(days=value)
    raise _Untranslatable


def _node(node: Any, roots: dict[str, Any]) -> Predicate:
    if isinstance(node, dict) and "Column" in node:
        name = _column(node, roots)
        if roots[name].root != "BOOLEAN":
            raise _Untranslatable
        return Compare(name, "=", True)
    if not isinstance(node, dict) or len(node) != 1:
        raise _Untranslatable
    if "BinaryExpr" in node:
        return _binary(node["BinaryExpr"], roots)
    if "Function" in node:
        return _function(node["Function"], roots)
    raise _Untranslatable


def _binary(b: dict[str, Any], roots: dict[str, Any]) -> Predicate:
    op, left, right = b.get("op"), b.get("left"), b.get("right")
    if op in ("And", "LogicalAnd", "Or", "LogicalOr"):
        parts = (_node(left, roots), _node(right, roots))
        return and_(*parts) if op in ("And", "LogicalAnd") else or_(*parts)  # type: ignore[return-value]
    if op not in _OPS:
        raise _Untranslatable
    cmp = _OPS[op]
    if isinstance(left, dict) and "Literal" in left:
        cmp, left, right = FLIPPED[cmp], right, left
    name = _column(left, roots)
    return Compare(name, cmp, _literal(right, roots[name]))


def _function(f: dict[str, Any], roots: dict[str, Any]) -> Predicate:
    inputs, function = f.get("input") or [], f.get("function")
    boolean = function.get("Boolean") if isinstance(function, dict) else None
    if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1:
        name = _column(inputs[0], roots)
        return IsNull(name) if boolean == "IsNull" else IsNotNull(name)
    if boolean == "Not" and len(inputs) == 1:
        return Not(_node(inputs[0], roots))
    if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
        low_op, high_op = _BETWEEN[boolean["IsBetween"]["closed"]]
        name = _column(inputs[0], roots)
        low, high = (
            Compare(name, o, _literal(x, roots[name]))
            for o, x in zip((low_op, high_op), inputs[1:], strict=True)
        )
        return And((low, high))
    string = function.get("StringExpr") if isinstance(function, dict) else None
    if string == "StartsWith" and len(inputs) == 2:
        name = _column(inputs[0], roots)
        prefix = _literal(inputs[1], roots[name])
        return StartsWith(name, prefix)
    raise _Untranslatable
