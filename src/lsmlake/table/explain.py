"""``table.explain()``: how a read would go, per bucket raw or merge and the rule that decided it."""

from __future__ import annotations

from lsmlake.bucket.routers import bucket_mode_text
from lsmlake.core.binary_row import deserialize_row
from lsmlake.expr import FilterInput
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.options import ReadOptions
from lsmlake.read.table_read import scan_table
from lsmlake.scan.level0 import skipped_level0
from lsmlake.scan.planner import POSTPONE_BUCKET
from lsmlake.write.postpone import postponed_row_count


def _partition_text(table: TableHandle, values: tuple[object, ...]) -> str:
    if not table.schema.partition_keys:
        return ""
    return ",".join(f"{k}={v}" for k, v in zip(table.schema.partition_keys, values, strict=True)) + " "


def _skipped_level0_lines(table: TableHandle, snapshot: Snapshot | None, skipping: bool) -> list[str]:
    """What batch reads skip: live level-0 files whose committed rows they do not see yet."""
    skipped = skipped_level0(table.io, table.paths, table.schema, snapshot, skipping=skipping)
    if not skipped:
        return []
    files, rows = sum(s.files for s in skipped.values()), sum(s.rows for s in skipped.values())
    ptypes = [table.schema.field(k).type for k in table.schema.partition_keys]
    lines = [
        f"  level-0 files skipped by batch reads: {files} file(s), {rows} row(s) in {len(skipped)} "
        "bucket(s); their rows are committed but not read until compacted (the next commit to the "
        "table, or table.compact(), does it; stream() reads them)"
    ]
    for (partition, bucket), s in skipped.items():
        values = tuple(deserialize_row(partition, ptypes)) if ptypes else ()
        lines.append(
            f"    {_partition_text(table, values)}bucket {bucket}: {s.files} file(s), {s.rows} row(s)"
        )
    return lines


def explain_table(
    table: TableHandle, *, filter: FilterInput = None, snapshot_id: int | None = None
) -> str:
    """How a read would go: per bucket raw or merge and the rule that decided it, files per level."""
    scan = scan_table(table, ReadOptions(filter=filter, snapshot_id=snapshot_id))
    table = scan.table  # a past snapshot is explained with its own schema
    plan, opts = scan.plan, table.options
    snapshot = plan.snapshot_id if plan.snapshot_id is not None else "(none: empty table)"
    lines = [
        f"table {table.name}: snapshot {snapshot}",
        f"  merge-engine={opts.merge_engine} deletion-vectors.enabled={opts.deletion_vectors_enabled}"
        + (" (level-0 files skipped by batch reads)" if plan.skip_level0 else ""),
        f"  {bucket_mode_text(table.schema, opts)}",
    ]
    if opts.bucket == POSTPONE_BUCKET and table.schema.primary_keys and plan.snapshot_id is not None:
        files, rows = postponed_row_count(table.io, table.paths, scan.snapshot)
        lines.append(f"  postponed: {rows} row(s) in {files} file(s) wait for table.compact()")
    lines.extend(_skipped_level0_lines(table, scan.snapshot, plan.skip_level0))
    if plan.filters.full is not None:
        lines.append(f"  filter: {plan.filters.full}")
        lines.append(f"    partition part: {plan.filters.partition}; key part: {plan.filters.key}")
    for b in plan.buckets:
        if b.raw_splits == b.splits:
            how = "raw"
        elif b.raw_splits == 0:
            how = "merge"
        else:
            how = f"mixed ({b.raw_splits} raw, {b.splits - b.raw_splits} merge)"
        levels = " ".join(f"L{level}:{n}" for level, n in b.files_per_level)
        lines.append(
            f"  {_partition_text(table, b.partition_values)}bucket {b.bucket}: {how}, "
            f"{b.splits} split(s), files {levels}"
        )
        lines.extend(f"      {rule}" for rule in b.rules)
    for name, kinds in plan.counts.by_file_index:
        lines.append(f"  {name}: pruned by file index ({kinds})")
    for name, kept, live in plan.counts.rows_by_file_index:
        lines.append(f"  {name}: file index selects {kept} of {live} live rows (only those are returned)")
    s = scan.plan_summary
    lines.append(
        f"  {s['splits']} splits ({s['raw_splits']} raw, {s['merge_splits']} merge) over {s['files']} files; "
        f"manifests {s['manifests'] - s['manifests_skipped']}/{s['manifests']} read; pruned entries: "
        f"{s['entries_pruned_by_partition']} by partition, {s['entries_pruned_by_bucket']} by bucket, "
        f"{s['entries_pruned_by_key_stats']} by key stats, "
        f"{s['entries_pruned_by_value_stats']} by value stats, "
        f"{s['entries_skipped_level0']} level-0 skipped, "
        f"{s['files_pruned_by_bucket_value_filter']} by bucket value filter"
    )
    return "\n".join(lines)
