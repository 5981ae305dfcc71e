"""Schema change requests: one frozen dataclass per kind of ALTER, and friendly constructors.

The dataclasses mirror Paimon's ``SchemaChange`` kinds (add / drop / rename / retype a column, change
its nullability, comment or position, set or remove a table option, change the table comment). They
only describe a change; :func:`lsmlake.schema_change.apply.apply_changes` checks and applies them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import pyarrow as pa

from lsmlake.core.sql_lexer import Cursor, Statement, tokenize
from lsmlake.core.type_parser import parse_type
from lsmlake.core.types import DataType, from_arrow_type, parse_sql_type
from lsmlake.errors import SqlError

TypeLike: TypeAlias = DataType | pa.DataType | pa.Field | str
"""A column type: a Paimon :class:`DataType`, an Arrow type or field, or a type string (``BIGINT``,
``DECIMAL(10, 2)``, ``ARRAY<INT>``, ``ROW<a INT, b STRING>``; ``NOT NULL`` suffix allowed)."""

MoveKind = Literal["first", "after", "before", "last"]


@dataclass(frozen=True)
class Move:
    """Where a column goes: FIRST, LAST, or AFTER / BEFORE another column."""

    kind: MoveKind
    reference: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("first", "after", "before", "last"):
            raise ValueError(f"unknown column move {self.kind!r}: expected first, after, before or last")
        if (self.kind in ("after", "before")) != (self.reference is not None):
            raise ValueError(
                f"column move {self.kind!r} {'needs' if self.reference is None else 'takes no'} "
                "reference column"
            )

    def __str__(self) -> str:
        return self.kind.upper() + (f" {self.reference}" if self.reference is not None else "")


@dataclass(frozen=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption:
    key: str


@dataclass(frozen=True)
class UpdateComment:
    """The table comment (None removes it)."""

    comment: str | None


@dataclass(frozen=True)
class AddColumn:
    name: str
    type: DataType
    comment: str | None = None
    move: Move | None = None


@dataclass(frozen=True)
class DropColumn:
    name: str


@dataclass(frozen=True)
class RenameColumn:
    name: str
    new_name: str


@dataclass(frozen=True)
class UpdateColumnType:
    name: str
    type: DataType
    keep_nullability: bool = True
    """True: the column keeps its nullability; False: ``type``'s nullability is requested too."""


@dataclass(frozen=True)
class UpdateColumnNullability:
    name: str
    nullable: bool


@dataclass(frozen=True)
class UpdateColumnComment:
    name: str
    comment: str | None


@dataclass(frozen=True)
class UpdateColumnDefaultValue:
    """Paimon's ``updateColumnDefaultValue``: the SQL text written for the column's nulls (None removes it)."""

    name: str
    default_value: str | None


@dataclass(frozen=True)
class UpdateColumnPosition:
    name: str
    move: Move


SchemaChange: TypeAlias = (
    SetOption
    | RemoveOption
    | UpdateComment
    | AddColumn
    | DropColumn
    | RenameColumn
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnComment
    | UpdateColumnDefaultValue
    | UpdateColumnPosition
)
CHANGE_TYPES = (
    SetOption,
    RemoveOption,
    UpdateComment,
    AddColumn,
    DropColumn,
    RenameColumn,
    UpdateColumnType,
    UpdateColumnNullability,
    UpdateColumnComment,
    UpdateColumnDefaultValue,
    UpdateColumnPosition,
)


# --------------------------------------------------------------------------- types


def _parse_type_text(text: str) -> DataType:
    try:
        return parse_sql_type(text)
    except ValueError:
        pass
    # nested types (ARRAY<..>, MAP<..>, ROW<..>) and SQL aliases go through the SQL type parser
    tokens = tuple(tokenize(text))
    if not tokens:
        raise ValueError(f"cannot parse type {text!r}")
    cur = Cursor(Statement(text, tokens, 1, 1))
    try:
        t = parse_type(cur)
        cur.end()
    except SqlError as e:
        raise ValueError(f"cannot parse type {text!r}: {e}") from None
    return t


