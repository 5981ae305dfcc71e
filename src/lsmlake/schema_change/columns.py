"""Column changes of an ALTER (add, rename, drop, retype, nullability, comment, position), and the
table from each change kind to the function that applies it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from lsmlake.core.default_values import default_scalar
from lsmlake.core.options import CoreOptions
from lsmlake.core.types import DataField, DataType
from lsmlake.mergetree.engines.config import FIELDS_PREFIX
from lsmlake.schema_change.casts import widening_error
from lsmlake.schema_change.changes import (
    AddColumn,
    DropColumn,
    Move,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnDefaultValue,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
)
from lsmlake.schema_change.option_rules import remove_option, set_option
from lsmlake.schema_change.state import (
    LIST_VALUE_SUFFIXES,
    RENAMED_FIELD_LIST_OPTIONS,
    SchemaState,
    change_error,
    fields_key,
    split_list,
)


def _assign_nested_ids(t: DataType, st: SchemaState) -> DataType:
    """Fresh ids (highestFieldId + 1, ...) for the ROW fields inside an added column's type."""
    if t.root == "ROW":
        fields = []
        for f in t.fields:
            st.highest += 1
            fid = st.highest
            fields.append(replace(f, id=fid, type=_assign_nested_ids(f.type, st)))
        return replace(t, fields=tuple(fields))
    if t.root in ("ARRAY", "MULTISET") and t.element is not None:
        return replace(t, element=_assign_nested_ids(t.element, st))
    if t.root == "MAP" and t.key is not None and t.value is not None:
        return replace(t, key=_assign_nested_ids(t.key, st), value=_assign_nested_ids(t.value, st))
    return t


def _insert_position(st: SchemaState, move: Move | None) -> int:
    if move is None or move.kind == "last":
        return len(st.fields)
    if move.kind == "first":
        return 0
    assert move.reference is not None
    ref = st.index(move.reference)
    return ref + 1 if move.kind == "after" else ref


def _add_column(st: SchemaState, change: AddColumn) -> None:
    if not change.type.nullable:
        raise change_error(
            st.table,
            f"column {change.name!r} cannot be added as NOT NULL (rows already written "
            "have no value for it); add it nullable",
        )
    st.check_new_name(change.name)
    position = _insert_position(st, change.move)
    before = CoreOptions.of(st.old_options, primary_key_table=bool(st.primary_keys))
    if change.move is None and st.partition_keys and before.get(CoreOptions.ADD_COLUMN_BEFORE_PARTITION):
        # Paimon: before the first partition column (the options before this ALTER decide)
        position = next(i for i, f in enumerate(st.fields) if f.name in st.partition_keys)
    st.highest += 1
    fid = st.highest
    dtype = _assign_nested_ids(change.type, st)
    st.fields.insert(position, DataField(fid, change.name, dtype, change.comment))


def _rename_options(st: SchemaState, old: str, new: str) -> None:
    out: dict[str, str] = {}
    for key, value in st.options.items():
        if key in RENAMED_FIELD_LIST_OPTIONS:
            value = ",".join(new if c == old else c for c in split_list(value))
        elif key.startswith(FIELDS_PREFIX):
            names, suffix = fields_key(key)
            if names and old in names:
                key = FIELDS_PREFIX + ",".join(new if n == old else n for n in names) + "." + suffix
            if key.endswith(LIST_VALUE_SUFFIXES):
                value = ",".join(new if c == old else c for c in split_list(value))
        out[key] = value
    st.options = out


def _rename_column(st: SchemaState, change: RenameColumn) -> None:
    i = st.index(change.name)
    if change.new_name == change.name:
        return
    st.protect_partition(change.name, "rename")
    st.check_new_name(change.new_name)
    f = st.fields[i]
    st.fields[i] = replace(f, name=change.new_name)
    # a primary-key column may be renamed (Paimon allows it; the key keeps its field id)
    st.primary_keys = [change.new_name if k == change.name else k for k in st.primary_keys]
    _rename_options(st, change.name, change.new_name)


def _drop_column(st: SchemaState, change: DropColumn) -> None:
    i = st.index(change.name)
    st.protect_partition(change.name, "drop")
    st.protect_primary_key(change.name, "drop")
    users = st.option_users(change.name)
    if users:
        raise change_error(
            st.table,
            f"cannot drop column {change.name!r}: option(s) {users} refer to it "
            "(change or remove them first)",
        )
    if len(st.fields) == 1:
        raise change_error(st.table, "cannot drop the last column of a table")
    del st.fields[i]


