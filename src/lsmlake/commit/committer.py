"""The committer: the only writer of manifests and snapshots; publishes create-only, retries on a race."""

from __future__ import annotations

import random
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from lsmlake.bucket.cross_partition import is_cross_partition
from lsmlake.commit.conflicts import (
    BucketTops,
    DvIndexes,
    bucket_count_problems,
    bucket_tops,
    deletion_vector_problems,
    detect_conflicts,
    partition_totals,
    sequence_problems,
)
from lsmlake.commit.cross_partition_fix import CrossPartitionFix
from lsmlake.commit.drop_stats import without_read_file_stats
from lsmlake.commit.hash_index_conflicts import hash_index_conflicts
from lsmlake.commit.key_overlap import KeyReader, KeysSinceBase
from lsmlake.commit.manifest_files import DeltaLists, ManifestWriter
from lsmlake.commit.overwrite_upgrade import upgraded
from lsmlake.commit.rebase import AppendRebase, FileRebaser
from lsmlake.commit.reroute import DynamicReroute, hash_view
from lsmlake.commit.snapshot_ordering import stamp_snapshot_id
from lsmlake.core import clock
from lsmlake.core.options import CoreOptions
from lsmlake.errors import CommitConflictError, CommitStateUnknownError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.index_manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    IndexManifestEntry,
    combine_index_entries,
    read_index_manifest,
    write_index_manifest,
)
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.manifest import FileKind, ManifestEntry, read_manifest
from lsmlake.metadata.manifest_list import ManifestFileMeta, read_manifest_list, write_manifest_list
from lsmlake.metadata.sequence_properties import (
    max_added_sequence_number,
    merged_properties,
    recorded_max_sequence_number,
)
from lsmlake.metadata.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.scan.planner import POSTPONE_BUCKET


@dataclass(frozen=True)
class Changes:
    """The manifest entries and index changes that one snapshot publishes."""

    kind: str
    entries: tuple[ManifestEntry, ...]
    index_changes: tuple[IndexManifestEntry, ...] = ()
    changelog: tuple[ManifestEntry, ...] = ()  # ADD entries of changelog files (changelogManifestList)


def split_changes(messages: Sequence[CommitMessage]) -> list[Changes]:
    """An APPEND snapshot for new files (and input changelog), then a COMPACT snapshot for compaction
    results (and the changelog compaction produced)."""
    append: list[ManifestEntry] = []
    compact: list[ManifestEntry] = []
    compact_index: list[IndexManifestEntry] = []
    append_changelog: list[ManifestEntry] = []
    compact_changelog: list[ManifestEntry] = []
    for m in messages:
        append += [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f) for f in m.new_files
        ]
        append_changelog += [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f) for f in m.changelog_files
        ]
        compact_changelog += [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
            for f in m.compact_changelog_files
        ]
        compact += [
            ManifestEntry(FileKind.DELETE, m.partition, m.bucket, m.total_buckets, f)
            for f in m.compact_before
        ]
        compact += [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f) for f in m.compact_after
        ]
        compact_index += [
            IndexManifestEntry(FileKind.DELETE, m.partition, m.bucket, f) for f in m.deleted_index_files
        ]
        compact_index += [
            IndexManifestEntry(FileKind.ADD, m.partition, m.bucket, f) for f in m.new_index_files
        ]
    # HASH index files (dynamic bucket) are published with the data files they index, as Java does
    append_index = [e for e in compact_index if e.index_file.index_type == HASH_INDEX]
    compact_index = [e for e in compact_index if e.index_file.index_type != HASH_INDEX]
    out = []
    if append or append_changelog or append_index:
        out.append(Changes("APPEND", tuple(append), tuple(append_index), tuple(append_changelog)))
    if compact or compact_index or compact_changelog:
        out.append(Changes("COMPACT", tuple(compact), tuple(compact_index), tuple(compact_changelog)))
    return out


# Fairness: a commit that lost a race after rebasing onto the other writers' commits waits at most
# commit.min-retry-wait x 2**REBASED_BACKOFF_LEVEL: it is current, and a longer wait would only let
# newer commits of the same buckets through first (a large writer, slower to rebase, starved).
REBASED_BACKOFF_LEVEL = 2


def retry_wait_ms(attempt: int, min_wait: int, max_wait: int, rng: random.Random | None = None) -> float:
    """How long to wait after losing the race for a snapshot id ``attempt`` times (1, 2, ...), as
    Paimon does: ``commit.min-retry-wait`` doubled per lost attempt, capped at
    ``commit.max-retry-wait``, plus a random jitter of up to 20% so writers that lost together do not
    retry together."""
    base = min(min_wait << min(attempt - 1, 62), max_wait)
    return base * (1 + 0.2 * (rng.random() if rng is not None else random.random()))


def backoff_level(level: int, *, rebased: bool) -> int:
    """The backoff level (``retry_wait_ms``'s ``attempt``) after one more lost race: it grows by one,
    but not past REBASED_BACKOFF_LEVEL + 1 when the losing attempt had rebased (the fairness rule)."""
    return min(level + 1, REBASED_BACKOFF_LEVEL + 1) if rebased else level + 1


