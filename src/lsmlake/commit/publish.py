"""Publishing a writer's messages as Paimon does: an APPEND snapshot with the new data, then a COMPACT one.

The compaction a write runs is optional work: when it loses a race with another commit after the
APPEND snapshot is published, the write still stands and the compaction is dropped (its files are the
caller's to delete); a fresh compaction of the written buckets is tried instead, and failing that a
later compaction picks the level-0 files up again, changelog included.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from lsmlake.bucket.routers import hash_index_files, other_index_files
from lsmlake.commit.committer import FileStoreCommit
from lsmlake.errors import CommitConflictError
from lsmlake.metadata.commit_message import CommitMessage


def append_part(m: CommitMessage) -> CommitMessage:
    """What the APPEND snapshot publishes: new data and input changelog files, HASH index changes."""
    return replace(
        m,
        compact_before=(),
        compact_after=(),
        new_index_files=hash_index_files(m.new_index_files),
        deleted_index_files=hash_index_files(m.deleted_index_files),
        compact_changelog_files=(),
    )


def compaction_part(m: CommitMessage) -> CommitMessage:
    """What the COMPACT snapshot publishes: files before/after, deletion vectors, compaction changelog."""
    return replace(
        m,
        new_files=(),
        changelog_files=(),
        new_index_files=other_index_files(m.new_index_files),
        deleted_index_files=other_index_files(m.deleted_index_files),
    )


@dataclass
class PublishedWrite:
    """Snapshots a write published and the file names they reference (never deleted on cleanup)."""

    snapshot_ids: list[int] = field(default_factory=list)
    published: set[str] = field(default_factory=set)
    compaction_dropped: bool = False


def publish_appends(result: PublishedWrite, messages: Sequence[CommitMessage], ids: list[int]) -> None:
    """Record an APPEND (or OVERWRITE) snapshot of ``messages`` as published."""
    result.snapshot_ids += ids
    result.published |= {f.file_name for m in messages for f in (*m.new_files, *m.changelog_files)}
    result.published |= {f.file_name for m in messages for f in hash_index_files(m.new_index_files)}


def publish_compaction(
    committer: FileStoreCommit,
    result: PublishedWrite,
    messages: Sequence[CommitMessage],
    *,
    table_name: str,
    recompact: Callable[[], int | None] | None = None,
) -> None:
    """Commit the compaction part of ``messages``. If it conflicts after the write landed, the write
    stands: the compaction is dropped and ``recompact`` (a compaction of the written buckets from the
    latest snapshot) is tried instead -- tables whose reads skip level 0 need it to show the rows."""
    try:
        result.snapshot_ids += committer.commit([compaction_part(m) for m in messages])
        return
    except CommitConflictError as e:
        if not result.snapshot_ids:
            raise
        result.compaction_dropped = True
        reason: Exception = e
    if recompact is not None:  # it retries buckets that lose again itself (table_compact)
        try:
            sid = recompact()
        except CommitConflictError as e:
            reason = e
        else:
            result.snapshot_ids += [sid] if sid is not None else []
            return
    warnings.warn(
        f"table {table_name}: the write is committed (snapshot {result.snapshot_ids[-1]}), but its "
        f"compaction lost a race with another commit ({reason}); a later compaction picks the new "
        "files up (until then, reads that skip level 0 do not see them)",
        stacklevel=3,
    )


def publish_write(
    committer: FileStoreCommit,
    result: PublishedWrite,
    messages: Sequence[CommitMessage],
    *,
    table_name: str,
    recompact: Callable[[], int | None] | None = None,
) -> None:
    """APPEND then COMPACT; ``result`` is filled as snapshots land, so a caller cleaning up after an
    error knows which files are published."""
    appends = [append_part(m) for m in messages]
    publish_appends(result, appends, committer.commit(appends))
    publish_compaction(committer, result, messages, table_name=table_name, recompact=recompact)


def written_buckets(messages: Sequence[CommitMessage]) -> set[tuple[bytes, int]]:
    """The (partition, bucket) pairs whose new files a compaction should take up."""
    return {(m.partition, m.bucket) for m in messages if m.new_files}
