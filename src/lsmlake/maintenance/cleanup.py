"""Rolling back to a snapshot or tag, and deleting tags, together with the files only they needed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lsmlake.errors import CorruptFileError, NoSuchSnapshotError
from lsmlake.maintenance.files import FileLocator, SnapshotReader
from lsmlake.maintenance.planning import (
    FileSets,
    SnapshotFiles,
    plan_deletion,
    removal_candidates,
    tag_candidates,
)
from lsmlake.maintenance.protect import (
    collect_holders,
    delete_files,
    holder_snapshots,
    read_snapshots,
    retained_protection,
)
from lsmlake.metadata.snapshot import Snapshot, encode_snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import read_tags, remove_tag_files, require_tag


@dataclass(frozen=True)
class RollbackResult:
    """What a rollback removed."""

    snapshot_id: int
    """The snapshot the table now ends at."""
    removed_snapshot_ids: tuple[int, ...] = ()
    removed_tags: tuple[str, ...] = ()
    deleted: FileSets = field(default_factory=FileSets)
    refused: tuple[str, ...] = ()
    """Paths the removed metadata named outside the table and its external roots: left alone."""

    @property
    def deleted_files(self) -> list[str]:
        return sorted(self.deleted.all())


def _collect_with_live(reader: SnapshotReader, snapshot: Snapshot) -> SnapshotFiles:
    """Its files including the live ones; without them when its history is incomplete."""
    try:
        return reader.collect(snapshot, strict=False, live=True)
    except CorruptFileError:
        return reader.collect(snapshot, strict=False)


def _rollback_target(table: TableHandle, snapshot_id: int | None, tag: str | None) -> Snapshot:
    """The snapshot to roll back to: the tag's, or ``snapshot_id``'s - from a tag holding it when the
    snapshot itself has expired (as Java's ``rollbackTo(long)`` falls back to the tags)."""
    if tag is not None:
        return require_tag(table, tag).snapshot
    assert snapshot_id is not None
    manager = table.snapshot_manager
    if snapshot_id > 0 and manager.snapshot_exists(snapshot_id):
        return manager.snapshot(snapshot_id)
    for t in read_tags(table.io, table.root):
        if t.snapshot.id == snapshot_id:
            return t.snapshot
    raise NoSuchSnapshotError(
        f"table {table.name}: cannot roll back to snapshot {snapshot_id}: it does not exist (snapshots "
        f"{manager.earliest_id()}..{manager.latest_id()}) and no tag holds it"
    )


def rollback_to(table: TableHandle, snapshot_id: int | None = None, tag: str | None = None) -> RollbackResult:
    """Make ``snapshot_id`` (or the snapshot of ``tag``) the latest snapshot.

    Newer snapshots and the tags on them are removed (as Java's RollbackHelper does), then the
    files only they referenced. A snapshot that has expired but is held by a tag (``tag``, or one on
    ``snapshot_id``) is restored from the tag as a snapshot file and becomes the earliest one. The
    next commit gets id ``snapshot_id + 1``. Everything is planned before the first write.

    A table whose catalog keeps its snapshots (a REST catalog's ``catalog_env``) asks the catalog, which
    moves its record of the latest snapshot and removes the newer ones; the result then lists those
    snapshots only. Every caller (``Table.rollback_to``, ``CALL sys.rollback_to``) comes through here.
    """
    if (snapshot_id is None) == (tag is None):
        raise ValueError("rollback_to needs exactly one of snapshot_id and tag")
    manager = table.snapshot_manager
    latest = manager.latest_id()
    if latest is None:
        raise NoSuchSnapshotError(f"table {table.name} has no snapshots to roll back")
    if table.catalog_env is not None:
        target_id = require_tag(table, tag).snapshot.id if tag is not None else snapshot_id
        assert target_id is not None
        newer = tuple(reversed([i for i in manager.listed_ids() if i > target_id]))
        table.catalog_env.rollback(table.root, snapshot_id=snapshot_id, tag=tag, from_snapshot=latest)
        return RollbackResult(target_id, newer)
    target = _rollback_target(table, snapshot_id, tag)
    restore = not manager.snapshot_exists(target.id)

    # every snapshot file above the target goes, newest first, those below the EARLIEST hint too: Java's
    # fast-forward copies the branch's EARLIEST into main, so older main snapshots can sit below it, and
    # one left above the target would be the latest again (Paimon 1.4.2's RollbackHelper leaves them)
    above = [i for i in manager.listed_ids() if i > target.id]
    removed = read_snapshots(manager, reversed(above), expired=True)
    tags = read_tags(table.io, table.root)
    kept_tags = [t for t in tags if t.snapshot.id <= target.id]
    removed_tags = [t for t in tags if t.snapshot.id > target.id]
    if not removed and not removed_tags and not restore:
        return RollbackResult(target.id)
    reader = SnapshotReader(table.io, FileLocator(table))
    removed_files = [reader.collect(s, strict=False) for s in removed[:-1]]
    if removed:
        removed_files.append(_collect_with_live(reader, removed[-1]))
    present = {s.id for s in removed}  # removed tags on expired snapshots: their files are candidates too
    removed_files += [
        _collect_with_live(reader, t.snapshot) for t in removed_tags if t.snapshot.id not in present
    ]
    holders = collect_holders(reader, holder_snapshots(table.io, table.root, main_tags=kept_tags))
    if restore:
        retained = [target]
    else:
        earliest = manager.earliest_id()
        retained = read_snapshots(manager, range(target.id if earliest is None else earliest, target.id + 1))
    plan = plan_deletion(removal_candidates(removed_files), retained_protection(reader, retained, holders))

    if restore:  # Java's createSnapshotFileIfNeeded: the tag's snapshot, without the tag fields
        table.io.write_if_absent(manager.snapshot_path(target.id), encode_snapshot(target).encode("utf-8"))
        manager.write_earliest_hint(target.id)
    manager.write_latest_hint(target.id)
    for s in removed:  # newest first, so an interruption leaves a consistent prefix
        table.io.delete_file(manager.snapshot_path(s.id))
    names = tuple(t.name for t in removed_tags)
    remove_tag_files(table.io, table.root, names)
    refused = delete_files(table.io, plan, reader.locator.guard, what=f"rollback of {table.name}")
    return RollbackResult(
        target.id, tuple(s.id for s in removed), names, plan.minus(frozenset(refused)), refused
    )


def delete_tag(table: TableHandle, name: str) -> FileSets:
    """Delete a tag. When its snapshot has already expired and no other tag shares it, the files
    only the tag kept alive are deleted too; returns them."""
    tag = require_tag(table, name)
    manager = table.snapshot_manager
    tags = read_tags(table.io, table.root)
    others = [t for t in tags if t.name != name]
    shared = any(t.snapshot.id == tag.snapshot.id for t in others)
    if manager.snapshot_exists(tag.snapshot.id) or shared:
        remove_tag_files(table.io, table.root, [name])
        return FileSets()
    reader = SnapshotReader(table.io, FileLocator(table))
    files = _collect_with_live(reader, tag.snapshot)
    candidates = tag_candidates(dataclasses.replace(files, live=files.live or frozenset()))
    holders = collect_holders(reader, holder_snapshots(table.io, table.root, main_tags=others))
    retained = read_snapshots(manager, manager.snapshot_ids())
    plan = plan_deletion(candidates, retained_protection(reader, retained, holders))
    remove_tag_files(table.io, table.root, [name])
    refused = delete_files(
        table.io, plan, reader.locator.guard, what=f"deleting tag {name!r} of {table.name}"
    )
    return plan.minus(frozenset(refused))