def new_commit_user(options: CoreOptions) -> str:
    """A commit user for a writer that names none: a random UUID, after ``commit.user-prefix`` and ``_`` when
    that is set (Paimon's CoreOptions.createCommitUser)."""
    prefix = options.get(CoreOptions.COMMIT_USER_PREFIX)
    return str(uuid.uuid4()) if prefix is None else f"{prefix}_{uuid.uuid4()}"


class FileStoreCommit:
    """Publishes snapshots of one table for one commit user."""

    def __init__(
        self,
        table: TableHandle,
        *,
        base_snapshot_id: int | None,
        commit_user: str | None = None,
        read_dvs: tuple[DvIndexes, str] | None = None,
        unplaced_deletes: pa.Table | None = None,
        known_snapshot: Snapshot | None = None,
    ) -> None:
        """``base_snapshot_id``: the snapshot the writer restored its buckets from, so that data another
        writer committed to them since is a conflict (read from the snapshots after it, HASH index
        included); None when there is no such base (overwrite, compaction): the latest snapshot's
        files are checked instead. ``read_dvs``: for a compaction, the deletion-vector index file of
        each bucket it read its inputs with, and which snapshot(s) that was; an input file whose
        deletion vector changed since is a conflict. ``unplaced_deletes``: keys (``_KEY_*`` columns) a
        cross-partition upsert deleted while no partition held them in its base: deleted wherever another
        writer has put them since (serial order), even if the write has no files. ``known_snapshot``: a
        snapshot the caller read recently (the writer's base, the one a compaction read): the first
        attempt looks for newer snapshots from there, one GET each (``SnapshotManager.published_after``),
        instead of reading LATEST and the latest snapshot again."""
        table.check_committable()  # before any manifest is written
        io, schema, options = table.io, table.schema, table.options
        self.io = io
        self.paths = table.paths
        self.schema = schema
        self.options = options
        self.table_name = table.name
        self.commit_user = commit_user or new_commit_user(options)
        self.snapshots = table.snapshot_manager
        self.base_snapshot_id = base_snapshot_id
        self.read_dvs = read_dvs
        self.key_types = [schema.field(k).type for k in schema.trimmed_primary_keys]
        self.manifests = ManifestWriter(
            io,
            self.paths,
            tuple(schema.field(k).type for k in schema.partition_keys),
            options.manifest_codec,
            schema.id,
        )
        self.rebaser = FileRebaser(io, self.paths, schema, options)
        # the last APPEND of a primary-key table: its messages as published (rebased files renamed)
        self.rebase: AppendRebase | None = None
        # ... and its re-route (dynamic bucket mode: HASH index; cross-partition upserts: key locations)
        self.reroute: DynamicReroute | CrossPartitionFix | None = None
        self.unplaced_deletes = unplaced_deletes
        self._tops: BucketTops = {}
        self._delta_tops: dict[int, BucketTops] = {}  # highest sequence number ADDed per bucket, by snapshot
        self._delta_totals: dict[int, list[ManifestEntry]] = {}  # one ADD per partition and bucket count
        # snapshots read by this committer's walks from a known one, by id (immutable once published)
        self._seen: dict[int, Snapshot] = {}
        # where the next attempt's walk starts: (True, snapshot or None for "no snapshot yet") when known
        self._known: tuple[bool, Snapshot | None] = (False, None)
        if known_snapshot is not None:
            self._known = (True, known_snapshot)
            self._seen[known_snapshot.id] = known_snapshot
        elif base_snapshot_id == 0:
            self._known = (True, None)
        # the base snapshot's index entries once read ((True, None): unknown, its files expired)
        self._base_index_read: tuple[bool, list[IndexManifestEntry] | None] = (False, None)
        self.published: Snapshot | None = None
        self.landed_ids: list[int] = []
        """Every snapshot this committer published, recorded the moment it landed (before anything
        that could raise): files an error path would clean up are referenced once their id is here."""
        """The last snapshot this committer published."""

    def commit(
        self, messages: Sequence[CommitMessage], *, identifier: int = BATCH_COMMIT_IDENTIFIER
    ) -> list[int]:
        """Publish the messages as up to two snapshots (APPEND, then COMPACT); return their ids.

        The APPEND of a primary-key table that another writer of its buckets got ahead of is rebased
        (``rebase.py``) rather than refused; ``self.rebase`` then names the files it published."""
        ids = []
        parts = split_changes(messages)
        only_unplaced = self.unplaced_deletes is not None and not any(c.kind == "APPEND" for c in parts)
        if only_unplaced and self._unplaced_need_deletes(messages):  # deletes of keys created since
            ids.append(self._commit_append(messages, identifier))
        for changes in parts:
            if changes.kind == "APPEND" and self.key_types:
                ids.append(self._commit_append(messages, identifier))
            else:
                ids.append(self._commit_changes(changes, identifier))
        self.unplaced_deletes = None  # they belong to the write's APPEND, not to its compaction
        return ids

    def commit_empty(self, *, identifier: int = BATCH_COMMIT_IDENTIFIER) -> int:
        """An APPEND snapshot that changes nothing (`snapshot.ignore-empty-commit` false: a commit with
        nothing to write still publishes one, as Paimon's committer then does); its id."""
        return self._commit_changes(Changes("APPEND", ()), identifier)

    def compact_manifests(self) -> int | None:
        """A COMPACT snapshot that changes no data and rewrites the latest snapshot's manifests with the
        merge of this committer's options (Paimon's compact_manifest sets the full-compaction threshold
        to 0: one merged set of ADD entries); None when there is no snapshot or the manifests are
        already one file without deletes."""
        latest = self.snapshots.latest()
        if latest is None:
            return None
        previous = self._previous_metas(latest)
        if len(previous) <= 1 and all(m.num_deleted_files == 0 for m in previous):
            return None
        return self._commit_changes(Changes("COMPACT", ()), BATCH_COMMIT_IDENTIFIER)

    def _unplaced_need_deletes(self, messages: Sequence[CommitMessage]) -> bool:
        """Whether a write with no new files must still publish deletes of its unplaced keys; if not,
        it takes effect now, before any later commit (a delete of a key nobody holds changes nothing)."""
        latest = self.snapshots.latest()
        fix = self._reroute_for(messages)
        if latest is None or not isinstance(fix, CrossPartitionFix):
            return False
        try:
            return bool(fix.messages_for(latest, self.base_snapshot_id))
        finally:
            fix.discard()  # the delete files it wrote to find out (the APPEND writes its own)

    @property
    def newest_known(self) -> Snapshot | None:
        """The newest snapshot this committer has published or read (None if it has read none yet)."""
        return self._known[1]

    @property
    def rebased_buckets(self) -> set[tuple[bytes, int]]:
        """The buckets whose new files the last APPEND rewrote above another writer's."""
        return set() if self.rebase is None else self.rebase.rebased_buckets

    def published_messages(self, messages: Sequence[CommitMessage]) -> list[CommitMessage]:
        """``messages`` as the last APPEND published them (the same unless it was rebased)."""
        return list(messages) if self.rebase is None else list(self.rebase.current)

    def _commit_append(self, messages: Sequence[CommitMessage], identifier: int) -> int:
        """The APPEND snapshot, its buckets rebased above the latest snapshot's on every attempt (and,
        in dynamic bucket mode, its new keys re-routed onto the latest HASH index first)."""
        reroute = self.reroute = self._reroute_for(messages)
        # the re-route's own list: an attempt it leaves unchanged keeps this rebase (no rewrite counted)
        self.rebase = AppendRebase(self.rebaser, reroute.current if reroute is not None else list(messages))

        def changes_for(latest: Snapshot | None) -> Changes:
            try:
                rebase = self._rerouted(latest)
            except FileNotFoundError as e:  # a snapshot expiry deleted a file the re-route reads
                raise CommitConflictError(
                    f"table {self.table_name}: re-routing this write's keys onto snapshot "
                    f"{latest.id if latest else None} failed because a file it reads was deleted "
                    f"meanwhile (a concurrent snapshot expiry: {e.filename or e}); nothing was "
                    "published, and writing the same rows again is safe"
                ) from e
            if not rebase.originals:  # unplaced deletes another writer's commit has made unneeded since
                return Changes("APPEND", ())
            if self.options.get(CoreOptions.SEQUENCE_SNAPSHOT_ORDERING):
                # the commit stamps its snapshot id into the files: above every bucket's top already
                return next(c for c in split_changes(rebase.current) if c.kind == "APPEND")
            self._tops = self._bucket_tops(
                set(rebase.lowest), latest, live=reroute.targets if reroute else set()
            )
            return next(c for c in split_changes(rebase.above(self._tops)) if c.kind == "APPEND")

        landed_before = len(self.landed_ids)
        try:
            sid = self._commit_changes(changes_for, identifier)
        except BaseException as e:
            # a snapshot that landed (an interrupt after publishing) or may have (the catalog's answer
            # was lost) references the copies: never deleted then
            if not isinstance(e, CommitStateUnknownError) and len(self.landed_ids) == landed_before:
                self._discard(self.rebase.discard_copies())
                if reroute is not None:
                    reroute.discard()
            raise
        # the writer's files (and earlier attempts' copies) replaced by their rebased/re-routed copies
        superseded = set(self.rebase.superseded()) | set(self.rebase.stale)
        superseded |= set(reroute.superseded(self.rebase.current)) if reroute is not None else set()
        self._discard(sorted(superseded))
        return sid

    def _reroute_for(self, messages: Sequence[CommitMessage]) -> DynamicReroute | CrossPartitionFix | None:
        """What re-routes a dynamic-bucket write's keys onto the latest snapshot (None in other modes)."""
        if self.options.bucket != -1:
            return None
        if is_cross_partition(self.schema, self.options):
            keys = KeysSinceBase(
                KeyReader(self.rebaser), self.snapshots, self.table_name, unplaced=self.unplaced_deletes
            )
            return CrossPartitionFix(self.rebaser, keys, list(messages))
        return DynamicReroute(self.rebaser, list(messages))

    def _rerouted(self, latest: Snapshot | None) -> AppendRebase:
        """The APPEND's messages re-routed onto ``latest``: a new AppendRebase of them when the re-route
        changed (its copies of the previous messages discarded)."""
        rebase, reroute = self.rebase, self.reroute
        assert rebase is not None
        if reroute is None or latest is None:
            return rebase
        base = self.base_snapshot_id
        if isinstance(reroute, CrossPartitionFix):
            routed = reroute.messages_for(latest, base)
        else:
            self._refuse_overwrites_since_base(latest, {m.partition for m in reroute.originals})
            # None (unknown): re-route onto the latest
            routed = reroute.messages_for(self._base_index(), self._index_entries(latest))
        if routed is not rebase.originals:
            self._discard(rebase.discard_copies())
            rebase = self.rebase = AppendRebase(self.rebaser, routed, rewrites=rebase.rewrites + 1)
        return rebase

    def _refuse_overwrites_since_base(self, latest: Snapshot, partitions: set[bytes]) -> None:
        """A dynamic-bucket write placed rows of keys it did not add to the index (updates, deletes)
        by the base's HASH files; an OVERWRITE of their partition since re-indexed it from scratch,
        so such a row could end up live next to the key's new bucket, or outside the index."""
        base = self.base_snapshot_id
        for sid in range(base + 1 if base is not None else latest.id + 1, latest.id + 1):
            snapshot = self._snapshot_since_base(sid)  # the walk's copy even after it expired
            if snapshot is None or snapshot.commit_kind != "OVERWRITE":
                continue  # expired: unknown (the re-route then works from the latest index alone)
            entries = self._delta_entries(sid)
            if entries is not None and any(e.partition in partitions for e in entries):
                raise CommitConflictError(
                    f"table {self.table_name}: snapshot {sid} overwrote a partition this dynamic-bucket "
                    f"write writes after its base snapshot {base}; the write placed its rows by the "
                    "base's HASH index, which the overwrite replaced, so a key could end up live in two "
                    "buckets. Nothing was published: run the write again (it places its keys by the "
                    "latest index)"
                )

    def _bucket_tops(
        self, touched: set[tuple[bytes, int]], latest: Snapshot | None, *, live: set[tuple[bytes, int]]
    ) -> BucketTops:
        """The highest sequence number of each touched bucket that another commit added since this
        writer's base snapshot (the bucket's live files when the base is unknown or expired since, and
        for the ``live`` buckets: those that received re-routed rows, whose numbers this writer never
        restored)."""
        if latest is None or not touched:
            return {}
        base = self.base_snapshot_id
        live = touched if base is None else live & touched
        tops: BucketTops = {}
        if base is not None and live != touched:
            for sid in range(base + 1, latest.id + 1):
                added = self._added_tops(sid)
                if added is None:
                    live, tops = touched, {}
                    break
                for key in (touched - live) & added.keys():
                    tops[key] = max(tops.get(key, -1), added[key])
        if live:
            tops |= bucket_tops(
                live_entries(
                    self.io, self.paths, latest, entry_filter=lambda e: (e.partition, e.bucket) in live
                )
            )
        return tops

    def _added_tops(self, sid: int) -> BucketTops | None:
        """Highest sequence number ADDed per bucket by snapshot ``sid`` (None: expired)."""
        if sid not in self._delta_tops:
            entries = self._delta_entries(sid)
            if entries is None:
                return None
            self._delta_tops[sid] = bucket_tops([e for e in entries if e.kind == FileKind.ADD])
        return self._delta_tops[sid]

    def _base_index(self) -> list[IndexManifestEntry] | None:
        """The index entries of this writer's base snapshot (none for base 0), read once, so that the
        re-route and the HASH check of every attempt judge by the same base. The base may have expired
        since and still be known (the snapshot this committer was given or walked from: snapshots are
        immutable); None when unknown: no base, or it expired, or its index manifest went with it,
        before it was read."""
        done, entries = self._base_index_read
        if done:
            return entries
        base = self.base_snapshot_id
        if base == 0:
            entries = []
        elif base is not None and (snapshot := self._snapshot_since_base(base)) is not None:
            try:
                entries = self._index_entries(snapshot)
            except FileNotFoundError:  # an expiry deleted it
                entries = None
        self._base_index_read = (True, entries)
        return entries

    def _snapshot_since_base(self, sid: int) -> Snapshot | None:
        """Snapshot ``sid`` (published after this writer's base), None when it has expired."""
        seen = self._seen.get(sid)
        if seen is not None:
            return seen
        return self.snapshots.snapshot(sid) if self.snapshots.snapshot_exists(sid) else None

    def _delta_entries(self, sid: int) -> list[ManifestEntry] | None:
        """The entries snapshot ``sid`` committed (its delta manifests), None when it has expired."""
        snapshot = self._snapshot_since_base(sid)
        if snapshot is None:
            return None
        try:
            metas = read_manifest_list(self.io, self.paths.manifest(snapshot.delta_manifest_list))
            return [e for m in metas for e in read_manifest(self.io, self.paths.manifest(m.file_name))]
        except FileNotFoundError:  # an expiry is deleting it
            return None

    def overwrite(
        self,
        messages: Sequence[CommitMessage],
        *,
        replaces: Callable[[bytes], bool],
        identifier: int = BATCH_COMMIT_IDENTIFIER,
        upgrade: bool = False,
    ) -> int:
        """One OVERWRITE snapshot: every live file (and index file) of the partitions ``replaces``
        accepts is deleted, the messages' new files are added. Re-based on each attempt. ``upgrade``: the
        write compacted nothing, so with ``overwrite-upgrade`` its files may move to the top level."""
        adds = [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
            for m in messages
            for f in m.new_files
        ]
        if upgrade and self.options.get(CoreOptions.OVERWRITE_UPGRADE):
            adds = upgraded(adds, self.key_types, self.options.num_levels - 1)

        # postponed rows (bucket -2) are overwritten only by a postpone-bucket write, as in Paimon: a
        # rescale into real buckets keeps those not compacted yet (its read does not see them)
        keep_postponed = self.options.bucket != POSTPONE_BUCKET

        def changes_for(latest: Snapshot | None) -> Changes:
            deletes = [
                e.with_kind(FileKind.DELETE)
                for e in live_entries(
                    self.io,
                    self.paths,
                    latest,
                    entry_filter=lambda e: (
                        replaces(e.partition) and not (keep_postponed and e.bucket == POSTPONE_BUCKET)
                    ),
                )
            ]
            index_deletes: list[IndexManifestEntry] = []
            if latest is not None and latest.index_manifest:
                index_deletes = [
                    IndexManifestEntry(FileKind.DELETE, ie.partition, ie.bucket, ie.index_file)
                    for ie in read_index_manifest(self.io, self.paths.manifest(latest.index_manifest))
                    if replaces(ie.partition)
                ]
            index_adds = [  # the HASH index of the rewritten dynamic buckets
                IndexManifestEntry(FileKind.ADD, m.partition, m.bucket, f)
                for m in messages
                for f in m.new_index_files
            ]
            return Changes("OVERWRITE", tuple(deletes + adds), tuple(index_deletes + index_adds))

        return self._commit_changes(changes_for, identifier)

    def remove_files(self, messages: Sequence[CommitMessage]) -> int | None:
        """One OVERWRITE snapshot that only drops the messages' ``compact_before`` files (DELETE
        entries), as Paimon commits a data increment's deleted files (remove_unexisting_files); each
        attempt drops those still live in the latest snapshot. None when none of them is live."""
        wanted = {(m.partition, m.bucket, f.file_name) for m in messages for f in m.compact_before}

        def deletes(latest: Snapshot | None) -> list[ManifestEntry]:
            return [
                e.with_kind(FileKind.DELETE)
                for e in live_entries(
                    self.io,
                    self.paths,
                    latest,
                    entry_filter=lambda e: (e.partition, e.bucket, e.file.file_name) in wanted,
                )
            ]

        if not deletes(self._latest()):
            return None
        return self._commit_changes(
            lambda latest: Changes("OVERWRITE", tuple(deletes(latest))), BATCH_COMMIT_IDENTIFIER
        )

    def _commit_changes(
        self, changes: Changes | Callable[[Snapshot | None], Changes], identifier: int
    ) -> int:
        """Publish one snapshot; ``changes`` may be a function of the latest snapshot (re-based per attempt).

        What does not depend on the latest snapshot (the delta and changelog manifests and their
        lists) is written once, before the race, and again only when a rebase changed it; files of
        lost attempts are deleted together when the commit ends (one request on S3), so an attempt's
        window from reading the latest snapshot to publishing the next holds little more than the
        base manifest list and the snapshot itself."""
        lists = DeltaLists(self.manifests)
        retries = self.options.commit_max_retries
        min_wait = self.options.get(CoreOptions.COMMIT_MIN_RETRY_WAIT)
        max_wait = self.options.get(CoreOptions.COMMIT_MAX_RETRY_WAIT)
        timeout = self.options.get(CoreOptions.COMMIT_TIMEOUT)
        start = time.monotonic()
        attempt = level = 0
        lost: list[str] = []  # files of lost attempts
        written: list[str] = []
        landed = False
        try:
            if isinstance(changes, Changes):
                lists.prepare(changes.entries, changes.changelog)
            while True:
                attempt += 1
                written = []
                rewrites = self.rebase.rewrites if self.rebase is not None else 0
                latest = self._latest()
                current = changes if isinstance(changes, Changes) else changes(latest)
                if self.options.get(CoreOptions.SEQUENCE_SNAPSHOT_ORDERING) and current.kind != "COMPACT":
                    next_id = (latest.id + 1) if latest else 1
                    current = replace(current, entries=stamp_snapshot_id(current.entries, next_id))
                if (
                    self.options.get(CoreOptions.MANIFEST_DELETE_FILE_DROP_STATS)
                    and current.kind == "COMPACT"
                ):
                    current = replace(current, entries=without_read_file_stats(current.entries))
                delta, changelog = lists.prepare(current.entries, current.changelog)
                self._check_conflicts(current, latest)
                snapshot = self._build_snapshot(current, latest, delta, changelog, identifier, written)
                published, holder = self.snapshots.publish_or_read(snapshot, current.entries, latest)
                if published:
                    landed = True
                    self.landed_ids.append(snapshot.id)
                    self.published = self._seen[snapshot.id] = snapshot
                    self._known = (True, snapshot)
                    if self.snapshots.catalog_env is None:  # a catalog that publishes keeps the hints
                        self._write_hints(snapshot.id, first=latest is None)
                    lost += lists.unused(current.entries, current.changelog)
                    return snapshot.id
                lost += [self.paths.manifest(name) for name in written]
                if holder is not None:  # the snapshot that took the id: the next walk starts there
                    self._seen[holder.id] = holder
                    self._known = (True, holder)
                elapsed_ms = (time.monotonic() - start) * 1000
                rebased = self.rebase is not None and self.rebase.rewrites > rewrites
                level = backoff_level(level, rebased=rebased)
                wait_ms = retry_wait_ms(level, min_wait, max_wait)
                out_of_retries = attempt > retries
                if out_of_retries or (timeout is not None and elapsed_ms + wait_ms > timeout):
                    break
                time.sleep(wait_ms / 1000)
        except BaseException as e:
            # once published (or perhaps published: the catalog's answer was lost), its files are
            # referenced: never deleted here
            if not landed and not isinstance(e, CommitStateUnknownError):
                lost += lists.all() + [self.paths.manifest(name) for name in written]
            raise
        finally:
            self._discard(lost)
        self._discard(lists.all())
        why = (
            f"commit.max-retries is {retries}"
            if out_of_retries
            else f"another wait ({wait_ms:.0f} ms) would pass commit.timeout ({timeout} ms)"
        )
        raise CommitConflictError(
            f"table {self.table_name}: gave up publishing a {current.kind} snapshot after {attempt} "
            f"attempts in {elapsed_ms / 1000:.1f} s ({why}): each attempt lost the race for the next "
            f"snapshot id to another writer (the last one lost: snapshot {snapshot.id}); nothing was "
            "published. The retries are set by commit.max-retries "
            f"({retries}), commit.timeout ({'none' if timeout is None else f'{timeout} ms'}), "
            f"commit.min-retry-wait ({min_wait} ms) and commit.max-retry-wait ({max_wait} ms)"
        )

    def _discard(self, paths: list[str]) -> None:
        """Delete files no snapshot references; a failure only warns (they are orphans then)."""
        try:
            self.io.delete_files(paths)
        except Exception as e:
            warnings.warn(
                f"table {self.table_name}: could not delete {len(paths)} unreferenced file(s) ({e}); "
                "remove_orphan_files removes them",
                stacklevel=3,
            )

    def _latest(self) -> Snapshot | None:
        """The latest snapshot for the next attempt: found by walking from the newest snapshot this
        committer knows (its base, or the one that beat its last attempt), the walk's snapshots kept
        for the checks against what was published since; LATEST and the latest snapshot otherwise."""
        known, snapshot = self._known
        newer = self.snapshots.published_after(snapshot.id if snapshot is not None else 0) if known else None
        if newer is None:
            latest = self.snapshots.latest()
        else:
            self._seen.update((s.id, s) for s in newer)
            latest = newer[-1] if newer else snapshot
        self._known = (True, latest)
        return latest

    def _write_hints(self, snapshot_id: int, *, first: bool) -> None:
        """Update LATEST (and EARLIEST for a first snapshot). The snapshot is published whatever happens
        here: hints are only hints, readers verify them, so a failure must not fail the commit."""
        try:
            self.snapshots.write_latest_hint(snapshot_id)
            if first:
                self.snapshots.write_earliest_hint(snapshot_id)
        except Exception as e:
            warnings.warn(
                f"table {self.table_name}: snapshot {snapshot_id} is committed but its hint file "
                f"could not be written ({e})",
                stacklevel=3,
            )

    def _previous_metas(self, latest: Snapshot | None) -> list[ManifestFileMeta]:
        if latest is None:
            return []
        metas = read_manifest_list(self.io, self.paths.manifest(latest.base_manifest_list))
        metas += read_manifest_list(self.io, self.paths.manifest(latest.delta_manifest_list))
        return metas

    def _check_conflicts(self, changes: Changes, latest: Snapshot | None) -> None:
        """Conflict detection against the latest snapshot.

        COMPACT commits get Paimon's checks. An APPEND of a primary-key table was rebased above the
        sequence numbers other writers gave its buckets since this writer's base (``_commit_append``);
        what is checked is that it is, and that no other writer re-indexed its dynamic buckets.
        """
        if latest is None:
            return
        strict = self._strict_mode_problem(changes, latest)
        if strict:
            raise CommitConflictError(f"table {self.table_name}: {strict}")
        if changes.kind == "APPEND" and not self.key_types:
            problems = self._bucket_count_problems(changes, latest)
        elif changes.kind == "APPEND":
            problems = sequence_problems(self._tops, changes.entries)
            problems += self._bucket_count_problems(changes, latest)
            problems += self._hash_index_conflicts(changes, latest)
            problems += self._postpone_bucket_count_conflicts(changes, latest)
        else:
            touched = {(e.partition, e.bucket) for e in changes.entries}
            base = [
                e
                for meta in self._previous_metas(latest)
                for e in read_manifest(self.io, self.paths.manifest(meta.file_name))
                if (e.partition, e.bucket) in touched
            ]
            problems = detect_conflicts(base, list(changes.entries), self.key_types)
            problems += self._index_conflicts(changes, latest)
            if self.read_dvs is not None:
                read, when = self.read_dvs
                latest_dvs = {
                    (e.partition, e.bucket): e.index_file
                    for e in self._index_entries(latest)
                    if e.index_file.index_type == DELETION_VECTORS_INDEX
                }
                problems += deletion_vector_problems(changes.entries, read, latest_dvs, read_snapshot=when)
            if self.rebase is not None:  # a write's own compaction saw its buckets as of its base
                problems += self._changed_since_base(touched, latest)
        if problems:
            raise CommitConflictError(f"table {self.table_name}: {problems[0]}")

    def _strict_mode_problem(self, changes: Changes, latest: Snapshot) -> str | None:
        """Paimon's strict mode (`commit.strict-mode.last-safe-snapshot`): another user's COMPACT or
        OVERWRITE snapshot after the safe one fails the commit, and so does their APPEND of files in
        real buckets when this commit is an OVERWRITE (it would replace rows it never read)."""
        safe = self.options.get(CoreOptions.COMMIT_STRICT_MODE_LAST_SAFE_SNAPSHOT)
        if safe is None:
            return None
        key = CoreOptions.COMMIT_STRICT_MODE_LAST_SAFE_SNAPSHOT.key
        for sid in range(safe + 1, latest.id + 1):
            snapshot = self._snapshot_since_base(sid)
            if snapshot is None:
                return f"snapshot {sid}, committed after the last safe snapshot {safe} ({key}), has expired"
            if snapshot.commit_user == self.commit_user:
                continue
            if snapshot.commit_kind in ("COMPACT", "OVERWRITE"):
                return (
                    f"another writer committed {snapshot.commit_kind} snapshot {sid} after the last safe "
                    f"snapshot {safe}: giving up as {key} is set"
                )
            if snapshot.commit_kind == "APPEND" and changes.kind == "OVERWRITE":
                entries = self._delta_entries(sid)
                if entries is None or any(e.bucket >= 0 for e in entries):
                    return (
                        f"another writer committed APPEND snapshot {sid} (files in fixed buckets) after the "
                        f"last safe snapshot {safe}: giving up as {key} is set"
                    )
        return None

    def _bucket_count_problems(self, changes: Changes, latest: Snapshot) -> list[str]:
        """Partitions this APPEND writes that other commits filled with files of another bucket count
        since its base (checked on their delta manifests; on the latest live files of those partitions
        when the base is unknown or a snapshot since has expired)."""
        mine = partition_totals(changes.entries)
        base = self.base_snapshot_id
        if not mine or latest.id == base:
            return []
        added: list[ManifestEntry] | None = [] if base is not None else None
        for sid in range(base + 1 if base is not None else latest.id + 1, latest.id + 1):
            if sid not in self._delta_totals:  # read once across the attempts
                entries = self._delta_entries(sid)
                if entries is None:
                    added = None
                    break
                firsts = {(e.partition, e.total_buckets): e for e in entries if e.kind == FileKind.ADD}
                self._delta_totals[sid] = list(firsts.values())
            if added is not None:
                added += [e for e in self._delta_totals[sid] if e.partition in mine]
        if added is None:
            added = live_entries(self.io, self.paths, latest, entry_filter=lambda e: e.partition in mine)
        return bucket_count_problems(mine, added)

    def _postpone_bucket_count_conflicts(self, changes: Changes, latest: Snapshot) -> list[str]:
        """A postpone table's batch write chose each partition's bucket count from its base snapshot; a
        commit since (a compaction of postponed rows, a rescale) may have given the partition another
        count: Java's batch sink checks the APPEND for conflicts (``appendCommitCheckConflict``) for this."""
        if self.options.bucket != POSTPONE_BUCKET or latest.id == self.base_snapshot_id:
            return []
        partitions = {e.partition for e in changes.entries if e.bucket != POSTPONE_BUCKET}
        if not partitions:
            return []
        base = [
            e
            for meta in self._previous_metas(latest)
            for e in read_manifest(self.io, self.paths.manifest(meta.file_name))
            if e.partition in partitions and e.bucket != POSTPONE_BUCKET
        ]
        return detect_conflicts(base, list(changes.entries), ())

    def _changed_since_base(self, touched: set[tuple[bytes, int]], latest: Snapshot) -> list[str]:
        """Another commit changed these buckets after this writer's base: a compaction computed from the
        base (deletion vectors included) is stale even if its input files are all still live."""
        base = self.base_snapshot_id
        if base is None:
            return ["the compaction has no base snapshot to check against"]
        for sid in range(base + 1, latest.id + 1):
            snapshot = self._snapshot_since_base(sid)
            if snapshot is not None and snapshot.commit_user == self.commit_user:
                continue
            entries = self._delta_entries(sid)
            if entries is None:
                return [f"snapshot {sid}, committed after this writer's base {base}, has expired"]
            for e in entries:
                if (e.partition, e.bucket) in touched:
                    return [
                        f"bucket {e.bucket} was changed by snapshot {sid} after this writer's base {base}"
                    ]
        return []

    def _hash_index_conflicts(self, changes: Changes, latest: Snapshot) -> list[str]:
        """HASH files this commit replaces must be those of the snapshot its keys were routed by: the
        base snapshot, or the latest one when the APPEND was re-routed onto it (dynamic bucket)."""
        if self.base_snapshot_id is None or not changes.index_changes or latest.id == self.base_snapshot_id:
            return []
        if isinstance(self.reroute, DynamicReroute):
            partitions = self.reroute.partitions
            if self.reroute.basis is not None and self.reroute.basis == hash_view(
                self._index_entries(latest), partitions
            ):
                return []
        # the base as the re-route saw it: known (given, or walked from) even after an expiry, so an
        # APPEND the re-route left alone because its partitions' HASH files did not change since is not
        # refused; unknown only when the re-route itself worked from the latest index alone
        base = self._base_index()
        if base is None:
            return [f"snapshot {self.base_snapshot_id}, the base of this HASH index, has expired - retry"]
        return hash_index_conflicts(base, self._index_entries(latest), changes.index_changes)

    def _index_conflicts(self, changes: Changes, latest: Snapshot) -> list[str]:
        """An index change must replace the bucket's current index file, not one another commit replaced."""
        if not changes.index_changes:
            return []
        current = self._index_entries(latest)
        live = {(e.partition, e.bucket, e.index_file.index_type): e.index_file.file_name for e in current}
        deleted = {
            (e.partition, e.bucket, e.index_file.index_type)
            for e in changes.index_changes
            if e.kind == FileKind.DELETE
        }
        problems = []
        for e in changes.index_changes:
            key = (e.partition, e.bucket, e.index_file.index_type)
            if e.kind == FileKind.DELETE and live.get(key) != e.index_file.file_name:
                problems.append(
                    f"deletion-vector index of bucket {e.bucket} changed concurrently "
                    f"({e.index_file.file_name} is no longer current)"
                )
            elif e.kind == FileKind.ADD and key in live and key not in deleted:
                problems.append(f"deletion-vector index of bucket {e.bucket} was created concurrently")
        return problems

    def _index_entries(self, snapshot: Snapshot) -> list[IndexManifestEntry]:
        if not snapshot.index_manifest:
            return []
        return read_index_manifest(self.io, self.paths.manifest(snapshot.index_manifest))

    def _build_snapshot(
        self,
        changes: Changes,
        latest: Snapshot | None,
        delta: tuple[str, int],
        changelog: tuple[str, int] | None,
        identifier: int,
        written: list[str],
    ) -> Snapshot:
        """The next snapshot on top of ``latest``: its base manifest list (and merged manifests, and
        index manifest) written here, their names added to ``written``; ``delta`` and ``changelog``
        are the manifest lists already written for the changes (name, size)."""
        previous = self._previous_metas(latest)
        base, merged_names = self.manifests.merge(
            previous,
            target_size=self.options.manifest_target_size,
            min_count=self.options.manifest_merge_min_count,
            full_threshold=self.options.manifest_full_compaction_size,
        )
        written.extend(merged_names)
        base_name = self.paths.new_manifest_list_name()
        base_size = write_manifest_list(
            self.io, self.paths.manifest(base_name), base, codec=self.options.manifest_codec
        )
        written.append(base_name)
        delta_name, delta_size = delta
        changelog_name, changelog_size = changelog if changelog is not None else (None, None)
        index_manifest = latest.index_manifest if latest else None
        if changes.index_changes:
            previous_index = (
                read_index_manifest(self.io, self.paths.manifest(index_manifest)) if index_manifest else []
            )
            combined = combine_index_entries(previous_index, list(changes.index_changes))
            index_manifest = self.paths.new_index_manifest_name()
            write_index_manifest(
                self.io, self.paths.manifest(index_manifest), combined, codec=self.options.manifest_codec
            )
            written.append(index_manifest)
        delta_count = sum(
            e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in changes.entries
        )
        return Snapshot(
            version=3,
            id=(latest.id + 1) if latest else 1,
            schema_id=self.schema.id,
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_name,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_name,
            changelog_manifest_list_size=changelog_size,
            changelog_record_count=(
                sum(e.file.row_count for e in changes.changelog) if changes.changelog else None
            ),
            index_manifest=index_manifest,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=changes.kind,
            time_millis=clock.epoch_millis(),
            total_record_count=((latest.total_record_count or 0) if latest else 0) + delta_count,
            delta_record_count=delta_count,
            watermark=latest.watermark if latest else None,
            next_row_id=latest.next_row_id if latest and latest.next_row_id is not None else 0,
            uuid=str(uuid.uuid4()),
            properties=self._sequence_properties(latest, previous, changes.entries),
        )

    def _sequence_properties(
        self, latest: Snapshot | None, previous: list[ManifestFileMeta], entries: Sequence[ManifestEntry]
    ) -> Mapping[str, str] | None:
        """``write.sequence-number-init-mode`` = snapshot: the highest sequence number handed out so far, taken
        from the latest snapshot's properties, else from every file its manifests add (as Paimon's commit)."""
        if self.options.get(CoreOptions.WRITE_SEQUENCE_NUMBER_INIT_MODE) != "snapshot":
            return None
        latest_max = recorded_max_sequence_number(latest)
        if latest_max is None and latest is not None:
            latest_max = max_added_sequence_number(
                e for m in previous for e in read_manifest(self.io, self.paths.manifest(m.file_name))
            )
        return merged_properties(latest_max, entries)
