"""Publishing a compaction: one COMPACT snapshot; buckets that another commit changed meanwhile are
compacted again from the then latest snapshot."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from lsmlake.commit.committer import FileStoreCommit
from lsmlake.compact.executors import BucketCompactor, Compacted, delete_unpublished, local_executor
from lsmlake.errors import CommitConflictError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.scan.planner import POSTPONE_BUCKET

# Attempts at one COMPACT snapshot; after a conflict, the buckets that another commit changed are
# compacted again from the then latest snapshot, and the others keep the files already written.
COMPACT_ATTEMPTS = 3


def compact_and_publish(
    table: TableHandle,
    restored: RestoredState,
    buckets: Sequence[BucketKey],
    compact: BucketCompactor,
    *,
    commit_user: str | None = None,
) -> int | None:
    """Compact ``buckets`` and publish them in one COMPACT snapshot (its id; None if none needed it).

    A conflict costs only the buckets whose input files are no longer all live: they are compacted again
    from the latest snapshot. Out of attempts, nothing is published, every new file is deleted, and
    CommitConflictError is raised."""
    kept: Compacted = {}
    lost: list[BucketKey] = []
    pending = [b for b in buckets if restored.entries(*b)]
    try:
        for _ in range(COMPACT_ATTEMPTS):
            kept.update(compact(restored, pending))
            if not kept:
                return None
            try:
                return commit_compaction(table, [m for m, _ in kept.values()], commit_user)
            except CommitConflictError:
                pass
            restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
            lost = [b for b, (m, _) in kept.items() if not _inputs_live(m, restored)]
            lost = lost or list(kept)  # not explained by the inputs: redo them all
            for b in lost:
                delete_unpublished(table, kept.pop(b)[1])
            pending = [b for b in lost if restored.entries(*b)]  # some may have been emptied since
    except BaseException:
        for _, files in kept.values():
            delete_unpublished(table, files)
        raise
    for _, files in kept.values():
        delete_unpublished(table, files)
    raise CommitConflictError(
        f"table {table.name}: the compaction lost to other writers' commits {COMPACT_ATTEMPTS} times "
        f"({len(lost)} bucket(s) changed under it); nothing was published"
    )


def compact_buckets(
    table: TableHandle,
    *,
    full: bool,
    only: Collection[BucketKey] | None = None,
    commit_user: str | None = None,
) -> int | None:
    """Compact the buckets of the latest snapshot here (``only`` these; never the postpone bucket) in one
    COMPACT snapshot: its id, or None. A write re-running its own compaction passes its ``commit_user``."""
    restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    if restored.snapshot is None:
        return None
    pending = [b for b in restored.buckets() if b[1] != POSTPONE_BUCKET and (only is None or b in only)]
    return compact_and_publish(table, restored, pending, local_executor(table, full), commit_user=commit_user)


def commit_compaction(
    table: TableHandle, messages: Sequence[CommitMessage], commit_user: str | None = None
) -> int | None:
    """Publish compaction messages; the id of the last snapshot, or None. A compaction has no base
    snapshot: its inputs are checked against the latest snapshot's live files."""
    ids = FileStoreCommit(table, base_snapshot_id=None, commit_user=commit_user).commit(messages)
    return ids[-1] if ids else None


def _inputs_live(message: CommitMessage, latest: RestoredState) -> bool:
    """Whether every file the compaction replaces is still live in its bucket of ``latest``."""
    live = {e.file.file_name for e in latest.entries(message.partition, message.bucket)}
    return all(f.file_name in live for f in message.compact_before)