def _update_type(st: SchemaState, change: UpdateColumnType) -> None:
    i = st.index(change.name)
    st.protect_partition(change.name, "change the type of")
    st.protect_primary_key(change.name, "change the type of")
    f = st.fields[i]
    bucketed = int(st.options.get(CoreOptions.BUCKET.key, "-1")) > 0
    if bucketed and change.name in split_list(st.options.get(CoreOptions.BUCKET_KEY.key, "")):
        raise change_error(
            st.table,
            f"cannot change the type of bucket-key column {change.name!r}: rows would hash to other buckets",
        )
    reason = widening_error(f.type, change.type)
    if reason is not None:
        raise change_error(st.table, f"cannot change the type of column {change.name!r}: {reason}")
    target = change.type.copy(nullable=f.type.nullable) if change.keep_nullability else change.type
    if f.type.nullable and not target.nullable:
        raise change_error(
            st.table, f"cannot make column {change.name!r} NOT NULL: rows already written may hold nulls"
        )
    if not f.type.nullable and target.nullable:
        st.protect_primary_key(change.name, "make nullable")
    if change.type.root in ("ROW", "ARRAY", "MAP", "MULTISET"):
        target = f.type.copy(nullable=target.nullable)  # only reached when the types are equal
    _check_default(st, f.name, target, f.default_value)
    st.fields[i] = replace(f, type=target)


def _update_nullability(st: SchemaState, change: UpdateColumnNullability) -> None:
    i = st.index(change.name)
    f = st.fields[i]
    if f.type.nullable == change.nullable:
        return
    if change.nullable:
        st.protect_primary_key(change.name, "change the nullability of")
    else:
        raise change_error(
            st.table,
            f"cannot make column {change.name!r} NOT NULL: rows already written may hold "
            "nulls (Paimon's alter-column-null-to-not-null.disabled)",
        )
    st.fields[i] = replace(f, type=f.type.copy(nullable=change.nullable))


def _update_column_comment(st: SchemaState, change: UpdateColumnComment) -> None:
    i = st.index(change.name)
    f = st.fields[i]
    st.fields[i] = replace(f, description=change.comment)


def _check_default(st: SchemaState, name: str, t: DataType, value: str | None) -> None:
    """Paimon's validateDefaultValue: the text must cast to the column's type."""
    if value is None:
        return
    try:
        default_scalar(t, value)
    except ValueError as e:
        raise change_error(st.table, f"column {name!r}: {e}") from None


def _update_default_value(st: SchemaState, change: UpdateColumnDefaultValue) -> None:
    i = st.index(change.name)
    f = st.fields[i]
    _check_default(st, f.name, f.type, change.default_value)
    st.fields[i] = replace(f, default_value=change.default_value)


def _update_position(st: SchemaState, change: UpdateColumnPosition) -> None:
    """Paimon's SchemaManager.applyMove."""
    i = st.index(change.name)
    move = change.move
    if move.kind in ("first", "last"):
        target = 0 if move.kind == "first" else len(st.fields) - 1
        if target == i:
            raise change_error(
                st.table, f"cannot move column {change.name!r} {move.kind}: it is {move.kind} already"
            )
    else:
        assert move.reference is not None
        ref = st.index(move.reference)
        if ref == i:
            raise change_error(st.table, f"cannot move column {change.name!r} relative to itself")
        target = ref
        if move.kind == "after" and i > ref:
            target += 1
        if move.kind == "before" and i < ref:
            target -= 1
        target = min(target, len(st.fields) - 1)
    f = st.fields.pop(i)
    st.fields.insert(target, f)


CHANGE_APPLIERS: dict[type, Callable[[SchemaState, object], None]] = {
    SetOption: set_option,  # type: ignore[dict-item]
    RemoveOption: remove_option,  # type: ignore[dict-item]
    AddColumn: _add_column,  # type: ignore[dict-item]
    RenameColumn: _rename_column,  # type: ignore[dict-item]
    DropColumn: _drop_column,  # type: ignore[dict-item]
    UpdateColumnType: _update_type,  # type: ignore[dict-item]
    UpdateColumnNullability: _update_nullability,  # type: ignore[dict-item]
    UpdateColumnComment: _update_column_comment,  # type: ignore[dict-item]
    UpdateColumnDefaultValue: _update_default_value,  # type: ignore[dict-item]
    UpdateColumnPosition: _update_position,  # type: ignore[dict-item]
}
