"""Level-0 files a batch read skips (deletion-vector and first-row tables), for ``explain`` and ``$buckets``."""

from __future__ import annotations

from dataclasses import dataclass

from lsmlake.core.fileio import FileIO
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.scan.planner import POSTPONE_BUCKET

BucketKey = tuple[bytes, int]


@dataclass(frozen=True)
class SkippedLevel0:
    """Live level-0 files of one bucket that a batch read does not see, and their rows."""

    files: int
    rows: int


def skipped_level0(
    io: FileIO, paths: TablePaths, schema: TableSchema, snapshot: Snapshot | None, *, skipping: bool
) -> dict[BucketKey, SkippedLevel0]:
    """Per (partition, bucket), the live level-0 files of ``snapshot`` a batch read skips (``skipping``:
    the planner's ``skip_level0``; empty otherwise). Their rows are committed but invisible to batch
    reads until a compaction moves them up (the next commit to the table does, `lsmlake.commit.
    heal-level0-buckets`); streams read them. The postpone bucket is not counted (its own rule)."""
    if not skipping or snapshot is None or not schema.primary_keys:
        return {}
    entries = live_entries(
        io, paths, snapshot, entry_filter=lambda e: e.file.level == 0 and e.bucket != POSTPONE_BUCKET
    )
    files: dict[BucketKey, list[int]] = {}
    for e in entries:
        files.setdefault((e.partition, e.bucket), []).append(e.file.row_count)
    return {k: SkippedLevel0(len(v), sum(v)) for k, v in sorted(files.items())}
