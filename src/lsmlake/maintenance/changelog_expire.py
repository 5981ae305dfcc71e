"""Changelog lifecycle decoupled from snapshots (`changelog.num-retained.*`, `changelog.time-retained`).

When the changelog is retained longer than snapshots, snapshot expiry keeps an expiring snapshot's
changelog files and changelog manifests and records the snapshot as `changelog/changelog-<id>`
(Paimon's long-lived changelog). :func:`expire_changelogs` later removes those by the changelog
retention options, as Java's ExpireChangelogImpl does. Only tables that produce changelog files are
decoupled here; a `none` table keeps its changelog coupled to its snapshots.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import replace

from lsmlake.core import clock
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions, parse_duration_ms
from lsmlake.errors import LsmlakeError
from lsmlake.maintenance.files import FileLocator, SnapshotReader
from lsmlake.maintenance.planning import SnapshotFiles
from lsmlake.maintenance.protect import holder_snapshots
from lsmlake.metadata.consumers import min_next_snapshot
from lsmlake.metadata.manifest import FileKind
from lsmlake.metadata.snapshot import Snapshot, decode_snapshot, encode_snapshot
from lsmlake.metadata.snapshot_manager import EARLIEST, LATEST, SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import read_tags

CHANGELOG_DIR = "changelog"
CHANGELOG_PREFIX = "changelog-"


def _retention(options: CoreOptions, kind: str) -> tuple[int, int, int]:
    """(min, max, time-retained ms) of ``snapshot`` or ``changelog``; changelog falls back to snapshot."""

    def get(name: str) -> str:
        value = options.get(f"{kind}.{name}") if kind == "changelog" else None
        return value if value is not None else str(options.get(f"snapshot.{name}"))

    return (
        int(get("num-retained.min")),
        int(get("num-retained.max")),
        parse_duration_ms(f"{kind}.time-retained", get("time-retained")),
    )


def changelog_decoupled(options: CoreOptions) -> bool:
    """Paimon's `changelogLifecycleDecoupled`, for tables that write changelog files."""
    if options.changelog_producer == "none":
        return False
    s_min, s_max, s_time = _retention(options, "snapshot")
    c_min, c_max, c_time = _retention(options, "changelog")
    return c_max > s_max or c_min > s_min or c_time > s_time


def changelog_path(root: str, changelog_id: int) -> str:
    return posixpath.join(root, CHANGELOG_DIR, f"{CHANGELOG_PREFIX}{changelog_id}")


def long_lived_ids(io: FileIO, root: str) -> list[int]:
    """Ids of the long-lived changelogs that have not expired, ascending: those below the changelog
    EARLIEST hint are left by an interrupted changelog expiry (their files partly gone)."""
    ids = listed_changelog_ids(io, root)
    floor = _earliest_hint(io, root)
    return ids if floor is None else [i for i in ids if i >= floor]


def _earliest_hint(io: FileIO, root: str) -> int | None:
    try:
        return int(io.read_text(posixpath.join(root, CHANGELOG_DIR, EARLIEST)).strip())
    except (FileNotFoundError, ValueError):
        return None


def listed_changelog_ids(io: FileIO, root: str) -> list[int]:
    """Ids of every `changelog/changelog-<id>` file present, ascending, expired ones included."""
    directory = posixpath.join(root, CHANGELOG_DIR)
    if not io.exists(directory):
        return []
    ids = []
    for status in io.list_dir(directory):
        suffix = status.name[len(CHANGELOG_PREFIX) :]
        if not status.is_dir and status.name.startswith(CHANGELOG_PREFIX) and suffix.isdigit():
            ids.append(int(suffix))
    return sorted(ids)


def read_changelog(io: FileIO, root: str, changelog_id: int) -> Snapshot:
    path = changelog_path(root, changelog_id)
    return decode_snapshot(io.read_bytes(path), name=path)


def keep_changelog(io: FileIO, root: str, snapshot: Snapshot) -> None:
    """Record an expiring snapshot as a long-lived changelog (before its snapshot file goes)."""
    io.write_if_absent(changelog_path(root, snapshot.id), encode_snapshot(snapshot).encode())
    io.overwrite_hint(posixpath.join(root, CHANGELOG_DIR, LATEST), str(snapshot.id))


def changelog_view(changelog: Snapshot) -> Snapshot | None:
    """What a long-lived changelog still references: its changelog manifest list only (snapshot expiry
    already removed its base and delta lists, index and statistics files); None without a changelog."""
    name = changelog.changelog_manifest_list
    if not name:
        return None
    return replace(
        changelog, base_manifest_list=name, delta_manifest_list=name, index_manifest=None, statistics=None
    )


def _changelog_manifests(reader: SnapshotReader, snapshot: Snapshot) -> set[str]:
    """The paths of a snapshot's changelog manifest list and the manifests it lists."""
    name = snapshot.changelog_manifest_list
    if not name:
        return set()
    metas = reader.manifest_list(name) or []
    return {reader.locator.manifest(name), *(reader.locator.manifest(m.file_name) for m in metas)}


def without_changelog(files: SnapshotFiles, snapshot: Snapshot, reader: SnapshotReader) -> SnapshotFiles:
    """An expiring snapshot's files minus its changelog (kept for the long-lived changelog)."""
    return replace(
        files,
        changelog_files=frozenset(),
        manifest_files=files.manifest_files - _changelog_manifests(reader, snapshot),
    )


