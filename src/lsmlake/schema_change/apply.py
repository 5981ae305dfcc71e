"""Apply schema changes to a TableSchema: Paimon's rules (SchemaManager.generateTableSchema) in Python.

Pure: takes the latest schema and the changes, returns the next schema (id + 1) or raises. Nothing
here touches storage except the lazy "does the table have snapshots" question some option changes ask.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from lsmlake.core.options import (
    CoreOptions,
    is_known_option,
    validate_create_options,
    validate_dynamic_options,
)
from lsmlake.core.schema import CURRENT_VERSION, TableSchema
from lsmlake.core.types import DataField, DataType
from lsmlake.errors import InvalidOptionError, LsmlakeError, SchemaChangeError, UnsupportedError
from lsmlake.mergetree.merge_function import validate_merge_engine
from lsmlake.schema_change.casts import widening_error
from lsmlake.schema_change.changes import (
    CHANGE_TYPES,
    AddColumn,
    DropColumn,
    Move,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
)

FIELDS_PREFIX = "fields."
DEFAULT_AGG = "default-aggregate-function"
KEY_FIELD_PREFIX = "_KEY_"
SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})

# Paimon's @Immutable CoreOptions: they cannot change once the table has snapshots.
IMMUTABLE_OPTIONS = frozenset(
    {
        "type",
        "bucket-key",
        "bucket-function.type",
        "data-file.path-directory",
        "merge-engine",
        "sequence.snapshot-ordering",
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "rowkind.field",
        "primary-key",
        "primary-key.nullable",
        "partition",
        "dynamic-bucket.initial-buckets",
        "force-lookup",
        "row-tracking.enabled",
        "data-evolution.enabled",
        "index-file-in-data-file-dir",
        "blob-field",
        "blob-descriptor-field",
        "blob-view-field",
        "pk-clustering-override",
    }
)
# Options lsmlake also keeps fixed once data exists: they decide where existing rows live or how
# they merge, and lsmlake has no rescale / rewrite job to bring old files in line.
LSMLAKE_FIXED_OPTIONS = {
    "bucket": "the bucket count decides which bucket every key lives in; lsmlake cannot rescale a table",
    "sequence.field": "rows already written were merged by the old sequence field",
    "partition.default-name": "existing null partitions live in directories named after it",
    "partition.legacy-name": "existing partition directories are named by it",
}
_BOOL_ONE_WAY = ("ignore-delete", "ignore-update-before")
_RENAMED_FIELD_LIST_OPTIONS = ("bucket-key", "sequence.field", "rowkind.field")
_LIST_VALUE_SUFFIXES = (".sequence-group", ".nested-key")


def _err(table: str, message: str) -> SchemaChangeError:
    return SchemaChangeError(f"table {table}: {message}")


class _State:
    """The schema being built, change by change."""

    def __init__(self, old: TableSchema, table: str, has_snapshots: Callable[[], bool]) -> None:
        self.old = old
        self.table = table
        self._has_snapshots = has_snapshots
        self._snapshots: bool | None = None
        self.fields: list[DataField] = list(old.fields)
        self.highest = old.highest_field_id
        # Java writes the legacy defaults of old schema versions (bucket=1, orc) out explicitly
        self.old_options: dict[str, str] = dict(old.effective_options)
        self.options: dict[str, str] = dict(self.old_options)
        self.comment = old.comment
        self.primary_keys: list[str] = list(old.primary_keys)
        self.partition_keys: list[str] = list(old.partition_keys)

    @property
    def has_snapshots(self) -> bool:
        if self._snapshots is None:
            self._snapshots = bool(self._has_snapshots())
        return self._snapshots

    # -- lookups
    def index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise _err(self.table, f"column {name!r} does not exist (columns: {[f.name for f in self.fields]})")

    def field(self, name: str) -> DataField:
        return self.fields[self.index(name)]

    def exists(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def require_absent(self, name: str) -> None:
        if self.exists(name):
            raise _err(self.table, f"column {name!r} already exists")

    def check_new_name(self, name: str) -> None:
        if name in SYSTEM_FIELD_NAMES or name.startswith(KEY_FIELD_PREFIX):
            raise _err(
                self.table,
                f"column name {name!r} is reserved for Paimon system fields "
                f"({sorted(SYSTEM_FIELD_NAMES)} and the '{KEY_FIELD_PREFIX}' prefix)",
            )
        self.require_absent(name)

    def protect_partition(self, name: str, what: str) -> None:
        if name in self.partition_keys:
            raise _err(self.table, f"cannot {what} partition column {name!r}")

    def protect_primary_key(self, name: str, what: str) -> None:
        if name in self.primary_keys:
            raise _err(self.table, f"cannot {what} primary-key column {name!r}")

    def option_users(self, name: str) -> list[str]:
        """The options that name column ``name``."""
        users = []
        for key, value in self.options.items():
            if key in _RENAMED_FIELD_LIST_OPTIONS and name in _split_list(value):
                users.append(key)
            elif key.startswith(FIELDS_PREFIX):
                fields, _ = _fields_key(key)
                if name in fields or (key.endswith(_LIST_VALUE_SUFFIXES) and name in _split_list(value)):
                    users.append(key)
        return users


def _split_list(value: str) -> list[str]:
    return [s.strip() for s in value.split(",") if s.strip()]


def _fields_key(key: str) -> tuple[list[str], str]:
    """``fields.a,b.sequence-group`` -> (["a", "b"], "sequence-group")."""
    body = key[len(FIELDS_PREFIX) :]
    names, _, suffix = body.rpartition(".")
    if not names:
        return [], body
    return names.split(","), suffix


# --------------------------------------------------------------------------- options


def _normalized_keys(value: str) -> list[str]:
    return [s.strip() for s in value.split(",") if s.strip()]


def _bool(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() == "true"


def _check_option_change(st: _State, key: str, old: str | None, new: str | None) -> None:
    """Paimon's checkAlterTableOption / checkResetTableOption, plus lsmlake's fixed options."""
    table = st.table
    if key == "type":
        raise UnsupportedError(f"table {table}: changing option 'type' is not supported")
    if key == "path":
        raise UnsupportedError(f"table {table}: changing option 'path' is not supported")
    if key in ("primary-key", "partition"):
        what = "primary key" if key == "primary-key" else "partition keys"
        raise UnsupportedError(f"table {table}: the {what} cannot change (option {key!r})")
    if not st.has_snapshots:
        return  # an empty table may change anything the final validation accepts
    if key in IMMUTABLE_OPTIONS:
        raise UnsupportedError(f"table {table}: option {key!r} cannot change once the table has data")
    if key in LSMLAKE_FIXED_OPTIONS:
        raise UnsupportedError(
            f"table {table}: option {key!r} cannot change once the table has data: "
            f"{LSMLAKE_FIXED_OPTIONS[key]}"
        )
    if key == "deletion-vectors.enabled" and _bool(old, False) != _bool(new, False):
        raise UnsupportedError(
            f"table {table}: cannot change deletion vectors mode from {_bool(old, False)} to "
            f"{_bool(new, False)} once the table has data (it could make rows appear twice)"
        )
    if key in _BOOL_ONE_WAY and _bool(old, False) and not _bool(new, False):
        raise UnsupportedError(f"table {table}: cannot change {key} from true to false")


def check_dynamic_options(
    schema: TableSchema, table: str, current: Mapping[str, str], given: Mapping[str, str]
) -> None:
    """Options ``given`` at read or write time (on top of ``current`` ones), refused as Paimon's
    ``copy(dynamicOptions)`` refuses them: unknown names, malformed values, combinations CREATE TABLE
    would reject, and changes to what ALTER TABLE could not change on a table holding data."""
    try:
        validate_dynamic_options(
            {**schema.effective_options, **current}, given, primary_key_table=bool(schema.primary_keys)
        )
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {table}: {e}") from None
    st = _State(schema, table, lambda: True)
    declared = {"primary-key": st.primary_keys, "partition": st.partition_keys}
    for key, new in given.items():
        old = st.old_options.get(key)
        if old == new or (key in declared and _normalized_keys(new) == declared[key]):
            continue
        try:
            _check_option_change(st, key, old, new)
        except UnsupportedError as e:
            raise UnsupportedError(f"dynamic option {key}={new!r} refused: {e}") from None


def _set_option(st: _State, change: SetOption) -> None:
    key, value = change.key, change.value
    if not isinstance(value, str):
        raise InvalidOptionError(f"table {st.table}: option {key!r}: values must be strings")
    old = st.old_options.get(key)
    if old == value:
        st.options[key] = value
        return
    if key == "primary-key" and old is None and _normalized_keys(value) == st.primary_keys:
        return
    if key == "partition" and old is None and _normalized_keys(value) == st.partition_keys:
        return
    _check_option_change(st, key, old, value)
    st.options[key] = value


def _remove_option(st: _State, change: RemoveOption) -> None:
    key = change.key
    if key not in st.options and key not in st.old_options:
        return
    _check_option_change(st, key, st.old_options.get(key), None)
    st.options.pop(key, None)


# --------------------------------------------------------------------------- columns


def _assign_nested_ids(t: DataType, st: _State) -> DataType:
    """Fresh ids (highestFieldId + 1, ...) for the ROW fields inside an added column's type."""
    if t.root == "ROW":
        fields = []
        for f in t.fields:
            st.highest += 1
            fid = st.highest
            fields.append(DataField(fid, f.name, _assign_nested_ids(f.type, st), f.description))
        return replace(t, fields=tuple(fields))
    if t.root in ("ARRAY", "MULTISET") and t.element is not None:
        return replace(t, element=_assign_nested_ids(t.element, st))
    if t.root == "MAP" and t.key is not None and t.value is not None:
        return replace(t, key=_assign_nested_ids(t.key, st), value=_assign_nested_ids(t.value, st))
    return t


