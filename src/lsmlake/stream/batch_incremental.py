"""Batch incremental reads (`incremental-between`, `incremental-between-timestamp`): delta, changelog or diff."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.options import CoreOptions
from lsmlake.errors import InvalidOptionError, NoSuchSnapshotError, UnsupportedError
from lsmlake.expr import FilterInput, Predicate, parse_filter
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import read_tag, tag_names
from lsmlake.read.options import ReadOptions
from lsmlake.read.split_read import ROW_KIND_COLUMN, concat
from lsmlake.read.table_read import Scan
from lsmlake.scan.planner import split_filters
from lsmlake.scan.travel import parse_millis, snapshot_by_id, travel_option, without_scan_position
from lsmlake.stream.diff import diff_rows
from lsmlake.stream.incremental import (
    ChangeMode,
    change_context,
    change_schema,
    read_changes,
    snapshot_range_splits,
)

INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_TIMESTAMP = "incremental-between-timestamp"
SCAN_MODE_OPTION = "incremental-between-scan-mode"
SCAN_MODES = ("auto", "delta", "changelog", "diff")
RETRACT_KINDS = pa.array(["-U", "-D"])


@dataclass(frozen=True)
class IncrementalRange:
    """Changes after snapshot ``start`` (exclusive) up to ``end`` (inclusive), read in ``mode``."""

    start: int
    end: int
    mode: str
    """``delta``, ``changelog`` or ``diff``."""
    start_snapshot: Snapshot | None = None
    end_snapshot: Snapshot | None = None
    """The two tags' snapshots (kept in the tag files even after the snapshots expired), for ``diff``."""


def is_incremental(table: TableHandle) -> bool:
    """Whether the table's (dynamic) options ask for an incremental batch read."""
    options = table.options
    return (
        options.get(INCREMENTAL_BETWEEN) is not None or options.get(INCREMENTAL_BETWEEN_TIMESTAMP) is not None
    )


def _scan_mode(table: TableHandle) -> str:
    mode = (table.options.get(SCAN_MODE_OPTION) or "auto").lower()
    if mode not in SCAN_MODES:
        raise InvalidOptionError(
            f"option {SCAN_MODE_OPTION!r}: {mode!r} is not one of {', '.join(SCAN_MODES)}"
        )
    if mode == "auto":
        return "delta" if table.options.changelog_producer == "none" else "changelog"
    return mode


def _pair(table: TableHandle, key: str) -> tuple[str, str]:
    text = table.options.get(key) or ""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidOptionError(f"option {key!r} must be 'start,end' (start exclusive), got {text!r}")
    return parts[0], parts[1]


def _millis(text: str, key: str) -> int:
    return parse_millis(text, f"option {key!r}")


def _checked_ids(manager: SnapshotManager, start: int, end: int, table: TableHandle) -> tuple[int, int]:
    if end < start:
        raise InvalidOptionError(
            f"table {table.name}: ending snapshot {end} is before starting snapshot {start}"
        )
    earliest, latest = manager.earliest_id(), manager.latest_id()
    if earliest is None or latest is None:
        return start, start
    if start < earliest - 1 or end > latest:
        raise NoSuchSnapshotError(
            f"table {table.name}: snapshot range ({start}, {end}] is outside the available "
            f"snapshots [{earliest}, {latest}]"
        )
    return start, end


def _tag_range(table: TableHandle, first: str, second: str, mode: str) -> IncrementalRange:
    """Between two tags: a diff of their snapshots (read from the tag files, so expired snapshots
    work), or with `incremental-between-tag-to-snapshot` the snapshots between them."""
    start = read_tag(table.io, table.root, first).snapshot
    end = read_tag(table.io, table.root, second).snapshot
    if end.id < start.id:
        raise InvalidOptionError(
            f"table {table.name}: tag {second!r} (snapshot {end.id}) is older than tag {first!r} ({start.id})"
        )
    if table.options.get(CoreOptions.INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT):
        start_id, end_id = _checked_ids(table.snapshot_manager, start.id, end.id, table)
        return IncrementalRange(start_id, end_id, mode)
    return IncrementalRange(start.id, end.id, "diff", start, end)  # Paimon reads between two tags as a diff


