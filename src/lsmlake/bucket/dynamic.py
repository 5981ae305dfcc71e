"""Dynamic bucket mode (``bucket = -1``): route rows by the HASH index and keep that index up to date.

Each partition's index is loaded lazily, from the HASH index files of the snapshot the writer
restored, the first time a batch touches the partition. At commit every bucket that gained key
hashes gets a new HASH index file holding its whole hash set (Java's
``DynamicBucketIndexMaintainer``); the index manifest replaces the bucket's previous file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa

from lsmlake.bucket.assigner import AssignerConfig, PartitionIndex, assigner_ids
from lsmlake.bucket.routing import RowGroup, route_rows
from lsmlake.core.binary_row import deserialize_row, hash_row_bytes
from lsmlake.core.bucket import hash_rows
from lsmlake.core.external_paths import IndexFileLocator
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import PathGuard
from lsmlake.core.paths import TablePaths, partition_directory
from lsmlake.core.schema import TableSchema
from lsmlake.errors import CommitConflictError
from lsmlake.metadata.hash_index import Hashes, read_hash_index, write_hash_index
from lsmlake.metadata.index_manifest import HASH_INDEX, IndexFileMeta, read_index_manifest
from lsmlake.metadata.snapshot import Snapshot

BucketId = tuple[bytes, int]


def key_hashes(rows: pa.Table, schema: TableSchema) -> Hashes:
    """``BinaryRow(trimmed primary key).hashCode()`` of every row."""
    names = list(schema.trimmed_primary_keys)
    return hash_rows([rows.column(k) for k in names], [schema.field(k).type for k in names])


def sorted_unique(values: Hashes) -> Hashes:
    """Distinct values, sorted (a sort and a neighbour compare: faster than ``np.unique`` on int32)."""
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out.astype(np.int32, copy=False)


def split_by_bucket(group: RowGroup, buckets: np.ndarray) -> list[RowGroup]:
    """Split one partition's rows (``buckets`` aligned with ``group.indices``) into per-bucket groups."""
    order = np.argsort(buckets, kind="stable")
    ids, starts = np.unique(buckets[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    return [
        RowGroup(
            group.partition, group.partition_values, int(b), group.indices[order[bounds[i] : bounds[i + 1]]]
        )
        for i, b in enumerate(ids.tolist())
    ]


@dataclass
class _Partition:
    index: PartitionIndex
    restored: dict[int, IndexFileMeta]
    added: dict[int, list[Hashes]] = field(default_factory=lambda: defaultdict(list))


class DynamicBucketRouter:
    """Bucket assignment and HASH index maintenance of one writer of a dynamic-bucket table."""

    def __init__(
        self,
        io: FileIO,
        paths: TablePaths,
        schema: TableSchema,
        options: CoreOptions,
        snapshot: Callable[[], Snapshot | None],
    ) -> None:
        self.io, self.paths, self.schema, self.options = io, paths, schema, options
        self.guard = PathGuard.of(io, paths.root, options)
        self.index_files = IndexFileLocator(io, paths.index_file, self._bucket_dir, options, paths.data_root)
        self.config = AssignerConfig.of(options)
        self._snapshot = snapshot
        self._files: dict[bytes, dict[int, IndexFileMeta]] | None = None
        self._partitions: dict[bytes, _Partition] = {}
        self.written_paths: list[str] = []

    def _bucket_dir(self, partition: bytes, bucket: int) -> str:
        ptypes = [self.schema.field(k).type for k in self.schema.partition_keys]
        values = deserialize_row(partition, ptypes) if ptypes else []
        return self.paths.bucket_dir(partition_directory(self.schema, self.options, values), bucket)

    def _read(self, partition: bytes, bucket: int, meta: IndexFileMeta) -> Hashes:
        where = self.index_files.path(partition, bucket, meta.file_name, None)
        return read_hash_index(self.io, self.paths, meta, self.guard, where)

    def _index_files(self) -> dict[bytes, dict[int, IndexFileMeta]]:
        if self._files is None:
            files: dict[bytes, dict[int, IndexFileMeta]] = defaultdict(dict)
            snapshot = self._snapshot()
            if snapshot is not None and snapshot.index_manifest:
                for e in read_index_manifest(self.io, self.paths.manifest(snapshot.index_manifest)):
                    if e.index_file.index_type == HASH_INDEX:
                        files[e.partition][e.bucket] = e.index_file
            self._files = dict(files)
        return self._files

    def partition(self, partition: bytes) -> _Partition:
        """The partition's index, loaded from its HASH files on first use."""
        state = self._partitions.get(partition)
        if state is None:
            restored = self._index_files().get(partition, {})
            try:
                hashes = [self._read(partition, bucket, meta) for bucket, meta in restored.items()]
            except FileNotFoundError as e:
                snapshot = self._snapshot()
                raise CommitConflictError(
                    f"table at {self.paths.root}: a HASH index file of snapshot "
                    f"{snapshot.id if snapshot else None}, which this writer restored, is gone ({e}): "
                    "another commit re-indexed the partition and snapshot expiry removed the file since "
                    "(the writer loads a partition's index when its first row arrives) - retry the write"
                ) from e
            buckets = [np.full(len(h), b, dtype=np.int32) for h, b in zip(hashes, restored, strict=True)]
            index = PartitionIndex(
                np.concatenate(hashes) if hashes else np.empty(0, np.int32),
                np.concatenate(buckets) if buckets else np.empty(0, np.int32),
                self.config,
            )
            state = self._partitions[partition] = _Partition(index, dict(restored))
        return state

    def assign(self, partition: bytes, hashes: Hashes) -> np.ndarray:
        """Buckets for rows of one partition, recording their hashes for the bucket's index file."""
        state = self.partition(partition)
        owners = assigner_ids(hash_row_bytes(partition[4:]), hashes, self.config.num_assigners)
        buckets = state.index.assign(hashes, owners)
        for b in np.flatnonzero(np.bincount(buckets)).tolist():
            state.added[b].append(hashes[buckets == b])
        return buckets

    def route(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray, list[RowGroup]]:
        """Group rows by (partition, assigned bucket); every row's key hash joins its bucket's index."""
        hashes = key_hashes(rows, self.schema)
        groups: list[RowGroup] = []
        for group in route_rows(rows, self.schema, 0):
            buckets = self.assign(group.partition, hashes[group.indices])
            groups.extend(split_by_bucket(group, buckets))
        return rows, kinds, groups

    def prepare_commit(self) -> dict[BucketId, IndexFileMeta]:
        """Write a new HASH index file for every bucket that gained hashes since the restore."""
        out: dict[BucketId, IndexFileMeta] = {}
        for partition, state in self._partitions.items():
            for bucket, parts in state.added.items():
                meta = state.restored.get(bucket)
                old = (
                    sorted_unique(self._read(partition, bucket, meta))
                    if meta
                    else np.empty(0, np.int32)
                )
                new = sorted_unique(np.concatenate(parts))
                pos = np.minimum(np.searchsorted(old, new), max(len(old) - 1, 0))
                missing = new if not len(old) else new[old[pos] != new]
                if meta is not None and not len(missing):
                    continue
                merged = sorted_unique(np.concatenate([old, missing]))
                written, path = write_hash_index(
                    self.io, self.paths, merged, partial(self.index_files.new, partition, bucket)
                )
                self.written_paths.append(path)
                state.restored[bucket] = written
                out[(partition, bucket)] = written
            state.added.clear()
        return out