def _insert_position(st: _State, move: Move | None) -> int:
    if move is None or move.kind == "last":
        return len(st.fields)
    if move.kind == "first":
        return 0
    assert move.reference is not None
    ref = st.index(move.reference)
    return ref + 1 if move.kind == "after" else ref


def _add_column(st: _State, change: AddColumn) -> None:
    if not change.type.nullable:
        raise _err(
            st.table,
            f"column {change.name!r} cannot be added as NOT NULL (rows already written "
            "have no value for it); add it nullable",
        )
    st.check_new_name(change.name)
    position = _insert_position(st, change.move)
    st.highest += 1
    fid = st.highest
    dtype = _assign_nested_ids(change.type, st)
    st.fields.insert(position, DataField(fid, change.name, dtype, change.comment))


def _rename_options(st: _State, old: str, new: str) -> None:
    out: dict[str, str] = {}
    for key, value in st.options.items():
        if key in _RENAMED_FIELD_LIST_OPTIONS:
            value = ",".join(new if c == old else c for c in _split_list(value))
        elif key.startswith(FIELDS_PREFIX):
            names, suffix = _fields_key(key)
            if names and old in names:
                key = FIELDS_PREFIX + ",".join(new if n == old else n for n in names) + "." + suffix
            if key.endswith(_LIST_VALUE_SUFFIXES):
                value = ",".join(new if c == old else c for c in _split_list(value))
        out[key] = value
    st.options = out