def resolve_range(table: TableHandle) -> IncrementalRange:
    """The snapshot range and read mode the incremental options name (tags, ids or timestamps)."""
    travel_option(table)  # refuses a time-travel option set together with an incremental one
    manager = table.snapshot_manager
    mode = _scan_mode(table)
    if table.options.get(INCREMENTAL_BETWEEN) is not None:
        first, second = _pair(table, INCREMENTAL_BETWEEN)
        tags = set(tag_names(table.io, table.root))
        if first in tags and second in tags:
            return _tag_range(table, first, second, mode)
        try:
            start, end = int(first), int(second)
        except ValueError:
            raise InvalidOptionError(
                f"table {table.name}: {INCREMENTAL_BETWEEN}={first},{second} names neither two tags nor "
                "two snapshot ids"
            ) from None
        start, end = _checked_ids(manager, start, end, table)
        return IncrementalRange(start, end, mode)
    first, second = _pair(table, INCREMENTAL_BETWEEN_TIMESTAMP)
    t0, t1 = _millis(first, INCREMENTAL_BETWEEN_TIMESTAMP), _millis(second, INCREMENTAL_BETWEEN_TIMESTAMP)
    if t1 < t0:
        raise InvalidOptionError(
            f"table {table.name}: ending timestamp {t1} is before starting timestamp {t0}"
        )
    earliest, latest = manager.earliest(), manager.latest()
    if earliest is None or latest is None or t0 == t1 or t0 > latest.time_millis or t1 < earliest.time_millis:
        return IncrementalRange(0, 0, mode)
    at_start = manager.earlier_or_equal_time_millis(t0)
    start = earliest.id - 1 if at_start is None or earliest.time_millis > t0 else at_start.id
    at_end = manager.earlier_or_equal_time_millis(t1)
    return IncrementalRange(start, latest.id if at_end is None else at_end.id, mode)


def incremental_changes(
    table: TableHandle,
    *,
    filter: FilterInput = None,
    columns: Sequence[str] | None = None,
    bounds: IncrementalRange | None = None,
) -> Iterator[pa.Table]:
    """The changes between the two snapshots as tables with a leading ``rowkind`` column, in order."""
    r = resolve_range(table) if bounds is None else bounds
    predicate = parse_filter(filter, table.schema.fields)
    filters = split_filters(predicate, table.schema)
    ctx = change_context(table.io, table.root, table.schema, table.options, columns, filters)
    if r.end <= r.start:
        return
    if r.mode == "diff":
        yield _diff(table, r, predicate, ctx.columns)
        return
    manager = table.snapshot_manager
    snapshots = [manager.snapshot(i) for i in range(max(r.start + 1, 1), r.end + 1)]
    mode: ChangeMode = "delta" if r.mode == "delta" else "changelog"
    splits = snapshot_range_splits(
        table.io, table.root, table.schema, table.options, snapshots, mode, partition_filter=filters.partition
    )
    yield from read_changes(ctx, splits)


def _diff(table: TableHandle, r: IncrementalRange, predicate: Predicate | None, columns: Sequence[str]) -> pa.Table:
    """Merged contents at ``end`` compared with those at ``start`` (Paimon's IncrementalDiffSplitRead),
    both read with the table's current schema, as Paimon reads incremental ranges."""
    keys = table.primary_keys
    if not keys:
        raise UnsupportedError(f"table {table.name}: incremental diff needs a primary-key table")
    plain = without_scan_position(table)
    after = _state(plain, predicate, r.end, r.end_snapshot).to_arrow()
    empty = r.start < 1 and r.start_snapshot is None
    before = (
        after.schema.empty_table()
        if empty
        else _state(plain, predicate, r.start, r.start_snapshot).to_arrow()
    )
    changes = diff_rows(before, after, keys)
    return changes.select([ROW_KIND_COLUMN, *columns])


def _state(table: TableHandle, predicate: Predicate | None, snapshot_id: int, snapshot: Snapshot | None) -> Scan:
    """A scan of one end of a diff in the table's schema (``snapshot`` when a tag gave it)."""
    pinned = snapshot_by_id(table, snapshot_id) if snapshot is None else snapshot
    return Scan(table, ReadOptions(filter=predicate), snapshot=pinned)


def read_incremental(
    table: TableHandle,
    *,
    filter: FilterInput = None,
    columns: Sequence[str] | None = None,
    limit: int | None = None,
    keep_row_kind: bool = False,
) -> pa.Table:
    """The incremental batch result. Plain reads drop retractions (-U, -D) and the ``rowkind`` column,
    as batch SQL does; ``keep_row_kind`` keeps both (what ``$audit_log`` shows)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    predicate = parse_filter(filter, table.schema.fields)
    ctx = change_context(
        table.io, table.root, table.schema, table.options, columns, split_filters(predicate, table.schema)
    )
    schema = change_schema(ctx)
    parts = []
    remaining = limit
    for part in incremental_changes(table, filter=predicate, columns=columns):
        if not keep_row_kind:
            kinds = part.column(ROW_KIND_COLUMN)
            part = part.filter(pc.invert(pc.is_in(kinds, value_set=RETRACT_KINDS)))
        if remaining is not None:
            part = part.slice(0, remaining)
            remaining -= part.num_rows
        parts.append(part)
        if remaining == 0:
            break
    out = concat(parts, schema)
    return out if keep_row_kind else out.drop_columns([ROW_KIND_COLUMN])
