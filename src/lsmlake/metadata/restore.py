"""What a writer restores from the latest snapshot: live files and the DV index file of each bucket."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from lsmlake.core.fileio import FileIO
from lsmlake.core.paths import TablePaths
from lsmlake.metadata.index_manifest import DELETION_VECTORS_INDEX, IndexFileMeta, read_index_manifest
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.snapshot import Snapshot

BucketKey = tuple[bytes, int]


@dataclass
class RestoredState:
    """Live data files and deletion-vector index files of a snapshot, grouped by (partition, bucket)."""

    snapshot: Snapshot | None
    files: dict[BucketKey, list[ManifestEntry]] = field(default_factory=dict)
    dv_index: dict[BucketKey, IndexFileMeta] = field(default_factory=dict)

    @staticmethod
    def load(io: FileIO, paths: TablePaths, snapshot: Snapshot | None) -> RestoredState:
        files: dict[BucketKey, list[ManifestEntry]] = defaultdict(list)
        for e in live_entries(io, paths, snapshot):
            files[(e.partition, e.bucket)].append(e)
        dv_index: dict[BucketKey, IndexFileMeta] = {}
        if snapshot is not None and snapshot.index_manifest:
            for ie in read_index_manifest(io, paths.manifest(snapshot.index_manifest)):
                if ie.index_file.index_type == DELETION_VECTORS_INDEX:
                    dv_index[(ie.partition, ie.bucket)] = ie.index_file
        return RestoredState(snapshot, dict(files), dv_index)

    def entries(self, partition: bytes, bucket: int) -> list[ManifestEntry]:
        return self.files.get((partition, bucket), [])

    def buckets(self) -> list[BucketKey]:
        return sorted(self.files)
