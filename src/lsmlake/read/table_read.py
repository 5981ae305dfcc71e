"""Table-level reads: ``scan``, ``read`` and ``explain``, planning splits and reading them in parallel."""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lsmlake.bucket.routers import POSTPONE_BUCKET, bucket_mode_text
from lsmlake.expr import Predicate, parse_filter
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.read.split_read import ReadContext, concat, read_split, read_split_table
from lsmlake.scan.planner import ScanPlan, plan_scan, resolve_snapshot, split_filters
from lsmlake.scan.split import Split
from lsmlake.scan.travel import time_travel
from lsmlake.scan.travel import without_scan_position as without_scan_position  # re-exported
from lsmlake.write.postpone import postponed_row_count

if TYPE_CHECKING:
    import pandas as pd

    from lsmlake.table import Table

MAX_READ_THREADS = min(32, os.cpu_count() or 4)


_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
_POOL_PREFIX = "lsmlake-read"


def _read_pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``threads`` readers: starting threads for every read costs about a
    millisecond, a tenth of a small key-range read. Keyed by pid too, as a forked child has none."""
    key = (os.getpid(), threads)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=_POOL_PREFIX)
        return pool


def _ordered_parallel(
    ctx: ReadContext, splits: Sequence[Split], threads: int, *, ahead: int | None = None
) -> Iterator[pa.Table]:
    """Each split's table, in split order, reading up to ``ahead`` (default ``2 * threads``) splits ahead."""
    ahead = 2 * threads if ahead is None else max(ahead, 1)
    nested = threading.current_thread().name.startswith(_POOL_PREFIX)  # a pool task waiting on its pool
    if len(splits) <= 1 or threads <= 1 or nested:
        for s in splits:
            yield read_split_table(ctx, s)
        return
    pool = _read_pool(threads)
    pending: deque[Future[pa.Table]] = deque()
    try:
        todo = iter(splits)
        for s in todo:
            pending.append(pool.submit(read_split_table, ctx, s))
            if len(pending) >= ahead:
                break
        while pending:
            table = pending.popleft().result()
            following = next(todo, None)
            if following is not None:
                pending.append(pool.submit(read_split_table, ctx, following))
            yield table
    finally:
        for f in pending:
            f.cancel()
        for f in pending:  # a consumer that stops early leaves no read running behind it
            if not f.cancelled():
                f.exception()


_DONE = object()


def _streamed_pieces(ctx: ReadContext, splits: Sequence[Split], depth: int = 2) -> Iterator[pa.Table]:
    """Each split's pieces (files of raw splits, sections of merge splits) in order, produced by one
    background thread at most ``depth`` pieces ahead: memory is bounded by a few sections, not splits."""
    pieces: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: Any) -> bool:
        """Hand an item to the consumer; False once the consumer has gone away."""
        while not stop.is_set():
            try:
                pieces.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for split in splits:
                for table in read_split(ctx, split):
                    if not offer(table):
                        return
            offer(_DONE)
        except BaseException as e:  # handed to the consumer
            offer(e)

    worker = threading.Thread(target=produce, name="lsmlake-stream", daemon=True)
    worker.start()
    try:
        while True:
            item = pieces.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


