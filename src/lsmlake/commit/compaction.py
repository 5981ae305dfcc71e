"""Publishing a compaction: one COMPACT snapshot; buckets that another commit changed meanwhile (an
input file removed, or given a new deletion vector) are compacted again from the then latest snapshot."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from lsmlake.commit.committer import FileStoreCommit
from lsmlake.commit.conflicts import DvIndexes, deletion_vector_problems
from lsmlake.compact.executors import BucketCompactor, Compacted, delete_unpublished, local_executor
from lsmlake.errors import CommitConflictError, CommitStateUnknownError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.index_manifest import IndexFileMeta
from lsmlake.metadata.manifest import FileKind, ManifestEntry
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.scan.planner import POSTPONE_BUCKET

# Attempts at one COMPACT snapshot; after a conflict, the buckets that another commit changed are
# compacted again from the then latest snapshot, and the others keep the files already written.
COMPACT_ATTEMPTS = 3
NeededCheck = Callable[[RestoredState, BucketKey], bool]
"""Whether a bucket of a snapshot still needs the compaction (checked again after a lost race)."""


def compact_and_publish(
    table: TableHandle,
    restored: RestoredState,
    buckets: Sequence[BucketKey],
    compact: BucketCompactor,
    *,
    commit_user: str | None = None,
    still_needed: NeededCheck | None = None,
) -> int | None:
    """Compact ``buckets`` and publish them in one COMPACT snapshot (its id; None if none needed it).

    A conflict costs only the buckets whose input files are no longer all live: they are compacted again
    from the latest snapshot, those ``still_needed`` accepts (a write compacting its own level-0
    files, or healing others', has nothing left to do in a bucket whose files another commit has
    compacted meanwhile). Out of attempts, nothing is published, every new file is deleted, and
    CommitConflictError is raised."""
    kept: Compacted = {}
    read = ReadDvs()
    lost: list[BucketKey] = []

    def needed(state: RestoredState, bucket: BucketKey) -> bool:
        return bool(state.entries(*bucket)) and (still_needed is None or still_needed(state, bucket))

    pending = [b for b in buckets if needed(restored, b)]
    try:
        for _ in range(COMPACT_ATTEMPTS):
            fresh = compact(restored, pending) if pending else {}
            read.record(restored, fresh)
            kept.update(fresh)
            if not kept:
                return None
            try:
                return commit_compaction(
                    table,
                    [m for m, _ in kept.values()],
                    commit_user,
                    read_dvs=read.as_read_dvs(),
                    known_snapshot=restored.snapshot,
                )
            except CommitConflictError:
                pass
            latest = table.snapshot_manager.latest_after(restored.snapshot)
            restored = RestoredState.load(table.io, table.paths, latest)
            lost = [b for b, (m, _) in kept.items() if not _still_valid(m, read, restored)]
            lost = lost or list(kept)  # not explained by the inputs: redo them all
            for b in lost:
                delete_unpublished(table, kept.pop(b)[1])
            pending = [b for b in lost if needed(restored, b)]  # some may have been emptied since
    except BaseException as e:
        if not isinstance(e, CommitStateUnknownError):  # else the snapshot may reference them
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
    known: Snapshot | None = None,
    still_needed: NeededCheck | None = None,
) -> int | None:
    """Compact the buckets of the latest snapshot here (``only`` these; never the postpone bucket) in one
    COMPACT snapshot: its id, or None. A write re-running its own compaction passes its ``commit_user``
    and the newest snapshot its committer saw (``known``): the buckets are compacted as of that one
    (the COMPACT commit checks the inputs against the latest, and redoes the buckets that changed,
    those ``still_needed`` accepts)."""
    latest = table.snapshot_manager.latest() if known is None else known
    restored = RestoredState.load(table.io, table.paths, latest)
    if restored.snapshot is None:
        return None
    pending = [b for b in restored.buckets() if b[1] != POSTPONE_BUCKET and (only is None or b in only)]
    return compact_and_publish(
        table,
        restored,
        pending,
        local_executor(table, full),
        commit_user=commit_user,
        still_needed=still_needed,
    )


def commit_compaction(
    table: TableHandle,
    messages: Sequence[CommitMessage],
    commit_user: str | None = None,
    *,
    read_dvs: tuple[DvIndexes, str] | None = None,
    known_snapshot: Snapshot | None = None,
) -> int | None:
    """Publish compaction messages; the id of the last snapshot, or None. A compaction has no base
    snapshot: its inputs are checked against the latest snapshot's live files, and (``read_dvs``: the
    deletion-vector index file of each bucket it read) their deletion vectors against those it read."""
    committer = FileStoreCommit(table, base_snapshot_id=None, commit_user=commit_user, read_dvs=read_dvs)
    ids = committer.commit(messages)
    return ids[-1] if ids else None


@dataclass
class ReadDvs:
    """The deletion-vector index file each compacted bucket was read with, and from which snapshots."""

    indexes: dict[BucketKey, IndexFileMeta] = field(default_factory=dict)
    snapshot_ids: set[int] = field(default_factory=set)

    def record(self, restored: RestoredState, compacted: Compacted) -> None:
        for b in compacted:
            self.indexes.pop(b, None)
            if b in restored.dv_index:
                self.indexes[b] = restored.dv_index[b]
        if compacted and restored.snapshot is not None:
            self.snapshot_ids.add(restored.snapshot.id)

    def as_read_dvs(self) -> tuple[DvIndexes, str]:
        ids = sorted(self.snapshot_ids)
        return dict(self.indexes), f"snapshot{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}"


def _still_valid(message: CommitMessage, read: ReadDvs, latest: RestoredState) -> bool:
    """Whether every file the compaction replaces is still live in its bucket of ``latest``, with the
    deletion vector it had when the compaction read it."""
    key = (message.partition, message.bucket)
    live = {e.file.file_name for e in latest.entries(*key)}
    if not all(f.file_name in live for f in message.compact_before):
        return False
    deletes = [
        ManifestEntry(FileKind.DELETE, key[0], key[1], message.total_buckets, f)
        for f in message.compact_before
    ]
    return not deletion_vector_problems(deletes, read.indexes, latest.dv_index, read_snapshot="")
