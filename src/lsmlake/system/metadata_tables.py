"""System tables over table metadata files: `$snapshots`, `$schemas`, `$options`, `$tags`, `$consumers`,
`$branches`."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from lsmlake.core.schema import schema_to_json
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.maintenance.branches import list_branches
from lsmlake.metadata.consumers import read_consumers
from lsmlake.metadata.tags import read_tags
from lsmlake.system.common import SystemContext, rows_to_table
from lsmlake.system.render import duration_string, utc_to_local_millis

_TS = pa.timestamp("ms")

SNAPSHOTS_SCHEMA = pa.schema(
    [
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("commit_user", pa.string(), nullable=False),
        pa.field("commit_identifier", pa.int64(), nullable=False),
        pa.field("commit_kind", pa.string(), nullable=False),
        pa.field("commit_time", _TS, nullable=False),
        pa.field("base_manifest_list", pa.string(), nullable=False),
        pa.field("delta_manifest_list", pa.string(), nullable=False),
        pa.field("changelog_manifest_list", pa.string()),
        pa.field("total_record_count", pa.int64()),
        pa.field("delta_record_count", pa.int64()),
        pa.field("changelog_record_count", pa.int64()),
        pa.field("watermark", pa.int64()),
        pa.field("next_row_id", pa.int64()),
        pa.field("operation", pa.string()),
        pa.field("writer_version", pa.string()),
    ]
)

SCHEMAS_SCHEMA = pa.schema(
    [
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("fields", pa.string(), nullable=False),
        pa.field("partition_keys", pa.string(), nullable=False),
        pa.field("primary_keys", pa.string(), nullable=False),
        pa.field("options", pa.string(), nullable=False),
        pa.field("comment", pa.string()),
        pa.field("update_time", _TS, nullable=False),
    ]
)

OPTIONS_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("value", pa.string(), nullable=False),
    ]
)

TAGS_SCHEMA = pa.schema(
    [
        pa.field("tag_name", pa.string(), nullable=False),
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("commit_time", _TS, nullable=False),
        pa.field("record_count", pa.int64()),
        pa.field("create_time", _TS),
        pa.field("time_retained", pa.string()),
    ]
)

CONSUMERS_SCHEMA = pa.schema(
    [
        pa.field("consumer_id", pa.string(), nullable=False),
        pa.field("next_snapshot_id", pa.int64(), nullable=False),
    ]
)


BRANCHES_SCHEMA = pa.schema(
    [
        pa.field("branch_name", pa.string(), nullable=False),
        pa.field("create_time", _TS, nullable=False),
    ]
)


def _flat_json(value: Any) -> str:
    """Jackson's compact JSON (``JsonSerdeUtil.toFlatJson``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def snapshots_table(ctx: SystemContext) -> pa.Table:
    """Every snapshot still present, ascending; commit time in the local time zone, as Java shows it."""
    manager = ctx.table.snapshot_manager
    rows = []
    for sid in manager.snapshot_ids():
        try:
            s = manager.snapshot(sid)
        except NoSuchSnapshotError:
            continue
        rows.append(
            (
                s.id,
                s.schema_id,
                s.commit_user,
                s.commit_identifier,
                s.commit_kind,
                utc_to_local_millis(s.time_millis),
                s.base_manifest_list,
                s.delta_manifest_list,
                s.changelog_manifest_list,
                s.total_record_count,
                s.delta_record_count,
                s.changelog_record_count,
                s.watermark,
                s.next_row_id,
                s.operation,
                s.writer_version,
            )
        )
    return rows_to_table(SNAPSHOTS_SCHEMA, rows)


def schemas_table(ctx: SystemContext) -> pa.Table:
    rows = []
    for sid in ctx.schema_ids():
        s = ctx.schema(sid)
        obj = schema_to_json(s)
        rows.append(
            (
                s.id,
                _flat_json(obj["fields"]),
                _flat_json(list(s.partition_keys)),
                _flat_json(list(s.primary_keys)),
                _flat_json(dict(s.options)),
                s.comment,
                utc_to_local_millis(s.time_millis),
            )
        )
    return rows_to_table(SCHEMAS_SCHEMA, rows)


def options_table(ctx: SystemContext) -> pa.Table:
    """The options stored in the latest schema (explicitly set ones only, as in Java)."""
    return rows_to_table(OPTIONS_SCHEMA, list(ctx.latest_schema.options.items()))


def tags_table(ctx: SystemContext) -> pa.Table:
    rows = []
    for tag in read_tags(ctx.io, ctx.root):
        s = tag.snapshot
        retained = None if tag.time_retained_ms is None else duration_string(tag.time_retained_ms)
        rows.append(
            (
                tag.name,
                s.id,
                s.schema_id,
                utc_to_local_millis(s.time_millis),
                s.total_record_count,
                tag.create_time,
                retained,
            )
        )
    return rows_to_table(TAGS_SCHEMA, rows)


def consumers_table(ctx: SystemContext) -> pa.Table:
    return rows_to_table(CONSUMERS_SCHEMA, list(read_consumers(ctx.io, ctx.root).items()))


def branches_table(ctx: SystemContext) -> pa.Table:
    """The table's branches (not ``main``) and when their directories were created, as Java lists them."""
    return rows_to_table(BRANCHES_SCHEMA, [(b.name, b.create_time) for b in list_branches(ctx.io, ctx.root)])
