"""Snapshot expiration (format.md §8.6): pick the range to expire, plan the files it frees, delete them."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from lsmlake.core import clock
from lsmlake.core.options import CoreOptions
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.maintenance.changelog_expire import (
    changelog_decoupled,
    expire_changelogs,
    keep_changelog,
    without_changelog,
)
from lsmlake.maintenance.empty_dirs import remove_empty_data_dirs
from lsmlake.maintenance.files import FileLocator, SnapshotReader
from lsmlake.maintenance.planning import FileSets, expire_candidates, expire_end, plan_deletion
from lsmlake.maintenance.protect import (
    collect_holders,
    delete_files,
    holder_snapshots,
    read_snapshots,
    retained_protection,
)
from lsmlake.metadata.consumers import min_next_snapshot
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import read_tags

DEFAULT_EXPIRE_LIMIT = 50
"""`snapshot.expire.limit` (CoreOptions: 50; the docs table's 10 is stale)."""


@dataclass(frozen=True)
class ExpireResult:
    """What one expiration run removed."""

    expired_snapshot_ids: tuple[int, ...] = ()
    earliest_snapshot_id: int | None = None
    """The earliest snapshot after the run (None for a table without snapshots)."""
    deleted: FileSets = field(default_factory=FileSets)
    refused: tuple[str, ...] = ()
    """Paths the run's metadata named outside the table and its external roots: left alone."""

    @property
    def deleted_files(self) -> list[str]:
        return sorted(self.deleted.all())


class _SnapshotTimes(Mapping[int, int]):
    """Commit times read on demand (the planner looks at only a few snapshots)."""

    def __init__(self, manager: SnapshotManager) -> None:
        self.manager = manager
        self._cache: dict[int, int] = {}

    def __getitem__(self, sid: int) -> int:
        if sid not in self._cache:
            try:
                # the planner asks only for ids from EARLIEST on: no need to read the hint again
                self._cache[sid] = self.manager.snapshot(sid, expired=True).time_millis
            except NoSuchSnapshotError:
                raise KeyError(sid) from None
        return self._cache[sid]

    def __iter__(self) -> Iterator[int]:
        return iter(self.manager.snapshot_ids())

    def __len__(self) -> int:
        return len(self.manager.snapshot_ids())


def _clean_empty_directories(options: CoreOptions) -> bool:
    """`snapshot.clean-empty-directories`, or its older name when only that is set."""
    return options.get(CoreOptions.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES)


def expire_snapshots(
    table: TableHandle,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    older_than_ms: int | None = None,
    max_deletes: int | None = None,
    latest: int | None = None,
) -> ExpireResult:
    """Expire old snapshots and delete the files only they needed (``latest``: the latest snapshot id
    when the caller knows it, as a writer that just committed it does; a newer one only keeps more).

    Crash-safe: the EARLIEST hint moves past the expiring snapshots before any file is deleted, and
    their snapshot files go last, so an interrupted run leaves only unreferenced files and snapshots
    below EARLIEST (read as expired); the next run finishes them first.

    Defaults come from the table options `snapshot.num-retained.min` (10), `snapshot.num-retained.max`,
    `snapshot.time-retained` (1 h; ``older_than_ms`` is an absolute epoch-ms cut-off overriding it) and
    `snapshot.expire.limit` (50 snapshots per run). Consumers hold back their next snapshot. Files
    still referenced by a retained snapshot, a tag or a branch are never deleted. With
    `snapshot.clean-empty-directories` (false), bucket and partition directories left empty go too.
    """
    options = table.options
    retain_min = options.get(CoreOptions.SNAPSHOT_NUM_RETAINED_MIN) if retain_min is None else retain_min
    retain_max = options.get(CoreOptions.SNAPSHOT_NUM_RETAINED_MAX) if retain_max is None else retain_max
    if max_deletes is None:
        max_deletes = options.get(CoreOptions.SNAPSHOT_EXPIRE_LIMIT)
    if older_than_ms is None:
        retained_ms = options.get(CoreOptions.SNAPSHOT_TIME_RETAINED)
        older_than_ms = clock.epoch_millis() - retained_ms

    manager = table.snapshot_manager
    latest = manager.latest_id() if latest is None else latest
    listed = manager.listed_ids()  # one LIST: the hint's snapshot and any left below it
    hinted = manager.expired_below(listed)
    earliest = hinted if hinted is not None else (listed[0] if listed else None)
    if latest is None or earliest is None:
        return ExpireResult()
    leftover = [i for i in listed if i < earliest]  # claimed by an interrupted run

    times, first, last = _SnapshotTimes(manager), earliest, latest

    def end_of_range(consumers: int | None) -> int:
        return expire_end(
            earliest=first,
            latest=last,
            retain_min=retain_min,
            retain_max=retain_max,
            max_deletes=max_deletes,
            older_than_ms=older_than_ms,
            snapshot_times=times,
            consumer_min_next=consumers,
        )

    # consumers only hold expiry back: read (a LIST) only when there is something to hold back
    end = end_of_range(None)
    if end > earliest:
        end = end_of_range(min_next_snapshot(table.io, table.root))
    decoupled = changelog_decoupled(options)
    if end <= earliest and not leftover:
        if hinted is None:
            manager.write_earliest_hint(earliest)
        if decoupled:
            expire_changelogs(table.io, table.root, options, FileLocator(table))
        return ExpireResult(earliest_snapshot_id=earliest)
    end = max(end, earliest)
    try:
        end_snapshot = manager.snapshot(end)
    except NoSuchSnapshotError:
        return ExpireResult(earliest_snapshot_id=manager.earliest_id())  # another run got there first

    expiring = _read_expiring(manager, [*leftover, *range(earliest, end)])
    retained = [end_snapshot, *read_snapshots(manager, range(end + 1, latest + 1))]
    reader = SnapshotReader(table.io, FileLocator(table))
    expiring_files = [reader.collect(s, strict=False) for s in expiring]
    if decoupled:  # their changelog outlives them (changelog/changelog-<id>)
        expiring_files = [
            without_changelog(f, s, reader) for f, s in zip(expiring_files, expiring, strict=True)
        ]
    tags = read_tags(table.io, table.root)
    holders = collect_holders(reader, holder_snapshots(table.io, table.root, main_tags=tags))
    protection = retained_protection(reader, retained, holders)
    assert protection.anchor is not None
    plan = plan_deletion(expire_candidates(expiring_files, protection.anchor), protection)

    # Everything is planned; now make the expiring snapshots unreachable before deleting anything they
    # reference: their long-lived changelogs first (streams continue there), then EARLIEST moves past
    # them, and readers take any snapshot still listed below it as expired. A crash from here on
    # leaves only unreferenced files and snapshot files below EARLIEST, which the next run finishes.
    if decoupled:
        for s in expiring:
            keep_changelog(table.io, table.root, s)
    if end > earliest:
        manager.write_latest_hint(latest)  # LATEST never below EARLIEST: latest() trusts that
        manager.write_earliest_hint(end)
    refused = delete_files(table.io, plan, reader.locator.guard, what=f"expiring snapshots of {table.name}")
    if _clean_empty_directories(options):
        remove_empty_data_dirs(table.io, table.root, [*plan.data_files, *plan.changelog_files])
    for s in expiring:  # last: while a snapshot file is left, a rerun can re-plan what it referenced
        table.io.delete_file(manager.snapshot_path(s.id))
    if decoupled:
        expire_changelogs(table.io, table.root, options, reader.locator)
    return ExpireResult(tuple(s.id for s in expiring), end, plan.minus(frozenset(refused)), refused)


def _read_expiring(manager: SnapshotManager, ids: list[int]) -> list[Snapshot]:
    """The snapshots among ``ids`` whose files are still there, below EARLIEST or not."""
    out = []
    for sid in ids:
        try:
            out.append(manager.snapshot(sid, expired=True))
        except NoSuchSnapshotError:
            continue
    return out


def expire_after_commit(table: TableHandle, latest: int | None = None) -> None:
    """What a writer runs after a commit, as Java's commit does: expire what the retention options no
    longer keep, unless `write-only`. A failure is only warned about: the commit stands, and expiry
    runs again after the next one."""
    if table.options.get(CoreOptions.WRITE_ONLY):
        return
    try:
        expire_snapshots(table, latest=latest)
    except Exception as e:
        warnings.warn(f"table {table.name}: snapshot expiry after commit failed: {e}", stacklevel=3)
