"""Removing the bucket and partition directories that deleting data files left empty (as Java's orphan
cleaning always does, and its snapshot expiry with `snapshot.clean-empty-directories`)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import table_root_of


def remove_empty_data_dirs(io: FileIO, table_root: str, deleted_files: Iterable[str]) -> list[str]:
    """Remove the now-empty bucket directories of ``deleted_files``, then their partition directories
    from the deepest up, stopping at the first that is not empty (or is not a partition directory).
    Nothing outside ``table_root`` is touched. Returns the directories removed."""
    root = posixpath.normpath(table_root_of(table_root))  # a branch's data dirs are the table's
    parents = {posixpath.dirname(posixpath.normpath(p)) for p in deleted_files}
    buckets = {d for d in parents if posixpath.basename(d).startswith("bucket-")}
    removed = [d for d in sorted(buckets) if _inside(d, root) and io.delete_empty_dir(d)]
    level = {posixpath.dirname(d) for d in removed}
    while level:
        gone = [d for d in sorted(level) if _is_partition_dir(d, root) and io.delete_empty_dir(d)]
        removed += gone
        level = {posixpath.dirname(d) for d in gone}
    return removed


def _inside(path: str, root: str) -> bool:
    return path.startswith(root + "/")


def _is_partition_dir(path: str, root: str) -> bool:
    """``k=v`` directories below the table root (or below `data-file.path-directory` within it)."""
    return _inside(path, root) and "=" in posixpath.basename(path)
