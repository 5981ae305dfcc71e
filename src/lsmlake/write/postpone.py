"""Postpone bucket mode (``bucket = -2``): compaction moves ``bucket-postpone`` rows into real buckets.

Per partition the bucket count is the one its real buckets already have; a partition receiving real
buckets for the first time gets ``postpone.default-bucket-num`` if set, else
``ceil(rows / postpone.target-row-num-per-bucket)`` if that is set, else
``ceil(bytes / postpone.target-size-per-bucket)`` (1 gb) — Java's ``PostponeUtils``. The postponed
rows are replayed in write order (files by creation time, rows by sequence number) through a
fixed-bucket writer, so they get fresh sequence numbers above the bucket's and are merged and
compacted like any write; the result is one COMPACT commit that deletes the postpone files.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow as pa

from lsmlake.bucket.routers import POSTPONE_BUCKET
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions, parse_memory_size
from lsmlake.core.paths import TablePaths, partition_directory
from lsmlake.core.schema import TableSchema
from lsmlake.errors import InvalidOptionError
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.read.split_read import ReadContext, read_file
from lsmlake.scan.split import Split
from lsmlake.write.writer import FileStoreWrite

DEFAULT_TARGET_SIZE = "1 gb"


def postpone_bucket_num(restored: RestoredState, partition: bytes, options: CoreOptions) -> int:
    """The real bucket count the postponed rows of ``partition`` go to (see module docstring)."""
    for (p, bucket), entries in restored.files.items():
        if p == partition and bucket >= 0 and entries and entries[0].total_buckets > 0:
            return entries[0].total_buckets
    n = options.get(CoreOptions.POSTPONE_DEFAULT_BUCKET_NUM)
    if n is not None:
        if n <= 0:
            raise InvalidOptionError(f"option 'postpone.default-bucket-num' must be > 0, got {n}")
        return n
    files = [e.file for e in restored.entries(partition, POSTPONE_BUCKET)]
    target_rows = options.get(CoreOptions.POSTPONE_TARGET_ROW_NUM_PER_BUCKET)
    if target_rows is not None:
        target = target_rows
        value = sum(f.row_count for f in files)
        key = CoreOptions.POSTPONE_TARGET_ROW_NUM_PER_BUCKET.key
    else:
        key = CoreOptions.POSTPONE_TARGET_SIZE_PER_BUCKET.key
        target = parse_memory_size(key, options.get(key) or DEFAULT_TARGET_SIZE)
        value = sum(f.file_size for f in files)
    if target <= 0:
        raise InvalidOptionError(f"option {key!r} must be > 0, got {target}")
    return max(1, math.ceil(value / target))


def _replay_order(files: list[DataFileMeta]) -> list[DataFileMeta]:
    """Postpone files in write order: creation time, then sequence numbers."""
    return sorted(files, key=lambda f: (f.creation_time_millis or 0, f.min_sequence_number, f.file_name))


def _as_compaction(m: CommitMessage) -> CommitMessage:
    """A writer's message as compaction output: its new files become ``compact_after``."""
    before = {(f.file_name, f.level) for f in m.compact_before}
    new = {(f.file_name, f.level) for f in m.new_files}
    return replace(
        m,
        new_files=(),
        changelog_files=(),
        compact_before=tuple(f for f in m.compact_before if (f.file_name, f.level) not in new),
        compact_after=tuple(
            f for f in (*m.new_files, *m.compact_after) if (f.file_name, f.level) not in before
        ),
    )


def postponed_row_count(io: FileIO, paths: TablePaths, snapshot: Snapshot | None) -> tuple[int, int]:
    """(files, rows) waiting in ``bucket-postpone`` in a snapshot."""
    entries = live_entries(io, paths, snapshot, entry_filter=lambda e: e.bucket == POSTPONE_BUCKET)
    return len(entries), sum(e.file.row_count for e in entries)


class PostponeCompactor:
    """Moves the postponed rows of every partition of one restored snapshot into real buckets."""

    def __init__(
        self,
        io: FileIO,
        root: str,
        schema: TableSchema,
        options: CoreOptions,
        restored: RestoredState,
        *,
        table_name: str,
    ) -> None:
        self.io, self.root, self.schema, self.options = io, root, schema, options
        self.paths = TablePaths(root)
        self.restored = restored
        self.table_name = table_name
        self.written_paths: list[str] = []

    def partitions(self) -> list[bytes]:
        return [p for p, b in self.restored.buckets() if b == POSTPONE_BUCKET]

    def _rows(self, partition: bytes, files: list[DataFileMeta]) -> tuple[pa.Table, np.ndarray]:
        ptypes = [self.schema.field(k).type for k in self.schema.partition_keys]
        values = tuple(deserialize_row(partition, ptypes)) if ptypes else ()
        part_dir = partition_directory(self.schema, self.options, values)
        split = Split(
            partition=partition,
            partition_values=values,
            bucket=POSTPONE_BUCKET,
            bucket_path=self.paths.bucket_dir(part_dir, POSTPONE_BUCKET),
            files=tuple(files),
            deletion_files=tuple(None for _ in files),
            raw_convertible=True,
            total_buckets=POSTPONE_BUCKET,
        )
        names = list(self.schema.field_names)
        ctx = ReadContext(self.io, self.root, self.schema, self.options, tuple(names))
        tables = [read_file(ctx, split, i, names, push=None, system=True) for i in range(len(files))]
        rank = np.concatenate([np.full(t.num_rows, i, dtype=np.int64) for i, t in enumerate(tables)])
        table = pa.concat_tables(tables)
        seq = table.column(SEQUENCE_NUMBER).to_numpy()
        order = np.lexsort((seq, rank))
        table = table.take(pa.array(order))
        kinds = table.column(VALUE_KIND).to_numpy(zero_copy_only=False).astype(np.int8)
        return table.select(names), kinds

    def compact(self) -> list[CommitMessage]:
        """Commit messages of one COMPACT snapshot moving every postponed row to its real bucket."""
        messages: list[CommitMessage] = []
        for partition in self.partitions():
            entries = self.restored.entries(partition, POSTPONE_BUCKET)
            files = _replay_order([e.file for e in entries])
            num = postpone_bucket_num(self.restored, partition, self.options)
            raw = {**self.options.raw, CoreOptions.BUCKET.key: str(num)}
            if raw.get(CoreOptions.CHANGELOG_PRODUCER.key) == "input":
                raw[CoreOptions.CHANGELOG_PRODUCER.key] = "none"  # the input changelog was written with the postponed rows
            options = CoreOptions.of(raw, primary_key_table=True)
            writer = FileStoreWrite(
                self.io,
                self.root,
                self.schema,
                options,
                table_name=self.table_name,
                restore=lambda: self.restored,
            )
            try:
                rows, kinds = self._rows(partition, files)
                writer.write(rows, kinds)
                messages += [_as_compaction(m) for m in writer.prepare_commit()]
            finally:
                self.written_paths += writer.written_paths
            messages.append(
                CommitMessage(partition, POSTPONE_BUCKET, POSTPONE_BUCKET, compact_before=tuple(files))
            )
        return messages
