"""Table-level reads: ``scan`` and ``read``, planning splits and reading them in parallel."""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lsmlake.core.options import CoreOptions
from lsmlake.errors import InvalidOptionError
from lsmlake.expr import Predicate, parse_filter
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.fallback import fallback_table
from lsmlake.read.options import ReadKeywords, ReadOptions, read_options
from lsmlake.read.split_read import ReadContext, concat, read_split, read_split_table
from lsmlake.scan.planner import ScanPlan, plan_scan, resolve_snapshot, split_filters
from lsmlake.scan.split import Split
from lsmlake.scan.travel import time_travel, travel_option
from lsmlake.scan.travel import without_scan_position as without_scan_position  # re-exported

if TYPE_CHECKING:
    from typing import Unpack

    import pandas as pd

MAX_READ_THREADS = min(32, os.cpu_count() or 4)


_NO_OPTIONS = ReadOptions()
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
_POOL_PREFIX = "lsmlake-read"


def _read_pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``threads`` readers: starting threads for every read costs about a
    millisecond, a tenth of a small key-range read. Keyed by pid too, as a forked child has none;
    shut down at interpreter exit."""
    key = (os.getpid(), threads)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=_POOL_PREFIX)
        return pool


def shutdown_read_pools() -> None:
    """Stop this process's reader threads (queued reads are cancelled); a later read starts new ones."""
    with _pools_lock:
        mine = [k for k in _pools if k[0] == os.getpid()]
        pools = [_pools.pop(k) for k in mine]
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_read_pools)


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


@dataclass(frozen=True)
class _Bound:
    """A scan's table (under the read snapshot's schema), parsed filter and read context."""

    table: TableHandle
    predicate: Predicate | None
    context: ReadContext
    snapshot: Snapshot | None
    """The pinned snapshot, or None to take the one the table's options or the latest name."""


def _bind(table: TableHandle, options: ReadOptions, snapshot: Snapshot | None) -> _Bound:
    """Filter and columns checked against ``table``'s schema (no I/O)."""
    predicate = parse_filter(options.filter, table.schema.fields)
    names = tuple(options.columns if options.columns is not None else table.schema.field_names)
    filters = split_filters(predicate, table.schema)
    context = ReadContext(table.io, table.root, table.schema, table.options, names, filters)  # checks columns
    return _Bound(table, predicate, context, snapshot)


