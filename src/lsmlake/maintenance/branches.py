"""Branches in Paimon's layout: ``<table>/branch/branch-<name>/`` with its own schema/, snapshot/ and tag/."""

from __future__ import annotations

import datetime as dt
import posixpath
import uuid
from dataclasses import dataclass, replace
from typing import TypeVar

from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import BRANCH_DIR, BRANCH_PREFIX, table_root_of
from lsmlake.core.paths import MAIN_BRANCH, branch_root, check_branch_name
from lsmlake.core.schema import schema_file_name
from lsmlake.errors import (
    AlreadyExistsError,
    CommitConflictError,
    InvalidIdentifierError,
    NoSuchSnapshotError,
    NoSuchTableError,
)
from lsmlake.metadata.snapshot import encode_snapshot, snapshot_file_name
from lsmlake.metadata.snapshot_manager import LATEST, SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import read_tag, read_tags, tag_path
from lsmlake.schema_change.manager import latest_schema, schema_dir, schema_ids

H = TypeVar("H", bound=TableHandle)

BRANCH_TABLE_PREFIX = "branch_"
"""``t$branch_<name>`` addresses branch ``name`` of table ``t``."""


@dataclass(frozen=True)
class Branch:
    """One branch: its name and when its directory was created (the `$branches` row)."""

    name: str
    create_time: dt.datetime


def branch_of(root: str) -> str:
    """The branch whose metadata root is ``root`` (``main`` for a table root)."""
    if table_root_of(root) == root:
        return MAIN_BRANCH
    return posixpath.basename(root.rstrip("/"))[len(BRANCH_PREFIX) :]


def list_branches(io: FileIO, table_root: str) -> list[Branch]:
    """The table's branches (not ``main``), sorted by name, with their directories' creation times."""
    base = posixpath.join(table_root_of(table_root.rstrip("/")), BRANCH_DIR)
    out = []
    for s in io.list_dir(base):
        if s.is_dir and s.name.startswith(BRANCH_PREFIX) and len(s.name) > len(BRANCH_PREFIX):
            info = io.fs.get_file_info(s.path)
            mtime = info.mtime or dt.datetime.fromtimestamp(0, dt.UTC)
            local = mtime.astimezone().replace(tzinfo=None)
            out.append(Branch(s.name[len(BRANCH_PREFIX) :], local))
    return sorted(out, key=lambda b: b.name)


def branch_exists(io: FileIO, table_root: str, name: str) -> bool:
    return name == MAIN_BRANCH or io.is_dir(branch_root(table_root, name))


def _copy(io: FileIO, src: str, dst: str) -> None:
    io.write_bytes(dst, io.read_bytes(src))


def _copy_schemas(io: FileIO, src_root: str, dst_root: str, upto: int) -> None:
    for sid in schema_ids(io, src_root):
        if sid <= upto:
            name = schema_file_name(sid)
            _copy(io, posixpath.join(schema_dir(src_root), name), posixpath.join(schema_dir(dst_root), name))


def create_branch(table: TableHandle, name: str, tag: str | None = None) -> None:
    """Create branch ``name`` of the table: from ``tag`` (the tag, its snapshot and the schemas up to
    that snapshot's are copied into the branch), or empty (the schemas up to the latest). The branch
    is built in a hidden directory and renamed into place (local disk), so it appears whole or not at
    all; on object stores the files are written schemas first, the snapshot last."""
    main = table_root_of(table.root)
    target = branch_root(main, check_branch_name(name))
    if table.io.exists(target):
        raise AlreadyExistsError(f"branch {name!r} of table {table.name} already exists")
    staging = posixpath.join(main, BRANCH_DIR, f".tmp-{BRANCH_PREFIX}{name}-{uuid.uuid4()}")
    build = staging if table.io.local else target
    try:
        _fill_branch(table, build, tag)
        if build is staging:
            if table.io.exists(target):
                raise AlreadyExistsError(f"branch {name!r} of table {table.name} already exists")
            table.io.rename(staging, target)
    finally:
        if build is staging:
            table.io.delete_dir(staging)


def _fill_branch(table: TableHandle, build: str, tag: str | None) -> None:
    """Copy into ``build`` from the branch ``table`` is (main, or another branch, as in Java)."""
    io, main = table.io, table.root
    if tag is None:
        ids = schema_ids(io, main)
        if not ids:
            raise NoSuchTableError(f"table {table.name} has no schema to branch from")
        _copy_schemas(io, main, build, ids[-1])
        return
    found = read_tag(io, main, tag)
    snapshot = found.snapshot
    _copy_schemas(io, main, build, snapshot.schema_id)
    _copy(io, tag_path(main, tag), tag_path(build, tag))
    source = SnapshotManager(io, main).snapshot_path(snapshot.id)
    dest = SnapshotManager(io, build).snapshot_path(snapshot.id)
    if io.is_file(source):
        _copy(io, source, dest)
    else:  # the snapshot expired; the tag kept its content
        io.write_bytes(dest, encode_snapshot(snapshot).encode("utf-8"))


