"""Orphan file cleaning (format.md §8.7): delete old files no snapshot, tag or branch references."""

from __future__ import annotations

import posixpath
import time

import pyarrow.fs as pafs

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import BRANCH_DIR, BRANCH_PREFIX, PathGuard, table_root_of
from lsmlake.errors import CorruptFileError, LsmlakeError, NoSuchSnapshotError, UnsupportedError
from lsmlake.maintenance.changelog_expire import (
    CHANGELOG_DIR,
    CHANGELOG_PREFIX,
    changelog_view,
    long_lived_ids,
    read_changelog,
)
from lsmlake.maintenance.empty_dirs import remove_empty_data_dirs
from lsmlake.maintenance.files import STATISTICS_DIR, FileLocator, SnapshotReader
from lsmlake.maintenance.planning import SnapshotFiles, orphan_files
from lsmlake.maintenance.protect import branch_roots
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import EARLIEST, LATEST, SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import read_tags

DAY_MS = 86_400_000
_HINTS = frozenset({EARLIEST, LATEST})


def _files_with_mtime(io: FileIO, directory: str) -> list[tuple[str, int]]:
    """``(path, modification epoch ms)`` of every file below ``directory``.

    FileIO's listing has no modification times yet, so this asks its filesystem directly.
    """
    if not io.is_dir(directory):
        return []
    infos = io.fs.get_file_info(pafs.FileSelector(directory, recursive=True))
    return [
        (posixpath.normpath(i.path), (i.mtime_ns or 0) // 1_000_000)
        for i in infos
        if i.type == pafs.FileType.File
    ]


BRANCH_LEFTOVER_PREFIXES = (f".tmp-{BRANCH_PREFIX}", f".deleted-{BRANCH_PREFIX}")
"""Hidden directories `maintenance.branches` builds a branch in, or moves a deleted one to."""


SUCCESS_FILE = "_SUCCESS"
"""The file Paimon's success-file action writes into a partition directory to mark it done."""


def _is_data_dir(name: str) -> bool:
    return "=" in name or name.startswith("bucket-")


def candidate_files(table: TableHandle) -> list[tuple[str, int]]:
    """Files orphan cleaning may consider: manifest/, index/, statistics/, partition and bucket
    directories, and non-snapshot, non-hint files (e.g. leftover temp files) in snapshot/ and changelog/."""
    io, root = table.io, table.root.rstrip("/")
    out: list[tuple[str, int]] = []
    for sub in ("manifest", "index", STATISTICS_DIR):
        out += _files_with_mtime(io, posixpath.join(root, sub))
    data_root = table.options.get(CoreOptions.DATA_FILE_PATH_DIRECTORY)
    if data_root:
        out += _files_with_mtime(io, posixpath.join(root, data_root))
    # the table's partition and bucket directories, and those under each `data-file.external-paths` root
    guard = PathGuard.of(io, root, table.options)
    for base in (root, *(r for storage, r in guard.external_roots if storage == guard.storage)):
        for status in io.list_dir(base) if io.is_dir(base) else ():
            if status.is_dir and _is_data_dir(status.name):
                # a partition's _SUCCESS file (partition.mark-done-action) is not Paimon's to clean
                out += [f for f in _files_with_mtime(io, status.path) if posixpath.basename(f[0]) != SUCCESS_FILE]
        if base != root and data_root:
            out += _files_with_mtime(io, posixpath.join(base, data_root))
    for sub, prefix in (("snapshot", "snapshot-"), (CHANGELOG_DIR, CHANGELOG_PREFIX)):
        for path, mtime in _files_with_mtime(io, posixpath.join(root, sub)):
            name = posixpath.basename(path)
            if name not in _HINTS and not (name.startswith(prefix) and name[len(prefix) :].isdigit()):
                out.append((path, mtime))
    return out


def _long_lived_changelogs(io: FileIO, root: str) -> list[Snapshot]:
    """The views of the long-lived changelogs that have not expired, ascending."""
    out = []
    for cid in long_lived_ids(io, root):
        try:
            view = changelog_view(read_changelog(io, root, cid))
        except FileNotFoundError:
            continue
        if view is not None:
            out.append(view)
    return out


def _snapshots(manager: SnapshotManager) -> list[Snapshot]:
    """The unexpired snapshots, ascending; those below EARLIEST (an interrupted expiry) are not read."""
    out = []
    for sid in manager.snapshot_ids():
        try:
            out.append(manager.snapshot(sid))
        except NoSuchSnapshotError:
            continue  # expired meanwhile
    return out


def _history_files(reader: SnapshotReader, history: list[Snapshot]) -> list[SnapshotFiles]:
    """The files of a run of snapshots (or changelogs), ascending. A missing manifest is corruption,
    except in the oldest ones before the first complete snapshot: that prefix is what an interrupted
    expiry of an older writer (which deleted files before the snapshot files and the hint) leaves, so
    what is still readable there counts and the rest is taken as expired."""
    out = []
    in_prefix = True
    for i, s in enumerate(history):
        try:
            out.append(reader.collect(s, strict=True, mentioned=True))
            in_prefix = False
        except CorruptFileError:
            if not in_prefix or i == len(history) - 1:
                raise
            out.append(reader.collect(s, strict=False, mentioned=True))
    return out


def used_files(table: TableHandle) -> set[str]:
    """Every file a snapshot, tag or long-lived changelog of any branch references (manifest lists,
    manifests, index manifests and files, statistics, and all data files the manifests name).
    Snapshots below EARLIEST have expired: what only they reference is not used."""
    io = table.io
    reader = SnapshotReader(io, FileLocator(table))
    collected: list[SnapshotFiles] = []
    branches = branch_roots(io, table.root)
    for r in [table.root, *branches]:
        collected += _history_files(reader, _snapshots(SnapshotManager(io, r)))
        collected += [reader.collect(t.snapshot, strict=True, mentioned=True) for t in read_tags(io, r)]
        collected += _history_files(reader, _long_lived_changelogs(io, r))
    if branch_roots(io, table.root) != branches:
        # a branch renamed (or created, deleted) meanwhile: a renamed one's snapshots were read under
        # neither name, so its files would be taken for orphans
        raise LsmlakeError(
            f"table {table.name}: its branches changed while orphan cleaning read them "
            "(a branch was created, renamed or deleted); nothing was deleted: run it again"
        )
    used: set[str] = set()
    for files in collected:
        used |= files.metadata() | (files.mentioned or frozenset())
    return {posixpath.normpath(p) for p in used}


def remove_orphan_files(
    table: TableHandle, *, older_than_ms: int | None = None, dry_run: bool = False
) -> list[str]:
    """Delete files in the table's directories that nothing references and that are older than
    ``older_than_ms`` (epoch ms; default now - 1 day, which protects in-flight commits), then the
    bucket and partition directories that this left empty (local disk; object stores have none).
    Returns the orphan paths (deleted unless ``dry_run``)."""
    if table_root_of(table.root) != table.root:
        raise UnsupportedError(
            f"table {table.name} is a branch: clean orphan files on its main table, which covers every branch"
        )
    if older_than_ms is None:
        older_than_ms = int(time.time() * 1000) - DAY_MS
    try:
        used = used_files(table)
    except CorruptFileError as e:
        raise CorruptFileError(f"table {table.name}: cannot clean orphan files: {e}") from e
    orphans = orphan_files(candidate_files(table), used, older_than_ms=older_than_ms)
    if not dry_run:
        guard = PathGuard.of(table.io, table.root, table.options)
        allowed, _ = guard.deletable(orphans, what=f"orphan cleaning of {table.name}")
        for path in allowed:
            table.io.delete_file(path)
        remove_empty_data_dirs(table.io, table.root, orphans)
    return orphans + _branch_leftovers(table, older_than_ms, dry_run=dry_run)


def _branch_leftovers(table: TableHandle, older_than_ms: int, *, dry_run: bool) -> list[str]:
    """Directories an interrupted branch creation or deletion left under `branch/` (hidden names no
    reader opens), older than ``older_than_ms``: deleted with everything in them."""
    base = posixpath.join(table.root.rstrip("/"), BRANCH_DIR)
    out = []
    for status in table.io.list_dir(base):
        if status.is_dir and status.name.startswith(BRANCH_LEFTOVER_PREFIXES):
            files = _files_with_mtime(table.io, status.path)
            mtime = max((m for _, m in files), default=0)
            if mtime < older_than_ms:
                out.append(status.path)
                if not dry_run:
                    table.io.delete_dir(status.path)
    return out