def to_data_type(t: TypeLike) -> tuple[DataType, bool]:
    """A Paimon type for ``t``, and whether it explicitly asks for NOT NULL."""
    if isinstance(t, DataType):
        return t, not t.nullable
    if isinstance(t, pa.Field):
        return from_arrow_type(t.type, t.nullable), not t.nullable
    if isinstance(t, pa.DataType):
        return from_arrow_type(t, True), False
    if isinstance(t, str):
        parsed = _parse_type_text(t)
        return parsed, not parsed.nullable
    raise TypeError(f"expected a column type (Paimon DataType, Arrow type or type string), got {t!r}")


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} must be a non-empty string, got {name!r}")
    return name


def _move(first: bool, after: str | None, before: str | None, last: bool) -> Move | None:
    given = [
        m
        for m in (
            Move("first") if first else None,
            Move("after", after) if after is not None else None,
            Move("before", before) if before is not None else None,
            Move("last") if last else None,
        )
        if m is not None
    ]
    if len(given) > 1:
        raise ValueError("give at most one of first, after, before and last")
    return given[0] if given else None


# --------------------------------------------------------------------------- constructors


def add_column(
    name: str,
    type: TypeLike,
    *,
    nullable: bool = True,
    comment: str | None = None,
    after: str | None = None,
    before: str | None = None,
    first: bool = False,
) -> AddColumn:
    """Add a (nullable) column, at the end unless ``first``, ``after=`` or ``before=`` says where.

    Rows written before the change read the new column as null. Paimon refuses NOT NULL here.
    """
    dtype, not_null = to_data_type(type)
    if not nullable or not_null:
        dtype = dtype.copy(nullable=False)
    return AddColumn(_check_name(name, "column name"), dtype, comment, _move(first, after, before, False))


def drop_column(name: str) -> DropColumn:
    """Drop a column (its data stays in old files and is ignored by reads)."""
    return DropColumn(_check_name(name, "column name"))


def rename_column(name: str, new_name: str) -> RenameColumn:
    """Rename a column; it keeps its field id, so files written before the rename still read it."""
    return RenameColumn(_check_name(name, "column name"), _check_name(new_name, "new column name"))


def update_column_type(name: str, new_type: TypeLike) -> UpdateColumnType:
    """Widen a column's type (INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL(p, s) -> DECIMAL(p+n, s), ...).

    The column keeps its nullability unless ``new_type`` says NOT NULL explicitly.
    """
    dtype, not_null = to_data_type(new_type)
    return UpdateColumnType(_check_name(name, "column name"), dtype, keep_nullability=not not_null)


def update_column_nullability(name: str, nullable: bool) -> UpdateColumnNullability:
    """Make a NOT NULL column nullable (the reverse is refused, as Paimon does by default)."""
    return UpdateColumnNullability(_check_name(name, "column name"), bool(nullable))


def update_column_comment(name: str, comment: str | None) -> UpdateColumnComment:
    return UpdateColumnComment(_check_name(name, "column name"), comment)


def update_column_default_value(name: str, default_value: object) -> UpdateColumnDefaultValue:
    """Set the column's default value, written wherever a row leaves the column null (None removes it).

    The value is kept as text, as Paimon keeps it: a number, ``'text'`` (one pair of enclosing single
    quotes is dropped when it is read), ``true``, a date or timestamp string. Python ``bool`` and numbers
    are spelled as SQL literals.
    """
    if default_value is not None and not isinstance(default_value, str):
        default_value = str(default_value).lower() if isinstance(default_value, bool) else str(default_value)
    return UpdateColumnDefaultValue(_check_name(name, "column name"), default_value)


def update_comment(comment: str | None) -> UpdateComment:
    """Set (or with None remove) the table comment."""
    return UpdateComment(comment)


def update_column_position(
    name: str,
    *,
    first: bool = False,
    after: str | None = None,
    before: str | None = None,
    last: bool = False,
) -> UpdateColumnPosition:
    """Move a column: ``first=True``, ``last=True``, ``after="col"`` or ``before="col"``."""
    move = _move(first, after, before, last)
    if move is None:
        raise ValueError("update_column_position needs one of first, after, before or last")
    return UpdateColumnPosition(_check_name(name, "column name"), move)


def set_option(key: str, value: object) -> SetOption:
    """Set a table option (validated like CREATE TABLE options; some cannot change once data exists)."""
    if isinstance(value, bool):
        value = str(value).lower()
    return SetOption(_check_name(key, "option key"), str(value))


def remove_option(key: str) -> RemoveOption:
    """Remove a table option (back to its default)."""
    return RemoveOption(_check_name(key, "option key"))