def _rename_column(st: _State, change: RenameColumn) -> None:
    i = st.index(change.name)
    if change.new_name == change.name:
        return
    st.protect_partition(change.name, "rename")
    st.check_new_name(change.new_name)
    f = st.fields[i]
    st.fields[i] = DataField(f.id, change.new_name, f.type, f.description)
    # a primary-key column may be renamed (Paimon allows it; the key keeps its field id)
    st.primary_keys = [change.new_name if k == change.name else k for k in st.primary_keys]
    _rename_options(st, change.name, change.new_name)


def _drop_column(st: _State, change: DropColumn) -> None:
    i = st.index(change.name)
    st.protect_partition(change.name, "drop")
    st.protect_primary_key(change.name, "drop")
    users = st.option_users(change.name)
    if users:
        raise _err(
            st.table,
            f"cannot drop column {change.name!r}: option(s) {users} refer to it "
            "(change or remove them first)",
        )
    if len(st.fields) == 1:
        raise _err(st.table, "cannot drop the last column of a table")
    del st.fields[i]


def _update_type(st: _State, change: UpdateColumnType) -> None:
    i = st.index(change.name)
    st.protect_partition(change.name, "change the type of")
    st.protect_primary_key(change.name, "change the type of")
    f = st.fields[i]
    bucketed = int(st.options.get(CoreOptions.BUCKET.key, "-1")) > 0
    if bucketed and change.name in _split_list(st.options.get(CoreOptions.BUCKET_KEY.key, "")):
        raise _err(
            st.table,
            f"cannot change the type of bucket-key column {change.name!r}: rows would hash to other buckets",
        )
    reason = widening_error(f.type, change.type)
    if reason is not None:
        raise _err(st.table, f"cannot change the type of column {change.name!r}: {reason}")
    target = change.type.copy(nullable=f.type.nullable) if change.keep_nullability else change.type
    if f.type.nullable and not target.nullable:
        raise _err(
            st.table, f"cannot make column {change.name!r} NOT NULL: rows already written may hold nulls"
        )
    if not f.type.nullable and target.nullable:
        st.protect_primary_key(change.name, "make nullable")
    if change.type.root in ("ROW", "ARRAY", "MAP", "MULTISET"):
        target = f.type.copy(nullable=target.nullable)  # only reached when the types are equal
    st.fields[i] = DataField(f.id, f.name, target, f.description)


