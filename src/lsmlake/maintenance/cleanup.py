"""Rolling back to a snapshot or tag, and deleting tags, together with the files only they needed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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
from lsmlake.maintenance.tags import read_tags, remove_tag_files, require_tag
from lsmlake.metadata.snapshot import Snapshot, encode_snapshot

if TYPE_CHECKING:
    from lsmlake.table import Table


@dataclass(frozen=True)
class RollbackResult:
    """What a rollback removed."""

    snapshot_id: int
    """The snapshot the table now ends at."""
    removed_snapshot_ids: tuple[int, ...] = ()
    removed_tags: tuple[str, ...] = ()
    deleted: FileSets = field(default_factory=FileSets)

    @property
    def deleted_files(self) -> list[str]:
        return sorted(self.deleted.all())


def _collect_with_live(reader: SnapshotReader, snapshot: Snapshot) -> SnapshotFiles:
    """Its files including the live ones; without them when its history is incomplete."""
    try:
        return reader.collect(snapshot, strict=False, live=True)
    except CorruptFileError:
        return reader.collect(snapshot, strict=False)


def rollback_to(table: Table, snapshot_id: int | None = None, tag: str | None = None) -> RollbackResult:
    """Make ``snapshot_id`` (or the snapshot of ``tag``) the latest snapshot.

    Newer snapshots and the tags on them are removed (as Java's RollbackHelper does), then the
    files only they referenced. A tag whose snapshot has expired is restored as a snapshot file
    and becomes the earliest one. The next commit gets id ``snapshot_id + 1``.
    """
    if (snapshot_id is None) == (tag is None):
        raise ValueError("rollback_to needs exactly one of snapshot_id and tag")
    manager = table.snapshot_manager
    latest = manager.latest_id()
    if latest is None:
        raise NoSuchSnapshotError(f"table {table.name} has no snapshots to roll back")
    if tag is not None:
        target = require_tag(table, tag).snapshot
        if not manager.snapshot_exists(target.id):
            data = encode_snapshot(target).encode("utf-8")
            table.io.write_if_absent(manager.snapshot_path(target.id), data)
            manager.write_earliest_hint(target.id)
    else:
        assert snapshot_id is not None
        target = manager.snapshot(snapshot_id)
    earliest = manager.earliest_id()
    assert earliest is not None

    removed = read_snapshots(manager, range(latest, target.id, -1))
    tags = read_tags(table.io, table.root)
    kept_tags = [t for t in tags if t.snapshot.id <= target.id]
    removed_tags = [t.name for t in tags if t.snapshot.id > target.id]
    if not removed and not removed_tags:
        return RollbackResult(target.id)
    reader = SnapshotReader(table.io, FileLocator(table))
    removed_files = [reader.collect(s, strict=False) for s in removed[:-1]]
    if removed:
        removed_files.append(_collect_with_live(reader, removed[-1]))
    holders = collect_holders(reader, holder_snapshots(table.io, table.root, main_tags=kept_tags))
    retained = read_snapshots(manager, range(earliest, target.id + 1))
    plan = plan_deletion(removal_candidates(removed_files), retained_protection(reader, retained, holders))

    manager.write_latest_hint(target.id)
    for s in removed:  # newest first, so an interruption leaves a consistent prefix
        table.io.delete_file(manager.snapshot_path(s.id))
    remove_tag_files(table.io, table.root, removed_tags)
    delete_files(table.io, plan)
    return RollbackResult(target.id, tuple(s.id for s in removed), tuple(removed_tags), plan)


def delete_tag(table: Table, name: str) -> FileSets:
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
    delete_files(table.io, plan)
    return plan
