"""``Table.stream``: follow a table's snapshots as tables of changes with row kinds, resumable by consumer id."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace

import pyarrow as pa

from lsmlake.compact.bucket_compactor import num_levels
from lsmlake.core.options import CoreOptions
from lsmlake.errors import UnsupportedError
from lsmlake.expr import parse_filter
from lsmlake.maintenance.changelog_expire import long_lived_ids, read_changelog
from lsmlake.metadata.consumers import check_consumer_id, read_consumer, write_consumer
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.split_read import ROW_KIND_COLUMN, ReadContext, read_split
from lsmlake.read.table_read import without_scan_position
from lsmlake.scan.planner import POSTPONE_BUCKET, plan_scan, split_filters
from lsmlake.scan.split import Split
from lsmlake.schema_change.apply import check_dynamic_options
from lsmlake.stream.binlog import to_binlog
from lsmlake.stream.incremental import (
    OVERWRITE,
    change_context,
    change_splits,
    has_changes,
    postpone_splits,
    read_changes,
)
from lsmlake.stream.options import StreamOptions
from lsmlake.stream.stream_scan import (
    follow_up_mode,
    full_phase_levels,
    next_snapshot,
    restrict_levels,
    starting_point,
)

STREAM_MODES = (
    "latest-full",
    "latest",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
    "compacted-full",
)
"""The `scan.mode` values a stream accepts (``default`` and ``full`` resolve to one of them)."""


class TableStream:
    """An iterator over a table's changes: pa.Tables with a leading ``rowkind`` column (+I, -U, +U, -D).

    The first plan depends on `scan.mode` (a full snapshot read as +I rows, or nothing), then each new
    snapshot's changes follow in commit order: the new files of APPEND snapshots for changelog-producer
    ``none``, the changelog files of every snapshot otherwise, read as-is without merging. OVERWRITE
    snapshots are skipped. ``snapshot_id`` is the snapshot the last yielded table came from.

    With a consumer id the position is saved as `consumer/consumer-<id>` (``{"nextSnapshot": N}``):
    a restarted stream with the same id resumes there, and snapshot expiry keeps what it still needs.
    Progress is saved once the caller asks for more after the last table of a snapshot (``auto_commit``)
    or when ``commit()`` is called, so a crash re-delivers at most the snapshot being processed;
    a sink keyed by ``snapshot_id`` makes the delivery exactly-once.
    """

    def __init__(self, table: TableHandle, asked: StreamOptions | None = None) -> None:
        asked = asked or StreamOptions()
        self.table = table
        options = table.options
        if options.get(CoreOptions.STREAMING_READ_OVERWRITE):
            raise UnsupportedError(f"table {table.name}: streaming-read-overwrite is not supported yet")
        self.consumer_id = options.get(CoreOptions.CONSUMER_ID)
        if self.consumer_id is not None:
            check_consumer_id(self.consumer_id)
        poll_interval = asked.poll_interval
        if poll_interval is None:
            poll_interval = options.get(CoreOptions.CONTINUOUS_DISCOVERY_INTERVAL) / 1000
        self.poll_interval = poll_interval
        self.delay_ms = options.get(CoreOptions.STREAMING_READ_SNAPSHOT_DELAY) or 0
        """Snapshots younger than this (`streaming.read.snapshot.delay`) wait before they are read."""
        self.stop_when_caught_up = asked.stop_when_caught_up
        self.until_snapshot = asked.until_snapshot
        self.auto_commit = asked.auto_commit
        self.binlog = asked.binlog
        self.predicate = parse_filter(asked.filter, table.schema.fields)
        self.filters = split_filters(self.predicate, table.schema)
        self.columns = list(asked.columns) if asked.columns is not None else None
        self.context: ReadContext = change_context(
            table.io, table.root, table.schema, options, self.columns, self.filters
        )
        self.mode = follow_up_mode(options)
        self.snapshot_id: int | None = None
        self.next_snapshot_id: int | None = None
        """The next snapshot whose changes the stream reads (None before the first plan)."""
        self._saved: int | None = None
        self._latest_at_creation = table.snapshot_manager.latest_id()
        self._iterator: Iterator[pa.Table] | None = None
        self._finished = False

    @property
    def schema(self) -> pa.Schema:
        """``rowkind`` followed by the projected columns."""
        return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), False), *self.context.output_schema])

    def commit(self) -> None:
        """Save the consumer's position (the next snapshot to read); a no-op without a consumer id."""
        if self.consumer_id is None or self.next_snapshot_id is None or self._saved == self.next_snapshot_id:
            return
        write_consumer(self.table.io, self.table.root, self.consumer_id, self.next_snapshot_id)
        self._saved = self.next_snapshot_id

    def __iter__(self) -> Iterator[pa.Table]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    def __next__(self) -> pa.Table:
        return next(iter(self))

    # -- internals
    def _long_lived(self, snapshot_id: int) -> Snapshot | None:
        """The long-lived changelog of an expired snapshot (changelog streams only)."""
        if self.mode != "changelog":
            return None
        try:
            return read_changelog(self.table.io, self.table.root, snapshot_id)
        except FileNotFoundError:
            return None

    def _finish(self, table: pa.Table) -> pa.Table:
        return to_binlog(table) if self.binlog else table

    def _progress(self) -> None:
        if self.auto_commit:
            self.commit()

    def _done(self, snapshot_id: int) -> bool:
        return self.until_snapshot is not None and snapshot_id >= self.until_snapshot

    def _deliver(self, parts: Iterator[pa.Table], snapshot_id: int, next_id: int) -> Iterator[pa.Table]:
        """Yield one snapshot's tables. The position moves to ``next_id`` as its last table goes out (a
        ``commit()`` after handling it skips the snapshot on restart) and is saved, with auto-commit,
        once the caller asks for more."""
        pending = next(parts, None)
        while pending is not None:
            following = next(parts, None)
            self.snapshot_id = snapshot_id
            if following is None:
                self.next_snapshot_id = next_id
            yield self._finish(pending)
            pending = following
        self.next_snapshot_id = next_id
        self._progress()

    def _run(self) -> Iterator[pa.Table]:
        yield from self._first_plan()
        if self.next_snapshot_id is not None:
            yield from self._follow()

    def _first_plan(self) -> Iterator[pa.Table]:
        """Wait for a starting point, then read its full snapshot (when the mode has one)."""
        table = self.table
        consumer_next = None
        if self.consumer_id is not None:
            consumer_next = read_consumer(table.io, table.root, self.consumer_id)
            self._saved = consumer_next
        while True:
            kept = long_lived_ids(table.io, table.root) if self.mode == "changelog" else []
            point = starting_point(
                table.snapshot_manager,
                table.options,
                latest_at_creation=self._latest_at_creation,
                consumer_next=consumer_next,
                earliest_changelog=kept[0] if kept else None,
            )
            if point is not None:
                break
            if self.stop_when_caught_up:
                return
            time.sleep(self.poll_interval)
        if point.full_snapshot is None:
            self.next_snapshot_id = point.next_snapshot
            self._progress()
            return
        yield from self._deliver(self._full(point.full_snapshot), point.full_snapshot, point.next_snapshot)
        self._finished = self._done(point.full_snapshot)

    def _follow(self) -> Iterator[pa.Table]:
        """Each following snapshot's changes, polling for new snapshots until a stop condition."""
        table = self.table
        while self.next_snapshot_id is not None and not self._finished:
            sid = self.next_snapshot_id
            snapshot = next_snapshot(table.snapshot_manager, sid, long_lived=self._long_lived)
            if snapshot is None or snapshot.time_millis > time.time() * 1000 - self.delay_ms:
                self._progress()
                if self.stop_when_caught_up:
                    return
                time.sleep(self.poll_interval)
                continue
            if snapshot.commit_kind != OVERWRITE and has_changes(snapshot, self.mode):
                splits = change_splits(
                    table.io,
                    table.root,
                    table.schema,
                    table.options,
                    snapshot,
                    self.mode,
                    partition_filter=self.filters.partition,
                )
                yield from self._deliver(read_changes(self.context, splits), sid, sid + 1)
            else:
                self.next_snapshot_id = sid + 1
            if self._done(sid):
                self._finished = True
                self._progress()

    def _full(self, snapshot_id: int) -> Iterator[pa.Table]:
        """The merged contents of one snapshot as +I rows (the levels the changelog producer allows)."""
        table = without_scan_position(self.table)
        options = table.options
        plan = plan_scan(
            table.io,
            table.root,
            table.schema,
            options,
            predicate=self.predicate,
            snapshot_id=snapshot_id,
            streaming=True,
        )
        splits: Sequence[Split] = plan.splits
        keep = full_phase_levels(options, num_levels(options))
        if keep is not None:
            splits = restrict_levels(splits, keep, table.schema, options)
        ctx = replace(self.context, keep_row_kind=False)
        for split in splits:
            for part in read_split(ctx, split):
                if part.num_rows:
                    kinds = pa.repeat(pa.scalar("+I", pa.string()), part.num_rows)
                    yield pa.Table.from_arrays([kinds, *part.columns], schema=self.schema)
        if options.bucket == POSTPONE_BUCKET and self.mode == "delta":
            # rows still in the postpone bucket: newer than the merged ones, read as-is (as Java does)
            snapshot = table.snapshot_manager.snapshot(snapshot_id)
            waiting = postpone_splits(
                table.io, table.root, table.schema, options, snapshot, partition_filter=self.filters.partition
            )
            yield from read_changes(self.context, waiting)


def stream_table(table: TableHandle, options: StreamOptions) -> TableStream:
    """A TableStream over ``table``; ``options`` override the table options `scan.mode`,
    `scan.snapshot-id`, `scan.timestamp-millis` and `consumer-id`."""
    overrides = {
        CoreOptions.SCAN_MODE.key: options.mode,
        CoreOptions.SCAN_SNAPSHOT_ID.key: options.snapshot_id,
        CoreOptions.SCAN_TIMESTAMP_MILLIS.key: options.timestamp_millis,
        CoreOptions.CONSUMER_ID.key: options.consumer_id,
    }
    chosen = {k: str(v) for k, v in overrides.items() if v is not None}
    if chosen:
        check_dynamic_options(table.schema, table.name, table.dynamic_options, chosen)  # as with_options
        table = table.with_dynamic_options(chosen)
    return TableStream(table, options)
