"""The write path: rows -> per-bucket sorted buffers -> level-0 files -> commit messages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths, partition_path
from lsmlake.core.schema import TableSchema
from lsmlake.errors import CommitConflictError, UnsupportedError
from lsmlake.mergetree.kv_layout import (
    SEQUENCE_NUMBER, RowKind, key_fields, last_of_each_key, sort_by_key, to_kv_table,
)
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.operations.commit_message import CommitMessage
from lsmlake.operations.data_file_writer import DataFileWriter
from lsmlake.operations.routing import route_rows

BucketId = tuple[bytes, int]


@dataclass
class _BucketBuffer:
    """Rows of one bucket waiting for a flush, in arrival order."""

    partition_values: tuple[object, ...]
    directory: str
    tables: list[pa.Table] = field(default_factory=list)
    kinds: list[np.ndarray] = field(default_factory=list)
    nbytes: int = 0
    next_sequence: int = 0
    new_files: list = field(default_factory=list)  # list[DataFileMeta]


class FileStoreWrite:
    """Buffers rows per (partition, bucket) and writes them as level-0 files.

    Sequence numbers continue per bucket from the highest one of the files restored from the
    base snapshot; ``restore`` is asked once per bucket, lazily.
    """

    def __init__(
        self, io: FileIO, table_root: str, schema: TableSchema, options: CoreOptions, *,
        table_name: str, restore: Callable[[bytes, int], list[ManifestEntry]],
    ) -> None:
        self.io = io
        self.paths = TablePaths(table_root)
        self.schema = schema
        self.options = options
        self.table_name = table_name
        self._restore = restore
        self._buffers: dict[BucketId, _BucketBuffer] = {}
        self.written_paths: list[str] = []
        self.num_buckets = options.bucket
        pk = bool(schema.primary_keys)
        if pk and self.num_buckets == -1:
            raise UnsupportedError(
                f"table {table_name}: dynamic bucket mode (bucket = -1) is not supported yet; "
                "create the table with option 'bucket' = N"
            )
        if pk and self.num_buckets == -2:
            raise UnsupportedError(f"table {table_name}: postpone bucket mode (bucket = -2) is not supported yet")
        if pk and options.merge_engine != "deduplicate":
            raise UnsupportedError(
                f"table {table_name}: writing with merge-engine {options.merge_engine!r} is not supported yet"
            )
        self._buffer_limit = options.get_size("write-buffer-size")

    @property
    def total_buckets(self) -> int:
        return self.num_buckets if self.num_buckets > 0 else -1

    def write(self, rows: pa.Table, kinds: np.ndarray) -> None:
        """Buffer rows (already conformed to the table schema) with their row kinds."""
        if self.options.ignore_delete and self.schema.primary_keys:
            keep = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
            rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
        elif self.options.get_bool("ignore-update-before") and self.schema.primary_keys:
            keep = kinds != RowKind.UPDATE_BEFORE
            rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
        for group in route_rows(rows, self.schema, self.num_buckets):
            buf = self._buffer(group.partition, group.partition_values, group.bucket)
            part = rows.take(pa.array(group.indices))
            buf.tables.append(part)
            buf.kinds.append(kinds[group.indices])
            buf.nbytes += part.nbytes
            if buf.nbytes >= self._buffer_limit:
                self._flush(group.partition, group.bucket, buf)

    def _buffer(self, partition: bytes, values: tuple[object, ...], bucket: int) -> _BucketBuffer:
        key = (partition, bucket)
        buf = self._buffers.get(key)
        if buf is None:
            buf = _BucketBuffer(values, self.paths.bucket_dir(self._partition_dir(values), bucket))
            buf.next_sequence = self._restored_next_sequence(partition, bucket)
            self._buffers[key] = buf
        return buf

    def _restored_next_sequence(self, partition: bytes, bucket: int) -> int:
        entries = self._restore(partition, bucket)
        for e in entries:
            if e.total_buckets != self.total_buckets and self.num_buckets > 0:
                raise CommitConflictError(
                    f"table {self.table_name}: bucket {bucket} of this partition was written with "
                    f"{e.total_buckets} buckets, the table now says {self.num_buckets}"
                )
        if not entries:
            return 0
        return max(e.file.max_sequence_number for e in entries) + 1

    def _flush(self, partition: bytes, bucket: int, buf: _BucketBuffer) -> None:
        if not buf.tables:
            return
        rows = pa.concat_tables(buf.tables)
        kinds = np.concatenate(buf.kinds)
        n = rows.num_rows
        first_sequence = buf.next_sequence
        buf.next_sequence += n
        buf.tables, buf.kinds, buf.nbytes = [], [], 0
        writer = DataFileWriter(self.io, self.paths, self.schema, self.options, buf.directory)
        if self.schema.primary_keys:
            sequence = np.arange(first_sequence, first_sequence + n, dtype=np.int64)
            kv = to_kv_table(rows, kinds, sequence, self.schema)
            knames = [f.name for f in key_fields(self.schema)]
            seq_fields = self.options.sequence_fields
            descending = (self.options.get("sequence.field.sort-order") or "").lower() == "descending"
            kv = sort_by_key(kv, knames, seq_fields, descending_sequence=descending, seq_column=SEQUENCE_NUMBER)
            kv = kv.filter(pa.array(last_of_each_key(kv, knames)))
            written = writer.write(kv)
        else:
            written = writer.write(rows, first_sequence=first_sequence)
        buf.new_files.extend(written)
        self.written_paths.extend(f"{buf.directory}/{m.file_name}" for m in written)

    def _partition_dir(self, values: tuple[object, ...]) -> str:
        keys = list(self.schema.partition_keys)
        return partition_path(
            keys, list(values), [self.schema.field(k).type for k in keys],
            default_name=self.options.partition_default_name, legacy=self.options.partition_legacy_name,
        )

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush every buffer and return one message per bucket that wrote files."""
        messages = []
        for (partition, bucket), buf in self._buffers.items():
            self._flush(partition, bucket, buf)
            if buf.new_files:
                messages.append(
                    CommitMessage(partition, bucket, self.total_buckets, new_files=tuple(buf.new_files))
                )
                buf.new_files = []
        return messages

    def abort(self) -> None:
        """Drop buffered rows and delete every file this writer wrote."""
        for buf in self._buffers.values():
            buf.tables, buf.kinds, buf.new_files = [], [], []
        for path in self.written_paths:
            self.io.delete_file(path)
        self.written_paths = []
