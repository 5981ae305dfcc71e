"""pyarrow compute expressions as filters: translated to the predicate tree where exact, else run on rows."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import acero

from lsmlake.core.types import DataField, to_arrow_field
from lsmlake.errors import InvalidFilterError, NoSuchColumnError
from lsmlake.expr.tree import (
    FLIPPED,
    And,
    Compare,
    In,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Predicate,
    StartsWith,
    and_,
    or_,
)

_CMP = {
    "equal": "=",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
_FLOATS = frozenset({"FLOAT", "DOUBLE"})


@dataclass(frozen=True, eq=False)
class ArrowPredicate(Predicate):
    """A pyarrow expression lsmlake cannot prune with (nested fields, casts, functions): planning keeps
    every file for it, and the rows read are filtered by it exactly (null filters the row out)."""

    expression: pc.Expression
    columns: frozenset[str]
    """The top-level columns the expression reads."""
    text: str | None = None

    def fields(self) -> frozenset[str]:
        return self.columns

    def _arrow(self, column: Any) -> Any:
        names = sorted(self.columns)
        probe = column(names[0])
        if isinstance(probe, pc.Expression):
            return self.expression
        table = pa.table({n: probe if n == names[0] else column(n) for n in names})
        return evaluate_expression(table, self.expression)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrowPredicate) and self.expression.equals(other.expression)

    def __hash__(self) -> int:
        return hash(str(self.expression))

    def __str__(self) -> str:
        return self.text if self.text is not None else str(self.expression)


def evaluate_expression(table: pa.Table, expression: pc.Expression) -> pa.ChunkedArray:
    """``expression`` evaluated on every row of ``table``, in row order."""
    plan = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration("project", acero.ProjectNodeOptions([expression], ["m"])),
        ]
    )
    return plan.to_table(use_threads=False).column("m")


def residual(
    expression: pc.Expression, fields: Sequence[DataField], text: str | None = None
) -> ArrowPredicate:
    """``expression`` as an opaque filter, checked against the columns now (not in the middle of a read)."""
    node = _readable(expression)
    # an expression whose structure cannot be read is applied as a whole to every column's rows
    columns = frozenset(_field_names(node) if node is not None else {f.name for f in fields})
    if not columns:
        raise InvalidFilterError(f"filter expression {expression} reads no column")
    if unknown := sorted(columns - {f.name for f in fields}):
        raise NoSuchColumnError(
            f"unknown column(s) {unknown} in filter expression {expression} "
            f"(columns: {sorted(f.name for f in fields)})"
        )
    schema = pa.schema([to_arrow_field(f) for f in fields])
    try:
        result = evaluate_expression(schema.empty_table(), expression)
    except (pa.ArrowException, TypeError, ValueError) as e:
        why = " ".join(str(e).split())
        raise InvalidFilterError(f"cannot apply filter expression {expression}: {why}") from None
    if not pa.types.is_boolean(result.type):
        raise InvalidFilterError(f"filter expression {expression} gives {result.type}, not a boolean")
    return ArrowPredicate(expression, columns, text)


# -- reading an expression's structure -------------------------------------------------------------
# pyarrow serializes an expression (for pickling) as an Arrow IPC file: the literals are the columns
# of one record batch, and the tree is the schema's key/value metadata in order ("call" name, its
# arguments, "end" name). pyarrow exposes that metadata only as a dict, which loses repeated keys, so
# the ordered pairs are read from the schema's Arrow C data interface export.


class _CSchema(ctypes.Structure):
    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    capsule = schema.__arrow_c_schema__()
    at = _CSchema.from_address(_capsule_pointer(capsule, b"arrow_schema")).metadata
    if not at:
        return []
    (count,) = struct.unpack("<i", ctypes.string_at(at, 4))
    at += 4
    pairs = []
    for _ in range(count):
        kv = []
        for _ in range(2):
            (size,) = struct.unpack("<i", ctypes.string_at(at, 4))
            kv.append(ctypes.string_at(at + 4, size).decode())
            at += 4 + size
        pairs.append((kv[0], kv[1]))
    return pairs


@dataclass(frozen=True)
class _Node:
    kind: str  # "call", "field", "literal"
    name: str = ""
    args: tuple[_Node, ...] = ()
    path: tuple[str, ...] = ()
    value: Any = None
    options: dict[str, Any] | None = None


def _tokens(expression: pc.Expression) -> _Node:
    reader = pa.ipc.open_file(expression.__reduce__()[1][0])
    batch = reader.read_all()
    pairs = _metadata_pairs(reader.schema)
    node, end = _parse(pairs, 0, batch)
    if end != len(pairs):
        raise InvalidFilterError(f"cannot read filter expression {expression}")
    return node


def _readable(expression: pc.Expression) -> _Node | None:
    """The expression's tree, or None when this pyarrow serializes expressions in a layout not known here
    (the tree only serves pruning: such a filter is still applied exactly, as a residual)."""
    try:
        return _tokens(expression)
    except (InvalidFilterError, IndexError, KeyError, ValueError, struct.error, pa.ArrowException):
        return None


def _parse(pairs: list[tuple[str, str]], i: int, batch: pa.Table) -> tuple[_Node, int]:
    key, value = pairs[i]
    if key == "field_ref":
        return _Node("field", path=(value,)), i + 1
    if key == "nested_field_ref":
        n = int(value)
        return _Node("field", path=tuple(v for _, v in pairs[i + 1 : i + 1 + n])), i + 1 + n
    if key == "literal":
        return _Node("literal", value=batch.column(int(value))[0]), i + 1
    if key != "call":
        raise InvalidFilterError(f"unexpected {key!r} in a filter expression")
    args: list[_Node] = []
    options = None
    i += 1
    while pairs[i][0] != "end":
        if pairs[i][0] == "options":
            options = batch.column(int(pairs[i][1]))[0].as_py()
            i += 1
            continue
        arg, i = _parse(pairs, i, batch)
        args.append(arg)
    return _Node("call", value, tuple(args), options=options), i + 1


def _field_names(node: _Node) -> set[str]:
    if node.kind == "field":
        return {node.path[0]}
    return set().union(*(_field_names(a) for a in node.args)) if node.args else set()


# -- translation: exact, node by node ---------------------------------------------------------------


class _Untranslatable(Exception):
    """This part of the expression has no exact equivalent in the predicate tree."""


def from_arrow_expression(
    expression: pc.Expression, fields: Sequence[DataField], bind: Callable[[Predicate], Predicate]
) -> Predicate:
    """A predicate (bound by ``bind``) equivalent to ``expression``: its top-level conjuncts translated exactly
    where they can be (so planning can prune with them), and the whole expression kept as an
    :class:`ArrowPredicate` when some part cannot be (so nothing is ever dropped)."""
    if not isinstance(expression, pc.Expression):
        raise TypeError(f"expected a pyarrow.compute.Expression, got {type(expression).__name__}")
    root = _readable(expression)
    if root is None:
        return residual(expression, fields)
    types = {f.name: f.type.root for f in fields}
    translated, complete = [], True
    for part in _conjunct_nodes(root):
        try:
            translated.append(bind(_translate(part, types)))
        except (_Untranslatable, InvalidFilterError):  # e.g. a literal the column cannot hold
            complete = False
    if complete:
        result = and_(*translated)
        assert result is not None
        return result
    return and_(*translated, residual(expression, fields))  # type: ignore[return-value]


def _conjunct_nodes(node: _Node) -> list[_Node]:
    if node.kind == "call" and node.name == "and_kleene":
        return [c for a in node.args for c in _conjunct_nodes(a)]
    return [node]


def _column(node: _Node, types: dict[str, str]) -> str:
    if node.kind != "field" or len(node.path) != 1 or node.path[0] not in types:
        raise _Untranslatable  # nested fields, or a name the binder would resolve loosely
    return node.path[0]


def _translate(node: _Node, types: dict[str, str]) -> Predicate:
    if node.kind == "field" and types.get(_column(node, types)) == "BOOLEAN":
        return Compare(node.path[0], "=", True)
    if node.kind != "call":
        raise _Untranslatable
    name, args, options = node.name, node.args, node.options or {}
    if name in ("and_kleene", "or_kleene"):
        parts = [_translate(a, types) for a in args]
        return and_(*parts) if name == "and_kleene" else or_(*parts)  # type: ignore[return-value]
    if name == "invert" and len(args) == 1:
        return Not(_translate(args[0], types))
    if name in _CMP and len(args) == 2:
        op, (left, right) = _CMP[name], args
        if left.kind == "literal":
            op, left, right = FLIPPED[op], right, left
        column = _column(left, types)
        if right.kind != "literal":
            raise _Untranslatable
        return Compare(column, op, right.value.as_py())
    if name in ("is_null", "is_valid") and len(args) == 1:
        if options.get("nan_is_null"):
            raise _Untranslatable
        column = _column(args[0], types)
        return IsNull(column) if name == "is_null" else IsNotNull(column)
    if name == "is_in" and len(args) == 1:
        return _is_in(_column(args[0], types), options, types)
    if name == "starts_with" and len(args) == 1 and not options.get("ignore_case"):
        return StartsWith(_column(args[0], types), str(options["pattern"]))
    raise _Untranslatable


def _is_in(column: str, options: dict[str, Any], types: dict[str, str]) -> Predicate:
    """pyarrow's ``is_in`` by its null handling (0 MATCH, 1 SKIP, 2 EMIT_NULL, 3 INCONCLUSIVE); floats
    are left to pyarrow (it hashes NaN equal to NaN and -0.0 apart from 0.0, the tree compares)."""
    if types[column] in _FLOATS:
        raise _Untranslatable
    values = list(options.get("value_set") or [])
    known = tuple(v for v in values if v is not None)
    behaviour = options.get("null_matching_behavior", 0)
    if behaviour == 3:
        return In(column, tuple(values))
    if behaviour == 2:
        return In(column, known)
    if behaviour == 0 and len(known) < len(values):
        return Or((IsNull(column), In(column, known))) if known else IsNull(column)
    return And((IsNotNull(column), In(column, known)))
