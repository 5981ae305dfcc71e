"""What dropping a table deletes beyond its directory: the `data-file.external-paths` roots its schemas name."""

from __future__ import annotations

import posixpath
import warnings

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import PathRefusedWarning, split_location
from lsmlake.core.paths import is_inside
from lsmlake.core.schema import read_schema, schema_file_name
from lsmlake.maintenance.protect import branch_roots
from lsmlake.schema_change.manager import schema_dir, schema_ids


def external_roots_of(io: FileIO, root: str) -> list[str]:
    """Every root (a path of ``io``) that `data-file.external-paths` names in any schema of the table or of
    its branches, as Java's dropTable collects them (whatever the strategy)."""
    found: list[str] = []
    for r in [root, *branch_roots(io, root)]:
        for sid in schema_ids(io, r):
            options = read_schema(io, posixpath.join(schema_dir(r), schema_file_name(sid))).options
            for item in (options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS.key) or "").split(","):
                location = split_location(item.strip(), local=io.local) if item.strip() else None
                if isinstance(location, tuple) and location[1] not in found:
                    found.append(location[1])
    return found


def delete_external_roots(io: FileIO, roots: list[str], *, table_root: str, table: str) -> None:
    """Delete each root with everything in it (Java's dropTable), except a root the table (and so its
    warehouse) lies in, or a filesystem root: those are left alone with a warning."""
    for r in roots:
        if r in ("", "/") or is_inside(r, table_root):
            warnings.warn(
                f"dropping {table}: left external root {r} alone (the table lies inside it)",
                PathRefusedWarning,
                stacklevel=3,
            )
            continue
        if io.is_dir(r):
            io.delete_dir(r)
