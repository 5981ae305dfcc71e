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
so committed rows never stay invisible past the next commit that starts after them (a write heals
the level-0 files its base snapshot held, not those of writers committing alongside it).
"""

from __future__ import annotations

import posixpath
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import pyarrow as pa

from lsmlake.commit.committer import FileStoreCommit
from lsmlake.commit.compaction import compact_and_publish, compact_buckets
from lsmlake.commit.overwrite_upgrade import compacts
from lsmlake.compact.executors import local_executor
from lsmlake.core.options import CoreOptions
from lsmlake.errors import CommitConflictError, CommitStateUnknownError, LsmlakeError, PartiallyPublishedError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.index_manifest import hash_index_files, other_index_files
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.metadata.snapshot import Snapshot
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
    latest snapshot) is tried instead -- tables whose reads skip level 0 need it to show the rows.
    A compaction of a bucket the APPEND had to be rebased in (another writer added files to it since
    the base) is stale for sure: it goes straight to ``recompact``."""
    parts = [compaction_part(m) for m in messages]
    compacted = {(m.partition, m.bucket) for m in parts if m.compact_before or m.compact_after}
    stale = committer.rebased_buckets & compacted
    reason: Exception
    try:
        if stale and result.snapshot_ids:
            raise CommitConflictError(
                f"bucket(s) {sorted(b for _, b in stale)} got other writers' files after this write's base"
            )
        result.snapshot_ids += committer.commit(parts)
        return
    except CommitConflictError as e:
        if not result.snapshot_ids:
            raise
        result.compaction_dropped = True
        reason = e
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
    """Whether a commit with nothing to publish makes an empty snapshot (`snapshot.ignore-empty-commit`
    false, as Paimon's batch commits; `commit.force-create-snapshot` is Flink streaming's only)."""
    return (
        not messages
        and not overwriting
        and unplaced is None
        and not table.options.get(CoreOptions.SNAPSHOT_IGNORE_EMPTY_COMMIT)
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
    known_snapshot: Snapshot | None = None,
    base_level0: Collection[str] | None = None,
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
    (``published_error``). ``known_snapshot``: the base snapshot as the writers read it, when they did
    (the committer looks for newer ones from there instead of reading LATEST again). ``base_level0``:
    the names of the level-0 files in that base snapshot, when known: only buckets holding one of them
    are healed (``heal_level0``)."""
    result = PublishedWrite() if result is None else result
    committer = FileStoreCommit(
        table,
        base_snapshot_id=base_snapshot_id,
        unplaced_deletes=unplaced_deletes,
        known_snapshot=known_snapshot,
    )
    if forced_empty_commit(table, messages, overwrite is not None, unplaced_deletes):
        result.snapshot_ids.append(committer.commit_empty())
        return result.snapshot_ids
    try:
        if overwrite is None:
            recompact = _recompact(table, messages, committer)
            publish_write(committer, result, messages, table_name=table.name, recompact=recompact)
            if recompact is not None and not result.compaction_dropped:
                _compact_received(table, committer, result, messages)
        else:
            appends = [append_part(m) for m in messages]
            upgrade = not compacts(messages)  # as Paimon: only an overwrite that compacted nothing
            publish_appends(result, appends, [committer.overwrite(appends, replaces=overwrite, upgrade=upgrade)])
            dropped = {f.file_name for m in messages for f in m.changelog_files}
            for path in written:
                if posixpath.basename(path) in dropped:
                    delete(path)
            publish_compaction(committer, result, messages, table_name=table.name)
    except BaseException as e:
        unrecorded = [i for i in committer.landed_ids if i not in result.snapshot_ids]
        # a snapshot that landed before it was recorded (an interrupt right after publishing) may
        # reference any written file, as may one whose answer was lost: leftovers are orphans then
        if not unrecorded and not isinstance(e, CommitStateUnknownError):
            _discard(written, result.published, delete)
        result.snapshot_ids += unrecorded
        error = published_error(e, result.snapshot_ids, table_name=table.name)
        if error is e:
            raise
        raise error from e
    if result.compaction_dropped:
        _discard(written, result.published, delete)
    if result.snapshot_ids:
        with naming_published(result.snapshot_ids, table_name=table.name):
            heal_level0(
                table,
                result,
                exclude=written_buckets(messages),
                commit_user=committer.commit_user,
                known=committer.newest_known,
                only_files=base_level0,
            )
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
    table: TableHandle,
    result: PublishedWrite,
    *,
    exclude: set[BucketKey],
    commit_user: str,
    known: Snapshot | None = None,
    only_files: Collection[str] | None = None,
) -> None:
    """Compact the level-0 files of up to `lsmlake.commit.heal-level0-buckets` buckets outside
    ``exclude`` (the write's own) in one COMPACT snapshot, for tables whose batch reads skip level 0.
    Losing a race here is fine (another commit changed those buckets; the next commit tries again).
    ``known``: the newest snapshot the write's committer saw, at or after those it published: the
    level-0 files are looked for there (else in the latest snapshot). Every commit published before
    this write's is in it, which is what the guarantee needs; the COMPACT commit checks its inputs
    against the latest. ``only_files``: heal only buckets holding one of these level-0 files (those the
    write's base snapshot held): level-0 files published since may be those of writers running now,
    about to compact them themselves, and compacting them here too would only race them. A file an
    interrupted commit left is in the base of every write that starts after it, so it is healed by
    the next commit that starts after it landed."""
    options = table.options
    limit = options.get(CoreOptions.HEAL_LEVEL0_BUCKETS)
    if limit <= 0 or options.get(CoreOptions.WRITE_ONLY) or not skip_level0(table.schema, options):
        return
    latest = table.snapshot_manager.latest() if known is None else known
    restored = RestoredState.load(table.io, table.paths, latest)
    stale = [
        b
        for b in level0_buckets(table, restored)
        if b not in exclude and (only_files is None or holds_level0(restored, b, only_files))
    ][:limit]
    if not stale:
        return
    full = options.full_compaction_delta_commits > 0
    try:
        sid = compact_and_publish(
            table,
            restored,
            stale,
            local_executor(table, full),
            commit_user=commit_user,
            still_needed=None
            if only_files is None
            else (lambda state, b: holds_level0(state, b, only_files)),
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
    table: TableHandle, messages: Sequence[CommitMessage], committer: FileStoreCommit
) -> Callable[[], int | None] | None:
    """A fresh compaction of the buckets the APPEND published to (asked once it landed), for when the
    write's own compaction loses a race (none for ``write-only`` or append tables)."""
    options = table.options
    if options.get(CoreOptions.WRITE_ONLY) or not table.schema.primary_keys:
        return None
    full = options.full_compaction_delta_commits > 0

    def recompact() -> int | None:
        # the write's files as its APPEND published them (renamed if rebased); once another commit
        # has compacted them all in a bucket, that bucket needs nothing more from this write
        # (a dynamic-bucket write may have moved rows to other buckets: the buckets as published)
        published = committer.published_messages(messages)
        ours = {f.file_name for m in published for f in m.new_files}
        return compact_buckets(
            table,
            full=full,
            only=written_buckets(published),
            commit_user=committer.commit_user,
            known=committer.newest_known,
            still_needed=lambda state, b: holds_level0(state, b, ours),
        )

    return recompact


def holds_level0(state: RestoredState, bucket: BucketKey, names: Collection[str]) -> bool:
    """Whether ``bucket`` of ``state`` holds one of the level-0 files ``names``."""
    return any(e.file.level == 0 and e.file.file_name in names for e in state.entries(*bucket))


def _compact_received(
    table: TableHandle, committer: FileStoreCommit, result: PublishedWrite, messages: Sequence[CommitMessage]
) -> None:
    """Compact the buckets the published APPEND gave files the write's own compaction did not cover:
    rows a dynamic-bucket re-route moved into another writer's bucket, deletes a cross-partition upsert
    added where another writer put a key. Left at level 0, batch reads of tables that skip level 0 would
    miss them (a key live in two partitions) until some later commit healed the bucket."""
    received = written_buckets(committer.published_messages(messages)) - written_buckets(messages)
    if not received:
        return
    full = table.options.full_compaction_delta_commits > 0
    try:
        sid = compact_buckets(table, full=full, only=received, commit_user=committer.commit_user)
    except CommitConflictError as e:  # another commit changed them: a later compaction picks them up
        warnings.warn(
            f"table {table.name}: the write is committed (snapshot {result.snapshot_ids[-1]}), but "
            f"compacting the {len(received)} bucket(s) it re-routed rows into lost a race ({e}); a later "
            "compaction picks them up (until then, reads that skip level 0 do not see them)",
            stacklevel=3,
        )
        return
    result.snapshot_ids += [sid] if sid is not None else []


def _discard(written: Sequence[str], published: set[str], delete: Callable[[str], None]) -> None:
    for path in written:
        if posixpath.basename(path) not in published:
            delete(path)


def compact_manifests(table: TableHandle) -> int | None:
    """Merge every manifest of the latest snapshot into as few files as the target size allows, in one
    COMPACT snapshot (Paimon's compact_manifest procedure); its id, or None when there was nothing to do."""
    full = table.with_dynamic_options({CoreOptions.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE.key: "0 b"})
    return FileStoreCommit(full, base_snapshot_id=None).compact_manifests()


def publish_removals(table: TableHandle, messages: Sequence[CommitMessage]) -> int | None:
    """One OVERWRITE snapshot dropping the messages' ``compact_before`` files from the manifests (files
    missing on storage: ``remove_unexisting_files``); None when none of them is still live."""
    return FileStoreCommit(table, base_snapshot_id=None).remove_files(messages)
