"""System tables over the data: ``$audit_log`` and ``$binlog`` (rows with their row kind), ``$ro`` (top level)."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from lsmlake.compact.bucket_compactor import num_levels
from lsmlake.read.options import ReadOptions
from lsmlake.read.split_read import concat, read_split_table
from lsmlake.read.table_read import scan_table
from lsmlake.scan.split import Split
from lsmlake.stream.batch_incremental import is_incremental, read_incremental
from lsmlake.stream.binlog import to_binlog
from lsmlake.system.common import SystemContext


def audit_log_table(ctx: SystemContext) -> pa.Table:
    """Every row the batch read sees, a ``rowkind`` column first; merged deletes still in level 0 or in
    overlapping runs appear as ``-D`` instead of being dropped (Paimon's audit log batch read).
    With `incremental-between` options: the changes between the two snapshots, every row kind kept."""
    if is_incremental(ctx.table):
        return read_incremental(ctx.table, keep_row_kind=True)
    scan = scan_table(ctx.table, ReadOptions(snapshot_id=ctx.requested_snapshot_id))
    context = replace(scan.context, keep_row_kind=True)
    return concat([read_split_table(context, split) for split in scan.splits()], context.result_schema)


def binlog_table(ctx: SystemContext) -> pa.Table:
    """`$binlog`: the audit log with every data column as an array (``[value]`` in batch reads)."""
    return to_binlog(audit_log_table(ctx), pack_updates=False)


def ro_table(ctx: SystemContext) -> pa.Table:
    """Read-optimized: primary-key tables show only their top-level files, read without merging
    (deletion vectors applied); append tables read as usual."""
    table = ctx.table
    scan = scan_table(table, ReadOptions(snapshot_id=ctx.requested_snapshot_id))
    if not table.schema.primary_keys:
        return scan.to_arrow()
    top = num_levels(table.options) - 1
    parts = []
    for split in scan.splits():
        keep = [i for i, f in enumerate(split.files) if f.level == top]
        if not keep:
            continue
        raw = Split(
            split.partition,
            split.partition_values,
            split.bucket,
            split.bucket_path,
            tuple(split.files[i] for i in keep),
            tuple(split.deletion_files[i] for i in keep),
            raw_convertible=True,
            total_buckets=split.total_buckets,
            snapshot_id=split.snapshot_id,
            rule="read-optimized: top level only",
        )
        parts.append(read_split_table(scan.context, raw))
    return concat(parts, scan.context.output_schema)