def delete_branch(table: TableHandle, name: str) -> None:
    """Delete a branch's metadata (its data files, shared with the table, become orphans unless other
    branches use them). It is made unreachable first: renamed away (local disk), or its snapshots and
    tags deleted before the rest (object stores)."""
    main = table_root_of(table.root)
    target = branch_root(main, check_branch_name(name))
    io = table.io
    if not io.is_dir(target):
        raise NoSuchTableError(f"branch {name!r} of table {table.name} does not exist")
    _refuse_mid_rename(io, main, table.name, name, "deleted")
    if io.local:
        gone = posixpath.join(main, BRANCH_DIR, f".deleted-{BRANCH_PREFIX}{name}-{uuid.uuid4()}")
        io.rename(target, gone)
        io.delete_dir(gone)
        return
    io.delete_dir(posixpath.join(target, "snapshot"))
    io.delete_dir(posixpath.join(target, "tag"))
    io.delete_dir(target)


RENAME_MARKER = "lsmlake-rename-from"
"""A file in a branch directory being filled by an object-store rename: it names the source branch, so
an interrupted rename is finished by calling it again (Java ignores files it does not know there)."""


def _unfinished_rename(io: FileIO, main: str, name: str) -> tuple[str, str] | None:
    """(source, target) of an interrupted object-store rename that branch ``name`` is either end of."""
    for s in io.list_dir(posixpath.join(main, BRANCH_DIR)):
        if not (s.is_dir and s.name.startswith(BRANCH_PREFIX)):
            continue
        marker = posixpath.join(s.path, RENAME_MARKER)
        if io.is_file(marker):
            source, target = io.read_bytes(marker).decode("utf-8"), s.name[len(BRANCH_PREFIX) :]
            if name in (source, target):
                return source, target
    return None


def _refuse_mid_rename(
    io: FileIO, main: str, table_name: str, name: str, what: str, allowed: tuple[str, str] | None = None
) -> None:
    """Refuse to delete, rename or fast-forward to an end of an unfinished rename (but ``allowed``, the
    rename itself): the other end would keep half the branch for good, the marker would move along, or
    main would take half a branch."""
    found = _unfinished_rename(io, main, name)
    if found is not None and found != allowed:
        source, target = found
        raise CommitConflictError(
            f"table {table_name}: branch {name!r} cannot be {what}: the rename of branch {source!r} to "
            f"{target!r} is unfinished (interrupted); finish it first: rename_branch({source!r}, {target!r}) "
            f"(CALL sys.rename_branch)"
        )


def rename_branch(table: TableHandle, name: str, target: str) -> None:
    """Rename branch ``name`` to ``target`` (Paimon renames the branch directory; ``main`` cannot be
    renamed). On local disk the directory is renamed at once. On object stores, where a rename is a
    copy and a delete, it is crash-safe and resumable: see ``_copy_rename``."""
    main = table_root_of(table.root)
    if name == MAIN_BRANCH:
        raise InvalidIdentifierError(f"table {table.name}: the main branch cannot be renamed")
    src = branch_root(main, check_branch_name(name))
    dst = branch_root(main, check_branch_name(target))
    io = table.io
    marker = posixpath.join(dst, RENAME_MARKER)
    resuming = not io.local and io.is_file(marker) and io.read_bytes(marker).decode("utf-8") == name
    if not resuming and not io.is_dir(src):
        raise NoSuchTableError(f"branch {name!r} of table {table.name} does not exist")
    if target == MAIN_BRANCH or (not resuming and io.exists(dst)):
        raise AlreadyExistsError(f"branch {target!r} of table {table.name} already exists")
    _refuse_mid_rename(io, main, table.name, name, "renamed", allowed=(name, target))
    if io.local:
        io.rename(src, dst)
        return
    _copy_rename(io, src, dst, marker, name)


