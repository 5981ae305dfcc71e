"""The write path: rows -> per-bucket sorted buffers -> level-0 files -> commit messages."""

from __future__ import annotations

import os
import posixpath
import threading
from collections import deque
from collections.abc import Callable, Iterable, Set
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
import pyarrow as pa

from lsmlake.bucket.cross_partition import CrossPartitionRouter
from lsmlake.bucket.postpone_fixed import PostponeFixedBucketRouter, batch_write_fixed_bucket
from lsmlake.bucket.routers import (
    POSTPONE_BUCKET,
    BucketRouter,
    attach_index_files,
    postpone_write_options,
    router_for,
)
from lsmlake.bucket.routing import route_rows
from lsmlake.compact.bucket_compactor import BucketFiles, compact_bucket, restore_deletion_vectors, written_by
from lsmlake.core.external_paths import located_path
from lsmlake.core.fileio import FileIO
from lsmlake.core.memory import release_unused_memory
from lsmlake.core.options import CoreOptions
from lsmlake.core.options.validation import validate_write_buffer
from lsmlake.core.paths import TablePaths, partition_directory
from lsmlake.core.schema import TableSchema
from lsmlake.errors import CommitConflictError
from lsmlake.format.changelog_writer import write_changelog
from lsmlake.format.data_file_writer import DataFileWriter
from lsmlake.mergetree.key_sort import stable_key_order
from lsmlake.mergetree.kv_layout import (
    KEY_PREFIX,
    SEQUENCE_NUMBER,
    RowKind,
    key_fields,
    sort_by_key,
    to_kv_table,
)
from lsmlake.mergetree.merge_function import Deduplicate, check_input_kinds, merge_function_for
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.sequence_properties import recorded_max_sequence_number
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.scan.planner import skip_level0
from lsmlake.write.memory_pool import MAX_PENDING_FLUSHES, BackgroundFlusher, WriteBufferPool
from lsmlake.write.spill import SpillDirectory, SpilledRun

T = TypeVar("T")
R = TypeVar("R")
# Below this many rows a write is not worth spreading over threads.
PARALLEL_MIN_ROWS = 50_000

BucketId = tuple[bytes, int]
# A commit merges spilled runs and buffered parts into data files of at most budget / this many bytes.
FINAL_MERGE_SHARE = 16


@dataclass
class _BucketBuffer:
    """Rows of one bucket waiting for a flush, in arrival order."""

    partition_values: tuple[object, ...]
    directory: str
    tables: list[pa.Table] = field(default_factory=list)
    first_sequence: int = 0
    nbytes: int = 0
    next_sequence: int = 0
    new_files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    spilled: list[SpilledRun] = field(default_factory=list)  # older than ``tables``, in arrival order


