"""The one publish recipe of every writer (local, Ray, overwrite): an APPEND (or OVERWRITE) snapshot
with the new data, then a COMPACT one with the write's own compaction.

The compaction a write runs is optional work: when it loses a race with another commit after the
APPEND snapshot is published, the write still stands and the compaction is dropped (its files are the
caller's to delete); a fresh compaction of the written buckets is tried instead, and failing that a
later compaction picks the level-0 files up again, changelog included.

Tables whose batch reads skip level 0 (deletion vectors, first-row: Paimon's ``batchScanSkipLevel0``)
heal themselves: after its own snapshots, a commit compacts the level-0 files of up to
`lsmlake.commit.heal-level0-buckets` other buckets in one more COMPACT snapshot (those left by a
commit interrupted between its APPEND and COMPACT, or whose compaction lost a race), oldest first,
so committed rows never stay invisible past the next commit to the table.
"""

from __future__ import annotations

import posixpath
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import pyarrow as pa

from lsmlake.commit.committer import FileStoreCommit
from lsmlake.commit.compaction import compact_and_publish, compact_buckets
from lsmlake.compact.executors import local_executor
from lsmlake.core.options import CoreOptions
from lsmlake.errors import CommitConflictError, LsmlakeError, PartiallyPublishedError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.index_manifest import hash_index_files, other_index_files
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.scan.planner import POSTPONE_BUCKET, skip_level0


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


@dataclass(frozen=True)
class CommitResult:
    """What one write's commit published: ``snapshot_ids`` in order -- the APPEND (or OVERWRITE)
    snapshot first, then the COMPACT one(s) of its own compaction, if any landed, then the one that
    healed other buckets' level-0 files (``heal_level0``), if any; empty when there was
    nothing to commit. ``compaction_dropped``: the write's compaction lost a race after the APPEND
    landed and was dropped (a fresh one may have been published instead; else a later compaction picks
    the files up)."""

    snapshot_ids: tuple[int, ...] = ()
    compaction_dropped: bool = False

    @property
    def snapshot_id(self) -> int | None:
        """The last snapshot published (what ``table.write()`` returns), None if none."""
        return self.snapshot_ids[-1] if self.snapshot_ids else None


@dataclass
class PublishedWrite:
    """Snapshots a write published and the file names they reference (never deleted on cleanup)."""

    snapshot_ids: list[int] = field(default_factory=list)
    published: set[str] = field(default_factory=set)
    compaction_dropped: bool = False

    def frozen(self) -> CommitResult:
        return CommitResult(tuple(self.snapshot_ids), self.compaction_dropped)


def published_error(error: BaseException, snapshot_ids: Sequence[int], *, table_name: str) -> BaseException:
    """``error``, raised after ``snapshot_ids`` were published, made to say so: an lsmlake error gets
    ``published_snapshot_ids`` and a note; a commit conflict (which means "nothing published") or a
    foreign error becomes a PartiallyPublishedError caused by it; anything else (KeyboardInterrupt...)
    only gets the note. Returns the error to raise (``error`` itself when nothing was published)."""
    ids = tuple(snapshot_ids)
    if not ids or isinstance(error, PartiallyPublishedError):
        return error
    landed = f"snapshot{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}"
    note = (
        f"table {table_name}: {landed} published before this error: the write is committed "
        f"(snapshot {ids[0]} holds its data), do not retry it"
    )
    if isinstance(error, LsmlakeError) and not isinstance(error, CommitConflictError):
        error.published_snapshot_ids = ids
        error.add_note(note)
        return error
    if isinstance(error, Exception):
        wrapped = PartiallyPublishedError(f"{note}; then: {type(error).__name__}: {error}", ids)
        wrapped.__cause__ = error
        return wrapped
    error.add_note(note)
    return error


@contextmanager
def naming_published(snapshot_ids: Sequence[int], *, table_name: str) -> Iterator[None]:
    """Work after a write published ``snapshot_ids`` (expiry, ...): an error it raises names them."""
    try:
        yield
    except BaseException as e:
        error = published_error(e, snapshot_ids, table_name=table_name)
        if error is e:
            raise
        raise error from e


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
    if recompact is not None:  # it retries buckets that lose again itself (commit.compaction)
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


def forced_empty_commit(
    table: TableHandle, messages: Sequence[CommitMessage], overwriting: bool, unplaced: pa.Table | None
) -> bool:
    """Whether a commit with nothing to publish makes an empty snapshot (`commit.force-create-snapshot`)."""
    return (
        not messages
        and not overwriting
        and unplaced is None
        and table.options.get(CoreOptions.COMMIT_FORCE_CREATE_SNAPSHOT)
    )


