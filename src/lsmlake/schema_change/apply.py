"""Apply schema changes to a TableSchema: Paimon's rules (SchemaManager.generateTableSchema) in Python.

Pure: takes the latest schema and the changes, returns the next schema (id + 1) or raises. Nothing
here touches storage except the lazy "does the table have snapshots" question some option changes ask.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from lsmlake.core.format_types import check_format_types
from lsmlake.core.options import CoreOptions, is_known_option, validate_create_options
from lsmlake.core.schema import CURRENT_VERSION, TableSchema
from lsmlake.errors import InvalidOptionError, LsmlakeError
from lsmlake.mergetree.engines.config import DEFAULT_AGG, FIELDS_PREFIX
from lsmlake.mergetree.merge_function import validate_merge_engine
from lsmlake.schema_change.changes import CHANGE_TYPES, SchemaChange, UpdateComment
from lsmlake.schema_change.columns import CHANGE_APPLIERS
from lsmlake.schema_change.option_rules import check_dynamic_options
from lsmlake.schema_change.state import SchemaState, change_error, fields_key

__all__ = [
    "apply_changes",
    "check_changes",
    "check_dynamic_options",
    "check_record_level_time_field",
    "validate_schema",
]


def check_record_level_time_field(schema: TableSchema, options: CoreOptions, *, table: str) -> None:
    """Paimon's rules for record-level expiry: the time field exists and is INT, BIGINT or a TIMESTAMP,
    and an expire time needs one."""
    name = options.get(CoreOptions.RECORD_LEVEL_TIME_FIELD)
    if name is None:
        if options.get(CoreOptions.RECORD_LEVEL_EXPIRE_TIME) is not None:
            raise InvalidOptionError(
                f"table {table}: record-level.expire-time needs record-level.time-field (the column that ages rows)"
            )
        return
    if name not in schema.field_names:
        raise InvalidOptionError(f"table {table}: can not find time field {name!r} for record level expire")
    t = schema.field(name).type
    if t.root not in ("INT", "BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ"):
        raise InvalidOptionError(
            f"table {table}: the record level time field type should be one of INT, BIGINT, or TIMESTAMP, "
            f"but {name!r} is {t}"
        )


def validate_schema(s: TableSchema, table: str, *, previous: Mapping[str, str] | None = None) -> None:
    """What CREATE TABLE checks, run again on the schema an ALTER produces (Paimon's validateTableSchema).

    Options lsmlake does not know are refused only when they are new or changed compared with
    ``previous`` (a table written by Java may carry options lsmlake ignores).
    """
    names = s.field_names
    if len(set(names)) != len(names):
        raise change_error(table, f"duplicate column names in {names}")
    pk_table = bool(s.primary_keys)
    before = previous or {}
    checked = {k: v for k, v in s.options.items() if is_known_option(k) or before.get(k) != v}
    try:
        validate_create_options(checked, primary_key_table=pk_table)  # names, values, combinations
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {table}: {e}") from None
    opts = CoreOptions.of(s.options, primary_key_table=pk_table)
    check_format_types(s.fields, opts, table=table)
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
            fields, _ = fields_key(key)
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
            raise change_error(table, f"primary-key column {k!r} must be NOT NULL")
    check_record_level_time_field(s, opts, table=table)
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
    st = SchemaState(old, table_name, has_snapshots)
    for change in check_changes(changes):
        if isinstance(change, UpdateComment):
            st.comment = change.comment
            continue
        CHANGE_APPLIERS[type(change)](st, change)
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
