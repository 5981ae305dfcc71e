"""Compaction executors by name: each compacts given buckets of a restored snapshot into commit messages.

``local`` is built in; others (``ray``) are plugins declared as entry points of the group
``lsmlake.compact_executors`` (pyproject.toml), loaded the first time they are asked for, so this
layer never imports the integrations that provide them.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import entry_points
from typing import TypeVar

from rich.console import Console
from rich.progress import track

from lsmlake.compact.bucket_compactor import BucketFiles, compact_bucket, restore_deletion_vectors, written_by
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.paths import partition_directory
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.metadata.table_handle import TableHandle

T = TypeVar("T")

ENTRY_POINT_GROUP = "lsmlake.compact_executors"

# Each compacted bucket's commit message and the files it wrote (to delete them if it is not published).
Compacted = dict[BucketKey, tuple[CommitMessage, list[str]]]
# Compacts the given buckets as they are in the given state; one that fails deletes what it wrote first.
BucketCompactor = Callable[[RestoredState, Sequence[BucketKey]], Compacted]
# An executor: the compactor of one table (``full``: everything to the max level, else its strategy).
Executor = Callable[[TableHandle, bool], BucketCompactor]

_EXECUTORS: dict[str, Executor] = {}
_LOCK = threading.Lock()


def register_executor(name: str, executor: Executor) -> None:
    """Make ``executor`` available as ``table.compact(executor=name)``."""
    with _LOCK:
        _EXECUTORS[name] = executor


def executor_names() -> list[str]:
    """The executors registered or declared as entry points."""
    declared = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    with _LOCK:
        return sorted(declared | set(_EXECUTORS))


def executor(name: str) -> Executor:
    """The executor called ``name``, loading its entry point the first time; ValueError if unknown."""
    with _LOCK:
        found = _EXECUTORS.get(name)
    if found is not None:
        return found
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            loaded: Executor = ep.load()  # imports the plugin (e.g. lsmlake.ray, the `ray` extra)
            register_executor(name, loaded)
            return loaded
    known = " or ".join(repr(n) for n in executor_names())
    raise ValueError(f"executor must be {known}, got {name!r}")


def progress(items: Sequence[T], description: str) -> Iterable[T]:
    """Iterate with a progress bar on an interactive terminal, silently otherwise."""
    if not sys.stderr.isatty() or len(items) < 2:
        return items
    return track(items, description=description, console=Console(stderr=True), transient=True)


def delete_unpublished(table: TableHandle, paths: Iterable[str]) -> None:
    """Delete files a compaction wrote but did not publish; a file that cannot be deleted is only
    warned about (it is an orphan for orphan cleaning), so the error being handled is not masked."""
    for path in paths:
        try:
            table.io.delete_file(path)
        except Exception as e:
            warnings.warn(f"table {table.name}: could not delete unpublished file {path}: {e}", stacklevel=2)


def local_executor(table: TableHandle, full: bool) -> BucketCompactor:
    """Compact the buckets one after the other in this process."""

    def compact(restored: RestoredState, buckets: Sequence[BucketKey]) -> Compacted:
        out: Compacted = {}
        try:
            for partition, bucket in progress(buckets, f"compacting {table.name}"):
                message, files = _compact_one(table, restored, partition, bucket, full=full)
                if message is not None:
                    out[(partition, bucket)] = (message, files)
        except BaseException:
            for _, files in out.values():
                delete_unpublished(table, files)
            raise
        return out

    return compact


def _compact_one(
    table: TableHandle, restored: RestoredState, partition: bytes, bucket: int, *, full: bool
) -> tuple[CommitMessage | None, list[str]]:
    """One bucket's compaction message (None when it needs none) and the files it wrote."""
    schema, options, paths = table.schema, table.options, table.paths
    entries = restored.entries(partition, bucket)
    ptypes = [schema.field(k).type for k in schema.partition_keys]
    values = tuple(deserialize_row(partition, ptypes)) if ptypes else ()
    directory = paths.bucket_dir(partition_directory(schema, options, values), bucket)
    state = BucketFiles(
        partition,
        values,
        bucket,
        entries[0].total_buckets,
        directory,
        [e.file for e in entries],
        restore_deletion_vectors(table.io, paths, restored, partition, bucket, options, directory),
    )
    message = compact_bucket(table.io, paths, schema, options, state, full=full)
    return message, [] if message is None else written_by(message, state.directory, paths, options)


register_executor("local", local_executor)