def publish(
    table: TableHandle,
    messages: Sequence[CommitMessage],
    *,
    base_snapshot_id: int | None,
    written: Sequence[str],
    delete: Callable[[str], None],
    overwrite: Callable[[bytes], bool] | None = None,
    result: PublishedWrite | None = None,
    unplaced_deletes: pa.Table | None = None,
) -> list[int]:
    """Publish a write's messages; the ids of the snapshots that landed.

    ``base_snapshot_id``: the snapshot the writers restored their buckets from (None for an
    overwrite), so that another writer's data in those buckets since is a conflict. ``written``: every
    file the writers wrote; ``delete`` removes one of them. ``overwrite``: which partitions an
    OVERWRITE snapshot replaces (instead of an APPEND one); as in Paimon it commits no changelog, so the
    input changelog files are deleted. ``result`` is filled as snapshots land. ``unplaced_deletes``:
    keys a cross-partition upsert deleted that no partition held in its base (``FileStoreCommit``). On
    an error, or when the write's compaction is dropped after losing a race, every written file no
    published snapshot references is deleted; an error raised after a snapshot landed names it
    (``published_error``)."""
    result = PublishedWrite() if result is None else result
    committer = FileStoreCommit(table, base_snapshot_id=base_snapshot_id, unplaced_deletes=unplaced_deletes)
    if forced_empty_commit(table, messages, overwrite is not None, unplaced_deletes):
        result.snapshot_ids.append(committer.commit_empty())
        return result.snapshot_ids
    try:
        if overwrite is None:
            # the buckets as published: a dynamic-bucket write may have moved rows to other buckets
            recompact = _recompact(
                table, lambda: written_buckets(committer.published_messages(messages)), committer.commit_user
            )
            publish_write(committer, result, messages, table_name=table.name, recompact=recompact)
        else:
            appends = [append_part(m) for m in messages]
            publish_appends(result, appends, [committer.overwrite(appends, replaces=overwrite)])
            dropped = {f.file_name for m in messages for f in m.changelog_files}
            for path in written:
                if posixpath.basename(path) in dropped:
                    delete(path)
            publish_compaction(committer, result, messages, table_name=table.name)
    except BaseException as e:
        _discard(written, result.published, delete)
        error = published_error(e, result.snapshot_ids, table_name=table.name)
        if error is e:
            raise
        raise error from e
    if result.compaction_dropped:
        _discard(written, result.published, delete)
    if result.snapshot_ids:
        with naming_published(result.snapshot_ids, table_name=table.name):
            heal_level0(table, result, exclude=written_buckets(messages), commit_user=committer.commit_user)
    return result.snapshot_ids


def level0_buckets(table: TableHandle, restored: RestoredState) -> list[BucketKey]:
    """The buckets of ``restored`` holding level-0 files, oldest level-0 data first (never the
    postpone bucket, whose files stay on level 0 until ``table.compact()`` assigns them)."""
    oldest: dict[BucketKey, int] = {}
    for key, entries in restored.files.items():
        seqs = [e.file.min_sequence_number for e in entries if e.file.level == 0]
        if seqs and key[1] != POSTPONE_BUCKET:
            oldest[key] = min(seqs)
    return sorted(oldest, key=lambda k: (oldest[k], k))


def heal_level0(
    table: TableHandle, result: PublishedWrite, *, exclude: set[BucketKey], commit_user: str
) -> None:
    """Compact the level-0 files of up to `lsmlake.commit.heal-level0-buckets` buckets outside
    ``exclude`` (the write's own) in one COMPACT snapshot, for tables whose batch reads skip level 0.
    Losing a race here is fine (another commit changed those buckets; the next commit tries again)."""
    options = table.options
    limit = options.get(CoreOptions.HEAL_LEVEL0_BUCKETS)
    if limit <= 0 or options.get(CoreOptions.WRITE_ONLY) or not skip_level0(table.schema, options):
        return
    restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    stale = [b for b in level0_buckets(table, restored) if b not in exclude][:limit]
    if not stale:
        return
    full = options.full_compaction_delta_commits > 0
    try:
        sid = compact_and_publish(
            table, restored, stale, local_executor(table, full), commit_user=commit_user
        )
    except CommitConflictError:
        return
    except Exception as e:  # the write stands; the next commit tries again
        warnings.warn(
            f"table {table.name}: the write is committed, but compacting the level-0 files of "
            f"{len(stale)} other bucket(s) failed: {type(e).__name__}: {e}",
            stacklevel=3,
        )
        return
    result.snapshot_ids += [sid] if sid is not None else []


def _recompact(
    table: TableHandle, touched: Callable[[], set[BucketKey]], commit_user: str
) -> Callable[[], int | None] | None:
    """A fresh compaction of the ``touched`` buckets (asked once the APPEND landed), for when the
    write's own compaction loses a race (none for ``write-only`` or append tables)."""
    options = table.options
    if options.get(CoreOptions.WRITE_ONLY) or not table.schema.primary_keys:
        return None
    full = options.full_compaction_delta_commits > 0
    return lambda: compact_buckets(table, full=full, only=touched(), commit_user=commit_user)


def _discard(written: Sequence[str], published: set[str], delete: Callable[[str], None]) -> None:
    for path in written:
        if posixpath.basename(path) not in published:
            delete(path)


def compact_manifests(table: TableHandle) -> int | None:
    """Merge every manifest of the latest snapshot into as few files as the target size allows, in one
    COMPACT snapshot (Paimon's compact_manifest procedure); its id, or None when there was nothing to do."""
    full = table.with_dynamic_options({CoreOptions.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE.key: "0 b"})
    return FileStoreCommit(full, base_snapshot_id=None).compact_manifests()
