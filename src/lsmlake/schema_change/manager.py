"""Committing schema changes: read the latest ``schema-N``, apply, write ``schema-N+1`` create-only.

Two ALTERs racing for the same ``schema-N+1`` cannot both win: the file is created only if absent
(hard link on local disk, conditional put on object stores). The loser re-reads the new latest
schema and applies its changes again (as Paimon's SchemaManager.commitChanges does); if they no
longer apply it raises CommitConflictError naming the schema that won.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import split_location
from lsmlake.core.paths import is_inside
from lsmlake.core.schema import SCHEMA_PREFIX, TableSchema, read_schema, schema_file_name, write_schema
from lsmlake.errors import (
    CommitConflictError,
    CorruptFileError,
    LsmlakeError,
    NoSuchTableError,
    UnsupportedError,
)
from lsmlake.metadata.index_manifest import read_index_manifest
from lsmlake.metadata.manifest import read_manifest
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.schema_change.apply import apply_changes, check_changes
from lsmlake.schema_change.changes import SchemaChange

MAX_ATTEMPTS = 10


def schema_dir(root: str) -> str:
    return posixpath.join(root, "schema")


def schema_ids(io: FileIO, root: str) -> list[int]:
    """The ids of every ``schema-<id>`` file of the table, ascending."""
    ids = []
    for s in io.list_dir(schema_dir(root)):
        suffix = s.name[len(SCHEMA_PREFIX) :]
        if not s.is_dir and s.name.startswith(SCHEMA_PREFIX) and suffix.isdigit():
            ids.append(int(suffix))
    return sorted(ids)


def latest_schema(io: FileIO, root: str, *, table_name: str = "") -> TableSchema:
    """The newest schema of the table at ``root`` (NoSuchTableError when it has none)."""
    ids = schema_ids(io, root)
    if not ids:
        raise NoSuchTableError(f"table {table_name or root} does not exist (no schema file)")
    return read_schema(io, posixpath.join(schema_dir(root), schema_file_name(ids[-1])))


def schema_at(io: FileIO, root: str, schema_id: int, *, table_name: str = "") -> TableSchema:
    """Schema ``schema_id`` of the table at ``root`` (a snapshot's ``schemaId``), CorruptFileError if absent."""
    path = posixpath.join(schema_dir(root), schema_file_name(schema_id))
    try:
        return read_schema(io, path)
    except FileNotFoundError:
        raise CorruptFileError(
            f"table {table_name or root}: schema {schema_id} is missing ({path})"
        ) from None


def commit_changes(
    io: FileIO,
    root: str,
    changes: Sequence[SchemaChange],
    *,
    table_name: str = "",
    max_attempts: int = MAX_ATTEMPTS,
) -> TableSchema:
    """Apply ``changes`` to the latest schema and write it as the next schema version; returns it.

    When the changes change nothing, nothing is written and the latest schema is returned. Refused
    changes raise (SchemaChangeError, InvalidOptionError, UnsupportedError) before anything is written.
    """
    checked = check_changes(changes)
    name = table_name or root
    lost_to: TableSchema | None = None
    for _ in range(max(1, max_attempts)):
        latest = latest_schema(io, root, table_name=name)
        try:
            new = apply_changes(
                latest,
                checked,
                table_name=name,
                has_snapshots=lambda: SnapshotManager(io, root).latest_id() is not None,
            )
        except (LsmlakeError, ValueError) as e:
            if lost_to is None:
                raise
            raise CommitConflictError(
                f"table {name}: a concurrent ALTER committed schema-{lost_to.id} first and the change no "
                f"longer applies to it: {e}"
            ) from e
        if new is None:
            return latest
        if write_schema(io, posixpath.join(schema_dir(root), schema_file_name(new.id)), new):
            return new
        lost_to = latest_schema(io, root, table_name=name)
    raise CommitConflictError(
        f"table {name}: gave up after {max_attempts} attempts: concurrent ALTERs kept claiming the next "
        "schema id first"
    )


# --------------------------------------------------------------------------- table rename


def external_paths(io: FileIO, root: str) -> list[str]:
    """Absolute paths any manifest of the table (any snapshot, tag or leftover) refers to."""
    found: list[str] = []
    manifest_dir = posixpath.join(root, "manifest")
    for s in io.list_dir(manifest_dir):
        if s.is_dir or s.name.startswith("."):
            continue
        path = posixpath.join(manifest_dir, s.name)
        if s.name.startswith("index-manifest-"):
            found += [
                e.index_file.external_path
                for e in read_index_manifest(io, path)
                if e.index_file.external_path
            ]
        elif s.name.startswith("manifest-") and not s.name.startswith("manifest-list-"):
            found += [e.file.external_path for e in read_manifest(io, path) if e.file.external_path]
    return found


def rename_table_dir(io: FileIO, source: str, target: str, *, source_name: str, target_name: str) -> None:
    """Move a table's directory (local warehouses only; refuses tables that use absolute paths)."""
    if not io.local:
        raise UnsupportedError(
            f"cannot rename {source_name} to {target_name}: renaming a directory on an object store is not "
            "atomic; copy the table instead"
        )
    # files under a `data-file.external-paths` root outside the table stay where they are, as in Java;
    # absolute paths into the table's own directory would go stale
    inside = [p for p in external_paths(io, source) if _inside_of(source, p, local=io.local)]
    if inside:
        raise UnsupportedError(
            f"cannot rename {source_name}: its metadata refers to absolute file paths inside it (e.g. {inside[0]}), "
            "which a directory move would not carry along"
        )
    io.rename(source, target)


def _inside_of(root: str, location: str, *, local: bool) -> bool:
    """Whether the absolute path or URI ``location`` lies in ``root`` (a path of the table's FileIO)."""
    found = split_location(location, local=local)
    return isinstance(found, str) or is_inside(root, found[1])