class FileStoreWrite:
    """Buffers rows per (partition, bucket) and writes them as level-0 files.

    All buckets share one budget (`write-buffer-size`): from half of it on, the largest buffers are
    handed to a flush thread (which spills them as sorted runs with `write-buffer-spillable`), and
    ``write`` blocks only while the budget is exceeded and flushes are pending.

    Sequence numbers continue per bucket from the highest one of the files restored from the
    base snapshot; ``restore`` loads that snapshot's state, lazily, once. ``bucket_counts``: the state
    a postpone table's batch write takes each partition's bucket count from (default: ``restore``'s).
    """

    def __init__(
        self,
        io: FileIO,
        table_root: str,
        schema: TableSchema,
        options: CoreOptions,
        *,
        table_name: str,
        restore: Callable[[], RestoredState],
        bucket_counts: Callable[[], RestoredState] | None = None,
    ) -> None:
        self.io = io
        self.paths = TablePaths(table_root)
        self.schema = schema
        self.options = options
        self.table_name = table_name
        self._restore_state = restore
        self._restored: RestoredState | None = None
        self._buffers: dict[BucketId, _BucketBuffer] = {}
        self._partition_totals: dict[bytes, set[int]] | None = None
        self.written_paths: list[str] = []
        self.num_buckets = options.bucket
        pk = bool(schema.primary_keys)
        # dynamic (-1) and postpone (-2) primary-key tables assign buckets through a router
        self._router: BucketRouter | None
        self._fixed_postpone: PostponeFixedBucketRouter | None = None
        if batch_write_fixed_bucket(schema, options):  # postpone table, batch write: real buckets at once
            # an overwrite restores nothing, yet its partitions keep their counts: ``bucket_counts``
            counts = bucket_counts if bucket_counts is not None else (lambda: self.restored)
            self._fixed_postpone = PostponeFixedBucketRouter(schema, options, counts)
            self._router = self._fixed_postpone
        else:
            self._router = router_for(io, table_root, schema, options, lambda: self.restored.snapshot)
            if pk and self.num_buckets == POSTPONE_BUCKET:
                self.options = postpone_write_options(options, schema)
        validate_write_buffer(self.options)
        self.pool = WriteBufferPool(
            options.get(CoreOptions.WRITE_BUFFER_SIZE), options.get(CoreOptions.PAGE_SIZE)
        )
        self._flusher = BackgroundFlusher(table_name)
        # append tables write rows as they come (Paimon's `write-buffer-for-append` sort buffer is not used)
        self._spill = (
            SpillDirectory(options.get(CoreOptions.WRITE_BUFFER_MAX_DISK_SIZE))
            if pk and options.get(CoreOptions.WRITE_BUFFER_SPILLABLE)
            else None
        )
        self._lock = threading.Lock()
        self._workers: ThreadPoolExecutor | None = None
        self.merge_function = merge_function_for(options, schema) if pk else Deduplicate()

    def _total_buckets_of(self, partition: bytes) -> int:
        """The ``total_buckets`` the files written to ``partition`` carry."""
        if self._fixed_postpone is not None:
            return self._fixed_postpone.total_buckets(partition)
        return self.total_buckets

    @property
    def total_buckets(self) -> int:
        return self.num_buckets if self.num_buckets > 0 or self.num_buckets == POSTPONE_BUCKET else -1

    def write(self, rows: pa.Table, kinds: np.ndarray) -> None:
        """Buffer rows (already conformed to the table schema) with their row kinds; raise the error of
        a background flush that failed."""
        self._flusher.check()
        if self.options.ignore_delete and self.schema.primary_keys:
            keep = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
            rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
        elif self.options.get(CoreOptions.IGNORE_UPDATE_BEFORE) and self.schema.primary_keys:
            keep = kinds != RowKind.UPDATE_BEFORE
            rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
        if self.schema.primary_keys:
            check_input_kinds(self.merge_function, kinds, table_name=self.table_name)
        if self._router is not None:
            rows, kinds, groups = self._router.route(rows, kinds)
        else:
            groups = route_rows(rows, self.schema, self.num_buckets)
        starts = []
        for group in groups:
            buf = self._buffer(group.partition, group.partition_values, group.bucket)
            starts.append(buf.next_sequence)
            buf.next_sequence += len(group.indices)

        def prepare(i: int) -> pa.Table:
            if self.schema.primary_keys:
                return self._sorted_kv(rows, kinds, groups[i].indices, starts[i])
            return rows.take(pa.array(groups[i].indices))

        parts = self._map(prepare, range(len(groups)), parallel=rows.num_rows >= PARALLEL_MIN_ROWS)
        for group, first, part in zip(groups, starts, parts, strict=True):
            buf = self._buffers[(group.partition, group.bucket)]
            if not buf.tables:
                buf.first_sequence = first
            buf.tables.append(part)
            size = self.pool.pages(part.nbytes)
            buf.nbytes += size
            self.pool.add(size)
        self._keep_within_budget()

    def _keep_within_budget(self) -> None:
        """Hand the largest buffers to the flush thread from half the budget on; wait for flushes only
        while the budget is exceeded and the flush queue is full."""
        while True:
            self._flusher.check()
            if not self.pool.wants_flush():
                return
            largest = max(self._buffers.values(), key=lambda b: b.nbytes)
            if largest.nbytes > 0 and self._flusher.pending < MAX_PENDING_FLUSHES:
                self._hand_off(largest)
            elif self.pool.over_budget() and self._flusher.pending:
                self._flusher.wait_one()
            else:
                return

    def wait_for_flushes(self) -> None:
        """Block until every background flush finished; raise the first error."""
        self._flusher.drain()

    def _hand_off(self, buf: _BucketBuffer) -> None:
        parts, first, nbytes = buf.tables, buf.first_sequence, buf.nbytes
        buf.tables, buf.nbytes = [], 0
        self.pool.hand_off(nbytes)

        def flush() -> None:
            try:
                # parts are sorted each; they are sorted together once, when the runs are merged at commit
                run = self._spill.spill(pa.concat_tables(parts)) if self._spill is not None else None
                if run is not None:
                    buf.spilled.append(run)  # one flush thread: runs are appended in arrival order
                else:
                    self._write_files(buf, parts, first)
            finally:
                parts.clear()
                self.pool.release(nbytes)
                release_unused_memory()

        self._flusher.submit(flush)

    def _map(self, fn: Callable[[T], R], items: Iterable[T], *, parallel: bool) -> list[R]:
        """Apply ``fn`` to each item, on the writer's threads when asked (Arrow kernels release the GIL).
        The threads live until the commit: starting two per 100k-row batch cost time, and each new
        thread left the allocators another heap of freed memory to keep."""
        items = list(items)
        if not parallel or len(items) < 2:
            return [fn(x) for x in items]
        if self._workers is None:
            self._workers = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 1, thread_name_prefix=f"lsmlake-write-{self.table_name}"
            )
        return list(self._workers.map(fn, items))

    def _stop_workers(self) -> None:
        workers, self._workers = self._workers, None
        if workers is not None:
            workers.shutdown(wait=True)

    def _sorted_kv(self, rows: pa.Table, kinds: np.ndarray, indices: np.ndarray, first: int) -> pa.Table:
        """One bucket's rows in key-value layout, sorted by key (then user sequence, then arrival)."""
        key_names = list(self.schema.trimmed_primary_keys)
        if not self.options.sequence_fields:  # arrival order breaks ties: a stable sort by key suffices
            order = stable_key_order(rows.select(key_names).take(pa.array(indices)), key_names)
            final = indices[order]
            sequence = np.arange(first, first + len(indices), dtype=np.int64)[order]
            return to_kv_table(rows.take(pa.array(final)), kinds[final], sequence, self.schema)
        names = key_names + list(self.options.sequence_fields)
        descending = self.options.sequence_descending
        sort_keys = sort_by_key(
            rows.select(names)
            .take(pa.array(indices))
            .append_column("__pos", pa.array(np.arange(len(indices)))),
            self.schema.trimmed_primary_keys,
            self.options.sequence_fields,
            descending_sequence=descending,
            seq_column=None,
        )
        order = sort_keys.column("__pos").to_numpy()
        final = indices[order]
        sequence = np.arange(first, first + len(indices), dtype=np.int64)[order]
        return to_kv_table(rows.take(pa.array(final)), kinds[final], sequence, self.schema)

    def _buffer(self, partition: bytes, values: tuple[object, ...], bucket: int) -> _BucketBuffer:
        key = (partition, bucket)
        buf = self._buffers.get(key)
        if buf is None:
            buf = _BucketBuffer(values, self.paths.bucket_dir(self._partition_dir(values), bucket))
            buf.next_sequence = self._restored_next_sequence(partition, bucket)
            self._buffers[key] = buf
        return buf

    @property
    def restored_snapshot_id(self) -> int | None:
        """The snapshot this writer's buckets were restored from (None: empty table, or not restored)."""
        if self._restored is None:
            return None
        return 0 if self._restored.snapshot is None else self._restored.snapshot.id

    @property
    def restored_snapshot(self) -> Snapshot | None:
        """The snapshot this writer's buckets were restored from, as read (None: empty table, or not
        restored)."""
        return None if self._restored is None else self._restored.snapshot

    def restored_level0(self) -> frozenset[str] | None:
        """The names of the level-0 files of the snapshot this writer restored (None: not restored)."""
        if self._restored is None:
            return None
        return frozenset(
            e.file.file_name
            for entries in self._restored.files.values()
            for e in entries
            if e.file.level == 0
        )

    @property
    def restored(self) -> RestoredState:
        if self._restored is None:
            self._restored = self._restore_state()
        return self._restored

    def _restored_next_sequence(self, partition: bytes, bucket: int) -> int:
        entries = self.restored.entries(partition, bucket)
        if self.num_buckets > 0:
            # any bucket of the partition: a rescaled partition may lack the bucket this row goes to
            if self._partition_totals is None:  # one pass over the restored files
                totals: dict[bytes, set[int]] = {}
                for (p, b), es in self.restored.files.items():
                    if b != POSTPONE_BUCKET:  # postponed rows wait for a compaction to pick their bucket
                        totals.setdefault(p, set()).update(e.total_buckets for e in es)
                self._partition_totals = totals
            others = self._partition_totals.get(partition, set())
            wrong = sorted(others - {self.total_buckets})
            if wrong:
                raise CommitConflictError(
                    f"table {self.table_name}: this partition was written with {wrong[0]} buckets, the table "
                    f"now says {self.num_buckets}; rescale it first (Table.rescale / CALL sys.rescale), or set "
                    f"the table's count to {wrong[0]} (ALTER TABLE SET ('bucket' = '{wrong[0]}'))"
                )
        restored = max((e.file.max_sequence_number for e in entries), default=-1)
        if self.options.get(CoreOptions.WRITE_SEQUENCE_NUMBER_INIT_MODE) == "snapshot":
            # every bucket starts above the highest number the table handed out (Paimon 2.x)
            recorded = recorded_max_sequence_number(self.restored.snapshot)
            restored = restored if recorded is None else max(restored, recorded)
        return restored + 1

    def _sorted(self, parts: list[pa.Table], *, each_sorted: bool = True) -> pa.Table:
        """Key-value parts as one sorted run: by key, then sequence (a spilled run is several sorted
        parts, so it is not sorted by itself: ``each_sorted`` False)."""
        if len(parts) == 1 and each_sorted:
            return parts[0]
        return sort_by_key(
            pa.concat_tables(parts),
            [f.name for f in key_fields(self.schema)],
            self.options.sequence_fields,
            descending_sequence=self.options.sequence_descending,
            seq_column=SEQUENCE_NUMBER,
        )

    def _write_files(
        self, buf: _BucketBuffer, parts: list[pa.Table], first_sequence: int, *, each_sorted: bool = True
    ) -> None:
        """Write buffered parts as level-0 data files (and input changelog files)."""
        if not parts:
            return
        writer = DataFileWriter(self.io, self.paths, self.schema, self.options, buf.directory)
        changelog: list[DataFileMeta] = []
        if self.schema.primary_keys:
            kv = self._sorted(parts, each_sorted=each_sorted)
            if self.options.changelog_producer == "input":  # the raw input rows, kinds kept, before merging
                changelog = write_changelog(
                    self.io, self.paths, self.schema, self.options, buf.directory, kv, level=0
                )
                self._record(buf.changelog_files, buf.directory, changelog)
            written = writer.write(self.merge_function.merge(kv, [f.name for f in key_fields(self.schema)]))
        else:
            written = writer.write(pa.concat_tables(parts), first_sequence=first_sequence)
        self._record(buf.new_files, buf.directory, written)

    def _record(self, files: list[DataFileMeta], directory: str, written: list[DataFileMeta]) -> None:
        with self._lock:
            files.extend(written)
            self.written_paths.extend(
                located_path(directory, m.file_name, m.external_path, local=self.io.local) for m in written
            )

    def _final_flush(self, buf: _BucketBuffer) -> None:
        """Write a bucket's spilled runs and buffered rows as data files, in arrival order: consecutive
        runs and buffered parts merged into one file while they fit in a sixteenth of the budget and
        number at most `sort-spill-threshold` runs. A merge holds its rows about four times over and two
        buckets flush at once, so the merges take at most half the budget, the half that buffered rows
        left free when flushing started (an append table's parts are written together, unsorted)."""
        parts, buf.tables = buf.tables, []
        self.pool.hand_off(buf.nbytes)
        nbytes, buf.nbytes = buf.nbytes, 0
        try:
            runs, buf.spilled = buf.spilled, []
            if not self.schema.primary_keys:
                self._write_files(buf, parts, buf.first_sequence)
                return
            pending: deque[SpilledRun | pa.Table] = deque([*runs, *parts])
            parts.clear()  # each part is released once written
            limit, most = self.pool.budget // FINAL_MERGE_SHARE, self.options.sort_spill_threshold
            group: list[SpilledRun | pa.Table] = []
            size = 0
            while pending:
                item = pending.popleft()
                in_runs = sum(isinstance(g, SpilledRun) for g in group)
                if group and (
                    size + item.nbytes > limit or (isinstance(item, SpilledRun) and in_runs >= most)
                ):
                    self._write_group(buf, group)
                    group, size = [], 0
                group.append(item)
                size += item.nbytes
            self._write_group(buf, group)
        finally:
            self.pool.release(nbytes)
            release_unused_memory()

    def _write_group(self, buf: _BucketBuffer, group: list[SpilledRun | pa.Table]) -> None:
        """Spilled runs (read back) and buffered parts as data files of one sorted run."""
        if not group:
            return
        spill = self._spill
        has_runs = any(isinstance(g, SpilledRun) for g in group)
        assert spill is not None or not has_runs
        loaded = [spill.read(g) if isinstance(g, SpilledRun) and spill is not None else g for g in group]
        group.clear()
        # a spilled run is several sorted parts, not one sorted run: then the group is sorted as a whole
        self._write_files(
            buf, [t for t in loaded if isinstance(t, pa.Table)], buf.first_sequence, each_sorted=not has_runs
        )

    def _partition_dir(self, values: tuple[object, ...]) -> str:
        return partition_directory(self.schema, self.options, values)

    def prepare_commit(self, *, compact: bool = True, full: bool = False) -> list[CommitMessage]:
        """Flush every buffer, compact the buckets written (unless ``write-only``); one message per bucket.
        Raises the error of a background flush that failed (the caller then aborts)."""
        try:
            return self._prepare_commit(compact=compact, full=full)
        finally:
            self._stop_workers()

    def _prepare_commit(self, *, compact: bool, full: bool) -> list[CommitMessage]:
        self._flusher.drain()
        self._flusher.close()
        items = list(self._buffers.items())
        self._map(lambda item: self._final_flush(item[1]), items, parallel=True)
        if self._spill is not None:
            self._spill.close()
        compact = compact and bool(self.schema.primary_keys) and not self.options.get(CoreOptions.WRITE_ONLY)
        if self._fixed_postpone is not None and not skip_level0(self.schema, self.options):
            compact = False  # Java writes these as `write-only`; kept when reads skip level 0 (else unseen)
        full = full or (self.options.full_compaction_delta_commits > 0)
        # Paimon's full-compaction producer without `full-compaction.delta-commits` compacts fully every commit
        full = full or self.options.changelog_producer == "full-compaction"

        def finish(item: tuple[BucketId, _BucketBuffer]) -> CommitMessage | None:
            (partition, bucket), buf = item
            new_files, buf.new_files = tuple(buf.new_files), []
            changelog, buf.changelog_files = tuple(buf.changelog_files), []
            total = self._total_buckets_of(partition)
            message = CommitMessage(partition, bucket, total, new_files=new_files, changelog_files=changelog)
            if compact and new_files and bucket != POSTPONE_BUCKET:  # postponed rows wait for table.compact()
                state = BucketFiles(
                    partition,
                    buf.partition_values,
                    bucket,
                    total,
                    buf.directory,
                    [e.file for e in self.restored.entries(partition, bucket)] + list(new_files),
                    restore_deletion_vectors(
                        self.io, self.paths, self.restored, partition, bucket, self.options, buf.directory
                    ),
                )
                try:
                    result = compact_bucket(self.io, self.paths, self.schema, self.options, state, full=full)
                finally:
                    release_unused_memory()
                if result is not None:
                    self.written_paths.extend(written_by(result, buf.directory, self.paths, self.options))
                    message = replace(result, new_files=new_files, changelog_files=changelog)
            return None if message.is_empty else message

        messages = [m for m in self._map(finish, items, parallel=True) if m is not None]
        if self._router is None:
            return messages
        index_files = self._router.prepare_commit()  # HASH index files of the dynamic buckets written
        self.written_paths.extend(self._router.written_paths)
        self._router.written_paths = []
        return attach_index_files(messages, index_files, self.total_buckets)

    def unplaced_deletes(self) -> pa.Table | None:
        """Keys this writer deleted that no partition held in its restored snapshot (cross-partition
        upserts write no row for them), as ``_KEY_*`` columns; None if there are none."""
        if not isinstance(self._router, CrossPartitionRouter) or not self._router.unplaced_deletes:
            return None
        parts = self._router.unplaced_deletes
        names = {k: KEY_PREFIX + k for k in self.schema.trimmed_primary_keys}
        return pa.concat_tables(parts).rename_columns(names)

    def abort(self, *, keep: Set[str] = frozenset()) -> None:
        """Drop buffered rows and delete the files this writer wrote, except those named in ``keep``
        (files a snapshot already published references)."""
        self._flusher.close()  # running flushes finish first: their files are then deleted too
        self._stop_workers()
        if self._spill is not None:
            self._spill.close()
        for buf in self._buffers.values():
            buf.tables, buf.new_files, buf.changelog_files, buf.spilled = [], [], [], []
        for path in self.written_paths:
            if posixpath.basename(path) not in keep:
                self.io.delete_file(path)
        self.written_paths = []
