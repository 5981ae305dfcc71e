"""What a bucket writer hands the committer: new files, compaction before/after, changelog, index changes."""

from __future__ import annotations

from dataclasses import dataclass

from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import IndexFileMeta


@dataclass(frozen=True)
class CommitMessage:
    """The changes of one (partition, bucket); plain data, picklable, no open handles."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    new_index_files: tuple[IndexFileMeta, ...] = ()
    deleted_index_files: tuple[IndexFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()  # input changelog: the APPEND snapshot publishes it
    compact_changelog_files: tuple[DataFileMeta, ...] = ()  # lookup / full-compaction: the COMPACT one

    @property
    def is_empty(self) -> bool:
        return not (
            self.new_files
            or self.compact_before
            or self.compact_after
            or self.new_index_files
            or self.deleted_index_files
            or self.changelog_files
            or self.compact_changelog_files
        )
