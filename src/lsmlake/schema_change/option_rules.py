"""Which option changes an ALTER (or a dynamic option at read/write time) may make: Paimon's rules."""

from __future__ import annotations

from collections.abc import Mapping

from lsmlake.core.options import CoreOptions, validate_dynamic_options
from lsmlake.core.schema import TableSchema
from lsmlake.errors import InvalidOptionError, UnsupportedError
from lsmlake.schema_change.changes import RemoveOption, SetOption
from lsmlake.schema_change.state import SchemaState

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
# they merge.
LSMLAKE_FIXED_OPTIONS = {
    "sequence.field": "rows already written were merged by the old sequence field",
    "partition.default-name": "existing null partitions live in directories named after it",
    "partition.legacy-name": "existing partition directories are named by it",
}
_BOOL_ONE_WAY = ("ignore-delete", "ignore-update-before")


def normalized_keys(value: str) -> list[str]:
    return [s.strip() for s in value.split(",") if s.strip()]


def _bool(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() == "true"


def _check_bucket_change(table: str, old: str | None, new: str | None) -> None:
    """Paimon lets a table with data change `bucket` (never from or to -1): files keep the count they
    were written with, and writers refuse a partition whose files have another count until it is
    rescaled (CALL sys.rescale). lsmlake allows the fixed-to-fixed change only: moving to or from
    postponed buckets (-2) would leave rows where neither layout looks for them."""
    try:
        before, after = int(old or "-1"), int(new or "-1")
    except ValueError:
        return  # not a number: the option's own validation names it
    if before == after:
        return
    if before <= 0 or after <= 0:
        raise UnsupportedError(
            f"table {table}: option 'bucket' can change from one fixed count to another once the table has "
            f"data, not from {before} to {after}"
        )


def _check_option_change(
    st: SchemaState, key: str, old: str | None, new: str | None, *, before: Mapping[str, str] | None = None
) -> None:
    """Paimon's checkAlterTableOption / checkResetTableOption, plus lsmlake's fixed options; ``before`` are
    the options in force before the change (default: the schema's)."""
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
    if key == "bucket":
        _check_bucket_change(table, old, new)
    if key in LSMLAKE_FIXED_OPTIONS:
        raise UnsupportedError(
            f"table {table}: option {key!r} cannot change once the table has data: "
            f"{LSMLAKE_FIXED_OPTIONS[key]}"
        )
    dv, modifiable = CoreOptions.DELETION_VECTORS_ENABLED, CoreOptions.DELETION_VECTORS_MODIFIABLE
    if (
        key == dv.key
        and _bool(old, dv.default) != _bool(new, dv.default)
        and not _bool((st.old_options if before is None else before).get(modifiable.key), modifiable.default)
    ):
        raise UnsupportedError(
            f"table {table}: cannot change deletion vectors mode from {_bool(old, dv.default)} to "
            f"{_bool(new, dv.default)} once the table has data (without a full compaction rows could read twice "
            f"or deleted rows come back); set {modifiable.key}=true first to allow it"
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
    st = SchemaState(schema, table, lambda: True)
    declared = {"primary-key": st.primary_keys, "partition": st.partition_keys}
    for key, new in given.items():
        old = st.old_options.get(key)
        if old == new or (key in declared and normalized_keys(new) == declared[key]):
            continue
        try:
            _check_option_change(st, key, old, new, before={**st.old_options, **current})
        except UnsupportedError as e:
            raise UnsupportedError(f"dynamic option {key}={new!r} refused: {e}") from None


def set_option(st: SchemaState, change: SetOption) -> None:
    key, value = change.key, change.value
    if not isinstance(value, str):
        raise InvalidOptionError(f"table {st.table}: option {key!r}: values must be strings")
    old = st.old_options.get(key)
    if old == value:
        st.options[key] = value
        return
    if key == "primary-key" and old is None and normalized_keys(value) == st.primary_keys:
        return
    if key == "partition" and old is None and normalized_keys(value) == st.partition_keys:
        return
    _check_option_change(st, key, old, value)
    st.options[key] = value


def remove_option(st: SchemaState, change: RemoveOption) -> None:
    key = change.key
    if key not in st.options and key not in st.old_options:
        return
    _check_option_change(st, key, st.old_options.get(key), None)
    st.options.pop(key, None)