def _update_nullability(st: _State, change: UpdateColumnNullability) -> None:
    i = st.index(change.name)
    f = st.fields[i]
    if f.type.nullable == change.nullable:
        return
    if change.nullable:
        st.protect_primary_key(change.name, "change the nullability of")
    else:
        raise _err(
            st.table,
            f"cannot make column {change.name!r} NOT NULL: rows already written may hold "
            "nulls (Paimon's alter-column-null-to-not-null.disabled)",
        )
    st.fields[i] = DataField(f.id, f.name, f.type.copy(nullable=change.nullable), f.description)


def _update_column_comment(st: _State, change: UpdateColumnComment) -> None:
    i = st.index(change.name)
    f = st.fields[i]
    st.fields[i] = DataField(f.id, f.name, f.type, change.comment)


def _update_position(st: _State, change: UpdateColumnPosition) -> None:
    """Paimon's SchemaManager.applyMove."""
    i = st.index(change.name)
    move = change.move
    if move.kind in ("first", "last"):
        target = 0 if move.kind == "first" else len(st.fields) - 1
        if target == i:
            raise _err(st.table, f"cannot move column {change.name!r} {move.kind}: it is {move.kind} already")
    else:
        assert move.reference is not None
        ref = st.index(move.reference)
        if ref == i:
            raise _err(st.table, f"cannot move column {change.name!r} relative to itself")
        target = ref
        if move.kind == "after" and i > ref:
            target += 1
        if move.kind == "before" and i < ref:
            target -= 1
        target = min(target, len(st.fields) - 1)
    f = st.fields.pop(i)
    st.fields.insert(target, f)


_APPLY: dict[type, Callable[[_State, object], None]] = {
    SetOption: _set_option,  # type: ignore[dict-item]
    RemoveOption: _remove_option,  # type: ignore[dict-item]
    AddColumn: _add_column,  # type: ignore[dict-item]
    RenameColumn: _rename_column,  # type: ignore[dict-item]
    DropColumn: _drop_column,  # type: ignore[dict-item]
    UpdateColumnType: _update_type,  # type: ignore[dict-item]
    UpdateColumnNullability: _update_nullability,  # type: ignore[dict-item]
    UpdateColumnComment: _update_column_comment,  # type: ignore[dict-item]
    UpdateColumnPosition: _update_position,  # type: ignore[dict-item]
}


# --------------------------------------------------------------------------- validation


