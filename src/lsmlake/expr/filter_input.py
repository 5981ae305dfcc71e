"""The filter forms a read takes besides SQL text: DNF lists as pyarrow and pandas take them, and nested
field paths (``addr.city``) resolved against a schema."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import pyarrow.compute as pc

from lsmlake.core.types import DataField
from lsmlake.errors import InvalidFilterError, NoSuchColumnError
from lsmlake.expr.tree import Predicate

DNFTerm: TypeAlias = tuple[str | tuple[str, ...], str, Any]
FilterInput: TypeAlias = (
    str | Predicate | pc.Expression | Sequence[DNFTerm] | Sequence[Sequence[DNFTerm]] | None
)
"""What ``filter=`` takes: SQL WHERE text, a predicate tree, a ``pyarrow.compute.Expression``, or DNF:
``[("a", ">", 1), ("b", "in", [1, 2])]`` (all hold) or ``[[...], [...]]`` (some inner list holds)."""

_DNF_OPS = {
    "=": pc.equal,
    "==": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def _unique(name: str, fields: Sequence[DataField]) -> DataField | None:
    """The field called ``name``: exact, else the only case-insensitive match."""
    exact = [f for f in fields if f.name == name]
    loose = exact or [f for f in fields if f.name.lower() == name.lower()]
    return loose[0] if len(loose) == 1 else None


def resolve_path(name: str | Sequence[str], fields: Sequence[DataField]) -> tuple[DataField, ...] | None:
    """The fields along a nested path (``"addr.city"`` or ``("addr", "city")``) through ROW columns, from
    the top-level column to the leaf; None if the path names no nested field."""
    parts = name.split(".") if isinstance(name, str) else list(name)
    if len(parts) < 2 or not all(parts):
        return None
    chain: list[DataField] = []
    level: Sequence[DataField] = fields
    for i, part in enumerate(parts):
        found = _unique(part, level)
        if found is None or (i < len(parts) - 1 and found.type.root != "ROW"):
            return None
        chain.append(found)
        level = found.type.fields
    return tuple(chain)


def dnf_expression(dnf: Sequence[Any], fields: Sequence[DataField]) -> pc.Expression:
    """A DNF list as the pyarrow expression pyarrow's own ``filters=`` would build (same null rules)."""
    if isinstance(dnf, tuple) and len(dnf) == 3 and isinstance(dnf[1], str) and dnf[1].lower() in _ops():
        dnf = [dnf]
    if not dnf:
        raise InvalidFilterError("a DNF filter needs at least one (column, op, value) term")
    if all(isinstance(t, tuple) for t in dnf):
        return _conjunction(dnf, fields)
    if all(isinstance(t, list) for t in dnf):
        disjuncts = [_conjunction(inner, fields) for inner in dnf]
        result = disjuncts[0]
        for d in disjuncts[1:]:
            result = result | d
        return result
    raise InvalidFilterError(
        f"a DNF filter is a list of (column, op, value) tuples or a list of such lists, got {dnf!r}"
    )


def _ops() -> set[str]:
    return {*_DNF_OPS, "in", "not in"}


def _conjunction(terms: Sequence[Any], fields: Sequence[DataField]) -> pc.Expression:
    if not terms:
        raise InvalidFilterError("an inner DNF list needs at least one (column, op, value) term")
    parts = [_term(t, fields) for t in terms]
    result = parts[0]
    for p in parts[1:]:
        result = result & p
    return result


def _term(term: Any, fields: Sequence[DataField]) -> pc.Expression:
    if not isinstance(term, tuple) or len(term) != 3 or not isinstance(term[1], str):
        raise InvalidFilterError(f"a DNF term is a (column, op, value) tuple, got {term!r}")
    name, op, value = term
    ref = _field_ref(name, fields)
    op = op.lower()
    if op in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise InvalidFilterError(f"DNF {op!r} needs a list of values, got {value!r} for {name!r}")
        found = ref.isin(list(value))
        return ~found if op == "not in" else found
    if op not in _DNF_OPS:
        raise InvalidFilterError(f"unknown DNF operator {op!r} in {term!r} (use one of {sorted(_ops())})")
    try:
        literal = pc.scalar(value)
    except (TypeError, ValueError, ArithmeticError) as e:
        raise InvalidFilterError(f"DNF value {value!r} for {name!r} is not a literal: {e}") from None
    result: pc.Expression = _DNF_OPS[op](ref, literal)
    return result


def _field_ref(name: Any, fields: Sequence[DataField]) -> pc.Expression:
    if isinstance(name, str):
        top = _unique(name, fields)
        if top is not None:
            return pc.field(top.name)
    elif not (isinstance(name, tuple) and name and all(isinstance(p, str) for p in name)):
        raise InvalidFilterError(f"a DNF column is a name or a tuple of names, got {name!r}")
    chain = resolve_path(name, fields)
    if chain is None:
        raise NoSuchColumnError(
            f"unknown column {name!r} in filter (columns: {sorted(f.name for f in fields)})"
        )
    return pc.field(*(f.name for f in chain))