class Scan:
    """A read of one snapshot: its splits, and their rows as Arrow, batches or pandas.

    Building a scan does no I/O: the snapshot is found and planned on first use (``splits()``,
    ``to_arrow()``, ``plan``, ...), once. ``snapshot`` pins the snapshot (it may be a tag's whose file
    has expired); else ``options`` or the table's time-travel options name one, which is read with its
    own schema (then ``table``, filter and columns are bound on first use too); else the latest. A filter
    or column the table lacks fails at once when no past snapshot is named."""

    def __init__(
        self,
        table: TableHandle,
        options: ReadOptions = _NO_OPTIONS,
        *,
        snapshot: Snapshot | None = None,
        threads: int = MAX_READ_THREADS,
    ) -> None:
        self.options = options
        self.limit = options.limit
        self.threads = threads
        self._source = table
        self._lock = threading.RLock()
        self._bound: _Bound | None = None
        self._planned: tuple[Snapshot | None, ScanPlan] | None = None
        if snapshot is not None:
            self._bound = _bind(table, options, snapshot)
        elif not options.names_a_snapshot and travel_option(table) is None:
            self._bound = _bind(table, options, None)

    def _binding(self) -> _Bound:
        with self._lock:
            if self._bound is None:
                o = self.options
                travel = time_travel(
                    self._source, snapshot_id=o.snapshot_id, tag=o.tag, as_of_millis=o.as_of_millis
                )
                self._bound = (
                    _bind(self._source, o, None)
                    if travel is None
                    else _bind(travel.table, o, travel.snapshot)
                )
            return self._bound

    def _planning(self) -> tuple[Snapshot | None, ScanPlan]:
        with self._lock:
            if self._planned is None:
                b = self._binding()
                t = b.table
                snapshot = (
                    b.snapshot if b.snapshot is not None else resolve_snapshot(t.io, t.root, None, t.options)
                )
                plan = plan_scan(t.io, t.root, t.schema, t.options, predicate=b.predicate, snapshot=snapshot)
                self._planned = (snapshot, plan)
            return self._planned

    @property
    def table(self) -> TableHandle:
        """The table read, under the read snapshot's schema."""
        return self._binding().table

    @property
    def predicate(self) -> Predicate | None:
        return self._binding().predicate

    @property
    def context(self) -> ReadContext:
        return self._binding().context

    @property
    def snapshot(self) -> Snapshot | None:
        """The snapshot read (None for a table without snapshots)."""
        return self._planning()[0]

    @property
    def plan(self) -> ScanPlan:
        return self._planning()[1]

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
            ctx = replace(self.context, batch_rows=self.batch_size)
            source = _streamed_pieces(ctx, self.plan.splits)
        else:
            splits = self.plan.splits
            busy = len(splits) >= self.threads > 1  # every reader thread has a split of its own
            ctx = replace(self.context, decode_threads=False) if busy else self.context
            source = _ordered_parallel(ctx, splits, self.threads)
        for table in itertools.chain(source, self._fallback_tables(streaming)):
            if remaining is not None:
                table = table.slice(0, remaining)
                remaining -= table.num_rows
            if table.num_rows:
                yield table
            if remaining == 0:
                return

    @property
    def fallback(self) -> TableHandle | None:
        """The `scan.fallback-branch` branch whose extra partitions this read adds (None: none, or a
        past snapshot is read)."""
        b = self._binding()
        return None if b.snapshot is not None else fallback_table(b.table)

    def _fallback_tables(self, streaming: bool) -> Iterator[pa.Table]:
        """The rows of the partitions only the `scan.fallback-branch` branch has (latest reads only)."""
        other = self.fallback
        if other is None:
            return
        t, snapshot = self.table, self.snapshot
        mine = {s.partition for s in plan_scan(t.io, t.root, t.schema, t.options, snapshot=snapshot).splits}
        scan = Scan(other, replace(self.options, limit=None), threads=self.threads)
        found, plan = scan._planning()
        scan._planned = (found, replace(plan, splits=tuple(s for s in plan.splits if s.partition not in mine)))
        for table in scan._tables(streaming=streaming):
            yield table if table.schema == self.schema else table.cast(self.schema)

    def to_arrow(self) -> pa.Table:
        return concat(list(self._tables()), self.schema)

    @property
    def batch_size(self) -> int:
        """The most rows in one batch of a streaming read: the table's `read.batch-size`."""
        size = self.table.options.get(CoreOptions.READ_BATCH_SIZE)
        if size < 1:
            raise InvalidOptionError(f"read.batch-size must be at least 1, got {size}")
        return size

    def _batches(self) -> Iterator[pa.RecordBatch]:
        size = self.batch_size  # checked before the first batch is asked for

        def batches() -> Iterator[pa.RecordBatch]:
            for table in self._tables(streaming=True):
                yield from table.to_batches(max_chunksize=size)

        return batches()

    def to_batches(self) -> pa.RecordBatchReader:
        """A stream of record batches of at most `read.batch-size` rows: files are read and overlapping
        sections merged in pieces of about that size, one split after another by a background reader a
        few pieces ahead, so memory follows the batch size, not the size of a file or split."""
        return pa.RecordBatchReader.from_batches(self.schema, self._batches())

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The batches of :meth:`to_batches`."""
        return self._batches()

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream protocol (Polars, DuckDB, pyarrow, pandas): the batches of
        :meth:`to_batches`, read as the consumer pulls them, with no table built in between."""
        return self.to_batches().__arrow_c_stream__(requested_schema)

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
    table: TableHandle, options: ReadOptions | None = None, **keywords: Unpack[ReadKeywords]
) -> Scan:
    """A read of ``table`` (planned on first use): the latest snapshot, or the one ``options`` (or the
    same keywords as ``Table.read``) or the table's time-travel options (`scan.snapshot-id`,
    `scan.tag-name`, `scan.timestamp-millis`, ...) name, read with that snapshot's schema: ``columns``
    and ``filter`` use its column names."""
    return Scan(table, read_options(options, keywords))


def read_table(
    table: TableHandle, options: ReadOptions | None = None, **keywords: Unpack[ReadKeywords]
) -> pa.Table:
    """The table's rows (merged, deletes applied) that pass the filter, as one Arrow table."""
    return Scan(table, read_options(options, keywords)).to_arrow()