class Scan:
    """A planned read of one snapshot: its splits, and their rows as Arrow, batches or pandas.

    ``table`` is read with its own schema; ``snapshot`` pins the snapshot (it may be a tag's whose
    file has expired), else the table's options or the latest pick it. :func:`scan_table` is the way
    in for time travel: it reads a past snapshot with that snapshot's schema."""

    def __init__(
        self,
        table: Table,
        *,
        filter: str | Predicate | None = None,
        columns: Sequence[str] | None = None,
        snapshot: Snapshot | None = None,
        limit: int | None = None,
        threads: int = MAX_READ_THREADS,
    ) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        self.table = table
        self.predicate = parse_filter(filter, table.schema.fields)
        names = list(columns) if columns is not None else table.schema.field_names
        io, root, schema, options = table.io, table.root, table.schema, table.options
        filters = split_filters(self.predicate, schema)
        self.context = ReadContext(io, root, schema, options, tuple(names), filters)  # checks the columns
        if snapshot is None:
            snapshot = resolve_snapshot(io, root, None, options)
        self.snapshot: Snapshot | None = snapshot
        """The snapshot read (None for a table without snapshots)."""
        self.plan: ScanPlan = plan_scan(
            io, root, schema, options, predicate=self.predicate, snapshot=snapshot
        )
        self.limit = limit
        self.threads = threads

    @property
    def snapshot_id(self) -> int | None:
        return self.plan.snapshot_id

    @property
    def schema(self) -> pa.Schema:
        """The schema of the rows this scan returns."""
        return self.context.output_schema

    def splits(self) -> list[Split]:
        return list(self.plan.splits)

    def _tables(self, *, streaming: bool = False) -> Iterator[pa.Table]:
        """Split results in order; ``streaming`` keeps fewer splits in flight to bound memory."""
        remaining = self.limit
        self.context.output_schema  # noqa: B018 - unreadable column types fail before any I/O
        if remaining == 0:
            return
        if streaming:
            source = _streamed_pieces(self.context, self.plan.splits)
        else:
            splits = self.plan.splits
            busy = len(splits) >= self.threads > 1  # every reader thread has a split of its own
            ctx = replace(self.context, decode_threads=False) if busy else self.context
            source = _ordered_parallel(ctx, splits, self.threads)
        for table in source:
            if remaining is not None:
                table = table.slice(0, remaining)
                remaining -= table.num_rows
            if table.num_rows:
                yield table
            if remaining == 0:
                return

    def to_arrow(self) -> pa.Table:
        return concat(list(self._tables()), self.schema)

    def to_batches(self) -> pa.RecordBatchReader:
        """A stream of record batches, read split by split (a few splits ahead, in parallel)."""

        def batches() -> Iterator[pa.RecordBatch]:
            for table in self._tables(streaming=True):
                yield from table.to_batches()

        return pa.RecordBatchReader.from_batches(self.schema, batches())

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        return self.to_arrow().to_pandas(**kwargs)

    @property
    def plan_summary(self) -> dict[str, Any]:
        """Counts describing the plan: splits, files, and what each pruning step removed."""
        p, c = self.plan, self.plan.counts
        raw = sum(1 for s in p.splits if s.raw_convertible)
        return {
            "snapshot_id": p.snapshot_id,
            "splits": len(p.splits),
            "raw_splits": raw,
            "merge_splits": len(p.splits) - raw,
            "buckets": len(p.buckets),
            "files": sum(len(s.files) for s in p.splits),
            "rows": sum(s.row_count for s in p.splits),
            "deletion_files": sum(1 for s in p.splits for d in s.deletion_files if d is not None),
            "manifests": c.manifests,
            "manifests_skipped": c.manifests_skipped,
            "entries_pruned_by_partition": c.by_partition,
            "entries_pruned_by_bucket": c.by_bucket,
            "entries_skipped_level0": c.by_level0,
            "entries_pruned_by_key_stats": c.by_key_stats,
            "entries_pruned_by_value_stats": c.by_value_stats,
            "files_pruned_by_bucket_value_filter": c.by_bucket_value_stats,
            "skip_level0": p.skip_level0,
        }

    def __repr__(self) -> str:
        s = self.plan_summary
        return (
            f"Scan({self.table.name!r}, snapshot={s['snapshot_id']}, splits={s['splits']} "
            f"(raw {s['raw_splits']}, merge {s['merge_splits']}), files={s['files']})"
        )


def scan_table(
    table: Table,
    *,
    filter: str | Predicate | None = None,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    as_of_millis: int | None = None,
    limit: int | None = None,
) -> Scan:
    """Plan a read of ``table``: the latest snapshot, or the one ``snapshot_id``, ``tag``, ``as_of_millis``
    or the table's time-travel options (`scan.snapshot-id`, `scan.tag-name`, `scan.timestamp-millis`,
    ...) name, read with that snapshot's schema: ``columns`` and ``filter`` use its column names."""
    travel = time_travel(table, snapshot_id=snapshot_id, tag=tag, as_of_millis=as_of_millis)
    if travel is None:
        return Scan(table, filter=filter, columns=columns, limit=limit)
    return Scan(travel.table, filter=filter, columns=columns, snapshot=travel.snapshot, limit=limit)


def read_table(
    table: Table,
    *,
    filter: str | Predicate | None = None,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    as_of_millis: int | None = None,
    limit: int | None = None,
) -> pa.Table:
    """The table's rows (merged, deletes applied) that pass ``filter``, as one Arrow table."""
    return scan_table(
        table,
        filter=filter,
        columns=columns,
        snapshot_id=snapshot_id,
        tag=tag,
        as_of_millis=as_of_millis,
        limit=limit,
    ).to_arrow()


def _partition_text(table: Table, values: tuple[object, ...]) -> str:
    if not table.schema.partition_keys:
        return ""
    return ",".join(f"{k}={v}" for k, v in zip(table.schema.partition_keys, values, strict=True)) + " "


def explain_table(
    table: Table, *, filter: str | Predicate | None = None, snapshot_id: int | None = None
) -> str:
    """How a read would go: per bucket raw or merge and the rule that decided it, files per level."""
    scan = scan_table(table, filter=filter, snapshot_id=snapshot_id)
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