def validate_schema(s: TableSchema, table: str, *, previous: Mapping[str, str] | None = None) -> None:
    """What CREATE TABLE checks, run again on the schema an ALTER produces (Paimon's validateTableSchema).

    Options lsmlake does not know are refused only when they are new or changed compared with
    ``previous`` (a table written by Java may carry options lsmlake ignores).
    """
    names = s.field_names
    if len(set(names)) != len(names):
        raise _err(table, f"duplicate column names in {names}")
    pk_table = bool(s.primary_keys)
    before = previous or {}
    checked = {k: v for k, v in s.options.items() if is_known_option(k) or before.get(k) != v}
    try:
        validate_create_options(checked, primary_key_table=pk_table)  # names, values, combinations
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {table}: {e}") from None
    opts = CoreOptions.of(s.options, primary_key_table=pk_table)
    bucket = opts.bucket
    if pk_table and bucket > 0 and not set(s.partition_keys) <= set(s.primary_keys):
        raise InvalidOptionError(
            f"table {table}: with a fixed bucket count the primary key must include every partition key"
        )
    bucket_key = s.options.get(CoreOptions.BUCKET_KEY.key)
    if bucket_key:
        for col in bucket_key.split(","):
            if col not in names or col in s.partition_keys or (pk_table and col not in s.primary_keys):
                raise InvalidOptionError(
                    f"table {table}: bucket-key column {col!r} must be a non-partition column"
                    + (" of the primary key" if pk_table else "")
                )
    for key in s.options:
        if key.startswith(FIELDS_PREFIX):
            fields, _ = _fields_key(key)
            for col in fields or [key[len(FIELDS_PREFIX) :]]:
                if col != DEFAULT_AGG and col not in names:
                    raise InvalidOptionError(
                        f"table {table}: option {key!r}: field {col!r} can not be found in table schema"
                    )
    for col in opts.sequence_fields:
        if col not in names:
            raise InvalidOptionError(
                f"table {table}: sequence field {col!r} can not be found in table schema"
            )
    rowkind = opts.rowkind_field
    if rowkind is not None and rowkind not in names:
        raise InvalidOptionError(f"table {table}: rowkind.field {rowkind!r} can not be found in table schema")
    nullable_pk = opts.get(CoreOptions.PRIMARY_KEY_NULLABLE)
    for k in s.primary_keys:
        if s.field(k).type.nullable and not nullable_pk:
            raise _err(table, f"primary-key column {k!r} must be NOT NULL")
    try:
        validate_merge_engine(s)
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {table}: {e}") from None


# --------------------------------------------------------------------------- entry point


def check_changes(changes: Sequence[object]) -> tuple[SchemaChange, ...]:
    out = []
    for c in changes:
        if not isinstance(c, CHANGE_TYPES):
            raise TypeError(
                "expected schema changes (lsmlake.schema_change.add_column(...), drop_column(...), ...), "
                f"got {c!r}"
            )
        out.append(c)
    return tuple(out)


def apply_changes(
    old: TableSchema,
    changes: Sequence[SchemaChange],
    *,
    table_name: str,
    has_snapshots: Callable[[], bool] = lambda: True,
    time_millis: int | None = None,
) -> TableSchema | None:
    """The schema after ``changes`` (id ``old.id + 1``), or None when they change nothing.

    Raises SchemaChangeError, InvalidOptionError or UnsupportedError when Paimon's rules (or lsmlake's
    stricter ones, see the package docstring) refuse a change; then nothing is to be written.
    """
    st = _State(old, table_name, has_snapshots)
    for change in check_changes(changes):
        if isinstance(change, UpdateComment):
            st.comment = change.comment
            continue
        _APPLY[type(change)](st, change)
    new = TableSchema(
        version=CURRENT_VERSION,
        id=old.id + 1,
        fields=tuple(st.fields),
        highest_field_id=st.highest,
        partition_keys=tuple(st.partition_keys),
        primary_keys=tuple(st.primary_keys),
        options=st.options,
        comment=st.comment,
        time_millis=int(time.time() * 1000) if time_millis is None else time_millis,
    )
    unchanged = (
        new.fields == old.fields
        and new.highest_field_id == old.highest_field_id
        and new.primary_keys == old.primary_keys
        and dict(new.options) == old.effective_options
        and new.comment == old.comment
    )
    if unchanged:
        return None
    try:
        validate_schema(new, table_name, previous=old.effective_options)
    except (LsmlakeError, ValueError, KeyError) as e:
        if isinstance(e, LsmlakeError):
            raise
        raise InvalidOptionError(f"table {table_name}: {e}") from e
    return new
