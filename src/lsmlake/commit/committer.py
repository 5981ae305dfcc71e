"""The committer: the only writer of manifests and snapshots; publishes create-only, retries on a race."""

from __future__ import annotations

import random
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lsmlake.bucket.cross_partition import is_cross_partition
from lsmlake.commit.conflicts import (
    BucketTops,
    DvIndexes,
    bucket_tops,
    deletion_vector_problems,
    detect_conflicts,
    sequence_problems,
)
from lsmlake.commit.cross_partition_fix import CrossPartitionFix
from lsmlake.commit.hash_index_conflicts import hash_index_conflicts
from lsmlake.commit.key_overlap import KeyReader, KeysSinceBase
from lsmlake.commit.manifest_files import ManifestWriter
from lsmlake.commit.rebase import AppendRebase, FileRebaser
from lsmlake.commit.reroute import DynamicReroute, hash_view
from lsmlake.core import clock
from lsmlake.core.options import CoreOptions
from lsmlake.errors import CommitConflictError
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
from lsmlake.metadata.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from lsmlake.metadata.table_handle import TableHandle


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
    ) -> None:
        """``base_snapshot_id``: the snapshot the writer restored its buckets from, so that data another
        writer committed to them since is a conflict (read from the snapshots after it, HASH index
        included); None when there is no such base (overwrite, compaction): the latest snapshot's
        files are checked instead. ``read_dvs``: for a compaction, the deletion-vector index file of
        each bucket it read its inputs with, and which snapshot(s) that was; an input file whose
        deletion vector changed since is a conflict. ``unplaced_deletes``: keys (``_KEY_*`` columns) a
        cross-partition upsert deleted while no partition held them in its base: deleted wherever another
        writer has put them since (serial order), even if the write has no files."""
        io, schema, options = table.io, table.schema, table.options
        self.io = io
        self.paths = table.paths
        self.schema = schema
        self.options = options
        self.table_name = table.name
        self.commit_user = commit_user or str(uuid.uuid4())
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
        """An APPEND snapshot that changes nothing (`commit.force-create-snapshot`: a commit with
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
        needed = bool(fix.messages_for(latest, self.base_snapshot_id))
        fix.discard()
        return needed

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
        self.rebase = AppendRebase(self.rebaser, list(messages))
        reroute = self.reroute = self._reroute_for(messages)

        def changes_for(latest: Snapshot | None) -> Changes:
            rebase = self._rerouted(latest)
            if not rebase.originals:  # unplaced deletes another writer's commit has made unneeded since
                return Changes("APPEND", ())
            self._tops = self._bucket_tops(
                set(rebase.lowest), latest, live=reroute.targets if reroute else set()
            )
            return next(c for c in split_changes(rebase.above(self._tops)) if c.kind == "APPEND")

        try:
            sid = self._commit_changes(changes_for, identifier)
        except BaseException:
            self.rebase.discard_copies()
            if reroute is not None:
                reroute.discard()
            raise
        # the writer's files (and earlier attempts' copies) replaced by their rebased/re-routed copies
        superseded = set(self.rebase.superseded())
        superseded |= set(reroute.superseded(self.rebase.current)) if reroute is not None else set()
        for path in sorted(superseded):
            self.io.delete_file(path)
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
            base_entries: list[IndexManifestEntry] | None = None  # unknown: re-route onto the latest
            if base == 0:
                base_entries = []
            elif base is not None and self.snapshots.snapshot_exists(base):
                base_entries = self._index_entries(self.snapshots.snapshot(base))
            routed = reroute.messages_for(base_entries, self._index_entries(latest))
        if routed is not rebase.originals:
            rebase.discard_copies()
            rebase = self.rebase = AppendRebase(self.rebaser, routed, rewrites=rebase.rewrites + 1)
        return rebase

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
            if not self.snapshots.snapshot_exists(sid):
                return None
            snapshot = self.snapshots.snapshot(sid)
            metas = read_manifest_list(self.io, self.paths.manifest(snapshot.delta_manifest_list))
            entries = [e for m in metas for e in read_manifest(self.io, self.paths.manifest(m.file_name))]
            self._delta_tops[sid] = bucket_tops([e for e in entries if e.kind == FileKind.ADD])
        return self._delta_tops[sid]

    def overwrite(
        self,
        messages: Sequence[CommitMessage],
        *,
        replaces: Callable[[bytes], bool],
        identifier: int = BATCH_COMMIT_IDENTIFIER,
    ) -> int:
        """One OVERWRITE snapshot: every live file (and index file) of the partitions ``replaces``
        accepts is deleted, the messages' new files are added. Re-based on each attempt."""
        adds = [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
            for m in messages
            for f in m.new_files
        ]

        def changes_for(latest: Snapshot | None) -> Changes:
            deletes = [
                e.with_kind(FileKind.DELETE)
                for e in live_entries(
                    self.io, self.paths, latest, entry_filter=lambda e: replaces(e.partition)
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

    def _commit_changes(
        self, changes: Changes | Callable[[Snapshot | None], Changes], identifier: int
    ) -> int:
        """Publish one snapshot; ``changes`` may be a function of the latest snapshot (re-based per attempt)."""
        fixed = changes if isinstance(changes, Changes) else None
        delta_metas = self.manifests.write(list(fixed.entries)) if fixed is not None and fixed.entries else []
        retries = self.options.commit_max_retries
        min_wait = self.options.get(CoreOptions.COMMIT_MIN_RETRY_WAIT)
        max_wait = self.options.get(CoreOptions.COMMIT_MAX_RETRY_WAIT)
        timeout = self.options.get(CoreOptions.COMMIT_TIMEOUT)
        start = time.monotonic()
        attempt = level = 0
        while True:
            attempt += 1
            rewrites = self.rebase.rewrites if self.rebase is not None else 0
            latest = self.snapshots.latest()
            written: list[str] = []
            if fixed is not None:
                current = fixed
            else:
                assert callable(changes)
                current = changes(latest)
                delta_metas = self.manifests.write(list(current.entries)) if current.entries else []
                written += [m.file_name for m in delta_metas]
            try:
                self._check_conflicts(current, latest)
            except CommitConflictError:
                for m in delta_metas:
                    self.io.delete_file(self.paths.manifest(m.file_name))
                raise
            snapshot = self._build_snapshot(current, latest, delta_metas, identifier, written)
            if self.snapshots.try_publish(snapshot, current.entries):
                self._write_hints(snapshot.id, first=latest is None)
                return snapshot.id
            for name in written:
                self.io.delete_file(self.paths.manifest(name))
            elapsed_ms = (time.monotonic() - start) * 1000
            rebased = self.rebase is not None and self.rebase.rewrites > rewrites
            level = backoff_level(level, rebased=rebased)
            wait_ms = retry_wait_ms(level, min_wait, max_wait)
            out_of_retries = attempt > retries
            if out_of_retries or (timeout is not None and elapsed_ms + wait_ms > timeout):
                break
            time.sleep(wait_ms / 1000)
        for m in delta_metas if fixed is not None else []:
            self.io.delete_file(self.paths.manifest(m.file_name))
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
        if latest is None or (changes.kind == "APPEND" and not self.key_types):
            return
        if changes.kind == "APPEND":
            problems = sequence_problems(self._tops, changes.entries)
            problems += self._hash_index_conflicts(changes, latest)
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

    def _changed_since_base(self, touched: set[tuple[bytes, int]], latest: Snapshot) -> list[str]:
        """Another commit changed these buckets after this writer's base: a compaction computed from the
        base (deletion vectors included) is stale even if its input files are all still live."""
        base = self.base_snapshot_id
        if base is None:
            return ["the compaction has no base snapshot to check against"]
        for sid in range(base + 1, latest.id + 1):
            if not self.snapshots.snapshot_exists(sid):
                return [f"snapshot {sid}, committed after this writer's base {base}, has expired"]
            snapshot = self.snapshots.snapshot(sid)
            if snapshot.commit_user == self.commit_user:
                continue
            metas = read_manifest_list(self.io, self.paths.manifest(snapshot.delta_manifest_list))
            for meta in metas:
                for e in read_manifest(self.io, self.paths.manifest(meta.file_name)):
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
        if self.base_snapshot_id > 0 and not self.snapshots.snapshot_exists(self.base_snapshot_id):
            return [f"snapshot {self.base_snapshot_id}, the base of this HASH index, has expired - retry"]
        base = self.snapshots.snapshot(self.base_snapshot_id) if self.base_snapshot_id > 0 else None

        def entries(s: Snapshot | None) -> list[IndexManifestEntry]:
            if s is None or not s.index_manifest:
                return []
            return read_index_manifest(self.io, self.paths.manifest(s.index_manifest))

        return hash_index_conflicts(entries(base), entries(latest), changes.index_changes)

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
        delta_metas: list[ManifestFileMeta],
        identifier: int,
        written: list[str],
    ) -> Snapshot:
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
        delta_name = self.paths.new_manifest_list_name()
        delta_size = write_manifest_list(
            self.io, self.paths.manifest(delta_name), delta_metas, codec=self.options.manifest_codec
        )
        written += [base_name, delta_name]
        changelog_name: str | None = None
        changelog_size: int | None = None
        if changes.changelog:
            changelog_metas = self.manifests.write(list(changes.changelog))
            changelog_name = self.paths.new_manifest_list_name()
            changelog_size = write_manifest_list(
                self.io,
                self.paths.manifest(changelog_name),
                changelog_metas,
                codec=self.options.manifest_codec,
            )
            written += [m.file_name for m in changelog_metas] + [changelog_name]
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
        )
