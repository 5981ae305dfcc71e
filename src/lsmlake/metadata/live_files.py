"""Read a snapshot's manifests and fold them into the live data files, optionally for some buckets."""

from __future__ import annotations

from collections.abc import Callable

from lsmlake.core.fileio import FileIO
from lsmlake.core.paths import TablePaths
from lsmlake.metadata.manifest import ManifestEntry, live_files, read_manifest
from lsmlake.metadata.manifest_list import ManifestFileMeta, read_manifest_list
from lsmlake.metadata.snapshot import Snapshot


def snapshot_manifests(io: FileIO, paths: TablePaths, snapshot: Snapshot) -> list[ManifestFileMeta]:
    """Base then delta manifest metas of a snapshot, in order."""
    metas = read_manifest_list(io, paths.manifest(snapshot.base_manifest_list))
    metas += read_manifest_list(io, paths.manifest(snapshot.delta_manifest_list))
    return metas


def live_entries(
    io: FileIO,
    paths: TablePaths,
    snapshot: Snapshot | None,
    *,
    manifest_filter: Callable[[ManifestFileMeta], bool] | None = None,
    entry_filter: Callable[[ManifestEntry], bool] | None = None,
) -> list[ManifestEntry]:
    """The ADD entries live in ``snapshot`` that pass the filters (ADD minus DELETE on full identity)."""
    if snapshot is None:
        return []
    entries: list[ManifestEntry] = []
    for meta in snapshot_manifests(io, paths, snapshot):
        if manifest_filter is not None and not manifest_filter(meta):
            continue
        for e in read_manifest(io, paths.manifest(meta.file_name)):
            if entry_filter is None or entry_filter(e):
                entries.append(e)
    return live_files(entries)