def _copy_rename(io: FileIO, src: str, dst: str, marker: str, name: str) -> None:
    """Rename by copying, in an order that leaves, at every point, the whole branch under one of the
    names and only loud failures under the other: the marker first; the files, schemas last (newest
    first), so a partial copy has no schema to open or the newest one over every snapshot; then the
    source's schemas (oldest first, so it opens on its newest until it cannot open at all), the rest
    of it, and the marker. A rerun (the marker names ``name``) copies only the files still missing."""
    io.write_bytes(marker, name.encode("utf-8"))
    schemas = posixpath.join(src, "schema") + "/"
    files = io.walk_files(src)
    present = {f.path[len(dst) :] for f in io.walk_files(dst)}

    def schema_id(path: str) -> int:
        tail = path.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    rest = [f.path for f in files if not f.path.startswith(schemas)]
    newest_first = sorted((f.path for f in files if f.path.startswith(schemas)), key=schema_id, reverse=True)
    for path in [*rest, *newest_first]:
        if path[len(src) :] not in present:
            _copy(io, path, dst + path[len(src) :])
    for path in [*reversed(newest_first), *rest]:
        io.delete_file(path)
    io.delete_dir(src)
    io.delete_file(marker)


def fast_forward(table: TableHandle, name: str) -> None:
    """Make the main table equal to branch ``name``, as Paimon does: main's snapshots, schemas and tags
    from the branch's earliest snapshot on are replaced by the branch's. Main's newer snapshots go
    first (newest down), so an interrupted run leaves main at an older state, never a mixed one."""
    main = table_root_of(table.root)
    if table.root != main:
        raise InvalidIdentifierError(f"fast-forward runs on the main table, not on branch {table.name}")
    source = branch_root(main, check_branch_name(name))
    io = table.io
    if not io.is_dir(source):
        raise NoSuchTableError(f"branch {name!r} of table {table.name} does not exist")
    _refuse_mid_rename(io, main, table.name, name, "fast-forwarded to")
    branch_sm, main_sm = SnapshotManager(io, source), SnapshotManager(io, main)
    branch_ids = branch_sm.snapshot_ids()
    if not branch_ids:
        raise NoSuchSnapshotError(f"cannot fast forward branch {name!r}: it has no snapshot")
    first = branch_ids[0]
    first_schema = branch_sm.snapshot(first).schema_id
    io.delete_file(main_sm.hint_path(LATEST))
    for sid in sorted((i for i in main_sm.listed_ids() if i >= first), reverse=True):
        io.delete_file(main_sm.snapshot_path(sid))
    for t in read_tags(io, main):
        if t.snapshot.id >= first:
            io.delete_file(tag_path(main, t.name))
    for sid in schema_ids(io, main):
        if sid >= first_schema:
            io.delete_file(posixpath.join(schema_dir(main), schema_file_name(sid)))
    _copy_schemas(io, source, main, max(schema_ids(io, source)))
    earliest = main_sm.valid_earliest_hint()
    if earliest is not None and earliest > first:
        main_sm.write_earliest_hint(first)
    for sid in branch_ids:
        _copy(io, branch_sm.snapshot_path(sid), posixpath.join(main_sm.snapshot_dir, snapshot_file_name(sid)))
    for t in read_tags(io, source):
        _copy(io, tag_path(source, t.name), tag_path(main, t.name))
    main_sm.write_latest_hint(branch_ids[-1])


def parse_branch_suffix(system: str) -> tuple[str | None, str | None]:
    """``branch_b`` -> (``b``, None); ``branch_b$files`` -> (``b``, ``files``); ``files`` -> (None, ``files``)."""
    head, _, rest = system.partition("$")
    if head.lower().startswith(BRANCH_TABLE_PREFIX):
        name = head[len(BRANCH_TABLE_PREFIX) :]
        return (name if name == MAIN_BRANCH else check_branch_name(name)), (rest or None)
    return None, system


__all__ = [
    "MAIN_BRANCH",
    "Branch",
    "branch_exists",
    "branch_of",
    "branch_root",
    "check_branch_name",
    "create_branch",
    "delete_branch",
    "fast_forward",
    "list_branches",
    "open_branch",
    "parse_branch_suffix",
]


def open_branch(table: H, name: str) -> H:
    """The table (the same class) as branch ``name``: its metadata under the branch's root, named
    ``<table>$branch_<name>``, on the branch's latest schema; ``main`` is the table itself."""
    main = table_root_of(table.root)
    if name == MAIN_BRANCH and table.root == main:
        return table
    root = branch_root(main, name)
    base = table.name.partition("$")[0]
    if not table.io.is_dir(root):
        raise NoSuchTableError(f"branch {name!r} of table {base} does not exist")
    schema = latest_schema(table.io, root, table_name=f"{base}$branch_{name}")
    label = base if name == MAIN_BRANCH else f"{base}$branch_{name}"
    return replace(table, name=label, root=root, schema=schema)
