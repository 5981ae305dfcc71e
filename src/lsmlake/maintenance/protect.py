"""Gathering what must survive a deletion: retained snapshots, tags and every branch's snapshots and tags."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import BRANCH_DIR, BRANCH_PREFIX, PathGuard, table_root_of
from lsmlake.errors import LsmlakeError, NoSuchSnapshotError
from lsmlake.maintenance.files import SnapshotReader
from lsmlake.maintenance.planning import FileSets, Protection, SnapshotFiles
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.metadata.tags import Tag, read_tags


def branch_roots(io: FileIO, root: str) -> list[str]:
    """Roots of the table's branches (`<root>/branch/branch-<name>`); they share manifests and data dirs.
    ``root`` may be a branch's own root: the branches are those of its table."""
    base = posixpath.join(table_root_of(root.rstrip("/")).rstrip("/"), BRANCH_DIR)
    return sorted(s.path for s in io.list_dir(base) if s.is_dir and s.name.startswith(BRANCH_PREFIX))


def read_snapshots(manager: SnapshotManager, ids: Iterable[int], *, expired: bool = False) -> list[Snapshot]:
    """The snapshots among ``ids`` that still exist, in order (with ``expired``, those below EARLIEST too)."""
    out = []
    for sid in ids:
        try:
            out.append(manager.snapshot(sid, expired=expired))
        except NoSuchSnapshotError:
            continue
    return out


def _unique(snapshots: Iterable[Snapshot]) -> list[Snapshot]:
    seen: set[tuple[int, str, str]] = set()
    out = []
    for s in snapshots:
        key = (s.id, s.base_manifest_list, s.delta_manifest_list)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def holder_snapshots(io: FileIO, root: str, *, main_tags: Sequence[Tag]) -> list[Snapshot]:
    """Snapshots whose files are protected as a whole: the given tags of ``root``, and every other
    branch's snapshots and tags -- the main table's too when ``root`` is a branch (branches share the
    table's manifest and data directories)."""
    found = [t.snapshot for t in main_tags]
    own = posixpath.normpath(root)
    table_root = table_root_of(root.rstrip("/"))
    branches = branch_roots(io, root)
    for branch in [table_root, *branches]:
        if posixpath.normpath(branch) == own:
            continue
        manager = SnapshotManager(io, branch)
        found += read_snapshots(manager, manager.snapshot_ids())
        found += [t.snapshot for t in read_tags(io, branch)]
    if branches and branch_roots(io, root) != branches:
        # a branch renamed meanwhile was read under neither name: its files would lose protection
        raise LsmlakeError(
            f"table {table_root}: its branches changed while their snapshots were read (a branch was "
            "created, renamed or deleted); nothing was deleted: run it again"
        )
    return _unique(found)


def collect_holders(reader: SnapshotReader, snapshots: Sequence[Snapshot]) -> list[SnapshotFiles]:
    return [reader.collect(s, strict=True, live=True) for s in snapshots]


def retained_protection(
    reader: SnapshotReader, retained: Sequence[Snapshot], holders: Sequence[SnapshotFiles]
) -> Protection:
    """Protection for a table keeping ``retained`` (ascending): the first one's live files, the
    later ones' metadata, delta ADDs and changelog, and the holders' files."""
    if not retained:
        return Protection(anchor=None, holders=tuple(holders))
    anchor = reader.collect(retained[0], strict=True, live=True)
    later = tuple(reader.collect(s, strict=True) for s in retained[1:])
    return Protection(anchor=anchor, later=later, holders=tuple(holders))


def delete_files(io: FileIO, plan: FileSets, guard: PathGuard, *, what: str) -> tuple[str, ...]:
    """Delete planned files: data and changelog first, then index files, manifests and statistics,
    so an interrupted run can be repeated from the metadata that is left. A path outside the table and
    its external roots is never deleted: those are returned (and warned about, naming ``what``)."""
    refused: list[str] = []
    for group in (
        plan.data_files,
        plan.changelog_files,
        plan.index_files,
        plan.statistics_files,
        plan.manifest_files,
    ):
        allowed, skipped = guard.deletable(sorted(group), what=what)
        refused += skipped
        for path in allowed:
            io.delete_file(path)
    return tuple(refused)