def expire_changelogs(
    table_io: FileIO, root: str, options: CoreOptions, locator: FileLocator, *, now_ms: int | None = None
) -> list[int]:
    """Expire long-lived changelogs by the changelog retention options; returns the ids removed."""
    ids = long_lived_ids(table_io, root)
    leftover = [i for i in listed_changelog_ids(table_io, root) if ids and i < ids[0]]
    manager = SnapshotManager(table_io, root)
    latest_snapshot = manager.latest_id()
    if not ids or latest_snapshot is None:
        return []
    if leftover:  # an interrupted run: finish it first
        _expire_until(table_io, root, locator, leftover, ids[0])
    retain_min, retain_max, time_retained = _retention(options, "changelog")
    older_than = (clock.epoch_millis() if now_ms is None else now_ms) - time_retained
    earliest, latest = ids[0], ids[-1]
    low = max(latest_snapshot - retain_max + 1, earliest)
    end = latest_snapshot - retain_min + 1
    consumer_next = min_next_snapshot(table_io, root)
    if consumer_next is not None:
        end = min(end, consumer_next)
    earliest_snapshot = manager.earliest_id()
    if earliest_snapshot is not None:  # a changelog whose snapshot is still there is not long-lived yet
        end = min(end, earliest_snapshot)
    end = min(end, earliest + options.get(CoreOptions.SNAPSHOT_EXPIRE_LIMIT), latest)
    if end <= earliest:
        return leftover
    for cid in range(low, end + 1):
        if cid in ids and older_than <= read_changelog(table_io, root, cid).time_millis:
            end = cid
            break
    return leftover + _expire_until(table_io, root, locator, [i for i in ids if i < end], end)


def expire_all_changelogs(table_io: FileIO, root: str, locator: FileLocator) -> list[int]:
    """Expire every long-lived changelog (Java's ExpireChangelogImpl.expireAll, the procedure's
    ``delete_all``); files the earliest snapshot or a tag still uses stay. The changelog hints go last,
    as Java deletes them."""
    ids = long_lived_ids(table_io, root)
    earliest_snapshot = SnapshotManager(table_io, root).earliest_id()
    if not ids or earliest_snapshot is None:
        return []
    if ids[-1] >= earliest_snapshot:
        raise LsmlakeError(
            f"table {root}: changelog {ids[-1]} is not older than the earliest snapshot {earliest_snapshot}"
        )
    expired = _expire_until(table_io, root, locator, ids, earliest_snapshot)
    if expired:
        for hint in (EARLIEST, LATEST):
            table_io.delete_file(posixpath.join(root, CHANGELOG_DIR, hint))
    return expired


def _expire_until(io: FileIO, root: str, locator: FileLocator, ids: Sequence[int], end: int) -> list[int]:
    """Expire the changelogs ``ids`` (below ``end``): plan, move the changelog EARLIEST hint to ``end``
    so readers no longer see them, delete their files, and their changelog files last (while one is
    left, a rerun can re-plan what it referenced)."""
    reader = SnapshotReader(io, locator)
    held = _held_by_tags(io, root, reader)
    planned: list[tuple[int, list[str]]] = []
    for cid in ids:
        try:
            changelog = read_changelog(io, root, cid)
        except FileNotFoundError:
            continue
        files = _changelog_files(reader, changelog)
        paths = [*files, *sorted(_changelog_manifests(reader, changelog))]
        planned.append((cid, [p for p in paths if p not in held]))
    if not planned:
        return []
    hint = posixpath.join(root, CHANGELOG_DIR, EARLIEST)
    if _earliest_hint(io, root) != end:
        io.overwrite_hint(hint, str(end))
    for _, paths in planned:
        allowed, _ = locator.guard.deletable(paths, what=f"changelog expiry of table {root}")
        for path in allowed:
            io.delete_file(path)
    for cid, _ in planned:
        io.delete_file(changelog_path(root, cid))
    return [cid for cid, _ in planned]


def _held_by_tags(io: FileIO, root: str, reader: SnapshotReader) -> frozenset[str]:
    """The changelog files and manifests the tags of the table and its branches keep (as Java's
    ExpireChangelogImpl skips tagged snapshots)."""
    held: set[str] = set()
    for s in holder_snapshots(io, root, main_tags=read_tags(io, root)):
        files = reader.collect(s, strict=False)
        held |= files.manifest_files | files.changelog_files
    return frozenset(held)


def _changelog_files(reader: SnapshotReader, changelog: Snapshot) -> list[str]:
    name = changelog.changelog_manifest_list
    out: list[str] = []
    for meta in (reader.manifest_list(name) or []) if name else []:
        for e in reader.manifest(meta.file_name) or []:
            if e.kind == FileKind.ADD:
                out += reader.locator.entry_files(e)
    return out


def expire_table_changelogs(
    table: TableHandle,
    *,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than_ms: int | None = None,
    max_deletes: int | None = None,
    delete_all: bool = False,
) -> list[int]:
    """Expire long-lived changelogs now (Paimon's expire_changelogs procedure): by the table's changelog
    retention with these overrides (``older_than_ms``: epoch ms, the time retained becomes now minus
    it), or all of them; the changelog ids removed."""
    locator = FileLocator(table)
    if delete_all:
        return expire_all_changelogs(table.io, table.root, locator)
    raw = dict(table.options.raw)
    overrides = {
        CoreOptions.CHANGELOG_NUM_RETAINED_MAX.key: retain_max,
        CoreOptions.CHANGELOG_NUM_RETAINED_MIN.key: retain_min,
        CoreOptions.SNAPSHOT_EXPIRE_LIMIT.key: max_deletes,
    }
    raw.update({k: str(v) for k, v in overrides.items() if v is not None})
    if older_than_ms is not None:
        raw[CoreOptions.CHANGELOG_TIME_RETAINED.key] = f"{max(clock.epoch_millis() - older_than_ms, 0)} ms"
    options = CoreOptions.of(raw, primary_key_table=table.options.primary_key_table)
    return expire_changelogs(table.io, table.root, options, locator)
