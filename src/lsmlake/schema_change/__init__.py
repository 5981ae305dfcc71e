"""Schema evolution: ALTER TABLE for Paimon tables, byte-compatible with Java Paimon's SchemaManager.

Build changes with the constructors and apply them in one new schema version::

    from lsmlake import schema_change as sc
    t = t.alter(sc.add_column("note", "STRING", after="id"), sc.rename_column("v", "value"),
                sc.update_column_type("n", "BIGINT"), sc.set_option("snapshot.num-retained.max", "20"))

Every ALTER writes ``schema/schema-<N+1>`` create-only (new columns get ids ``highestFieldId+1...``,
renamed columns keep their ids). Files written before keep their ``_SCHEMA_ID``; reads map their
columns to the latest schema by field id (added columns read as null, dropped ones are ignored,
widened ones are cast). Refused changes raise and write nothing:

* partition columns cannot be dropped, renamed or retyped; primary-key columns cannot be dropped or
  retyped or made nullable (renaming one is allowed, as in Paimon);
* type changes must be lossless widenings (see :mod:`lsmlake.schema_change.casts`), nullable -> NOT
  NULL is refused, added columns must be nullable;
* options are validated as at CREATE TABLE; once the table has snapshots Paimon's immutable options
  (``merge-engine``, ``bucket-key``, ``rowkind.field``, ...) and ``bucket``, ``sequence.field``,
  ``deletion-vectors.enabled``, ``partition.default-name`` cannot change; ``primary-key``,
  ``partition``, ``type`` and ``path`` never can;
* columns named by options (``sequence.field``, ``bucket-key``, ``fields.<col>.*``) cannot be dropped;
  renames rewrite those options.
"""

from __future__ import annotations

from lsmlake.errors import SchemaChangeError
from lsmlake.schema_change.apply import apply_changes, validate_schema
from lsmlake.schema_change.casts import widening_error
from lsmlake.schema_change.changes import (
    AddColumn,
    DropColumn,
    Move,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnDefaultValue,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
    add_column,
    drop_column,
    remove_option,
    rename_column,
    set_option,
    update_column_comment,
    update_column_default_value,
    update_column_nullability,
    update_column_position,
    update_column_type,
    update_comment,
)
from lsmlake.schema_change.manager import commit_changes, latest_schema, schema_ids

__all__ = [
    "AddColumn",
    "DropColumn",
    "Move",
    "RemoveOption",
    "RenameColumn",
    "SchemaChange",
    "SchemaChangeError",
    "SetOption",
    "UpdateColumnComment",
    "UpdateColumnDefaultValue",
    "UpdateColumnNullability",
    "UpdateColumnPosition",
    "UpdateColumnType",
    "UpdateComment",
    "add_column",
    "apply_changes",
    "commit_changes",
    "drop_column",
    "latest_schema",
    "remove_option",
    "rename_column",
    "schema_ids",
    "set_option",
    "update_column_comment",
    "update_column_default_value",
    "update_column_nullability",
    "update_column_position",
    "update_column_type",
    "update_comment",
    "validate_schema",
    "widening_error",
]
