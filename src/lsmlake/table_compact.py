"""``table.compact()``: compact every bucket of the latest snapshot and commit one COMPACT snapshot."""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from rich.console import Console
from rich.progress import track

from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.paths import partition_directory
from lsmlake.errors import UnsupportedError
from lsmlake.operations.bucket_routers import POSTPONE_BUCKET
from lsmlake.operations.commit import FileStoreCommit
from lsmlake.operations.commit_message import CommitMessage
from lsmlake.operations.compact import BucketFiles, compact_bucket, restore_deletion_vectors, written_by
from lsmlake.operations.postpone import PostponeCompactor
from lsmlake.operations.restore import RestoredState

T = TypeVar("T")

if TYPE_CHECKING:
    from lsmlake.table import Table


def progress(items: Sequence[T], description: str) -> Iterable[T]:
    """Iterate with a progress bar on an interactive terminal, silently otherwise."""
    if not sys.stderr.isatty() or len(items) < 2:
        return items
    return track(items, description=description, console=Console(stderr=True), transient=True)


def compact_table(
    table: Table,
    *,
    full: bool = False,
    executor: str = "local",
    only: Collection[tuple[bytes, int]] | None = None,
    commit_user: str | None = None,
) -> int | None:
    """Compact each bucket (its strategy, or everything to the max level when ``full``); snapshot id or None.

    ``executor="ray"`` compacts the buckets as Ray tasks (needs ``lsmlake[ray]``) and commits once.
    ``only`` limits the compaction to these (partition, bucket) pairs (postponed rows are left alone);
    ``commit_user`` commits as that writer (a write re-running its own compaction).
    """
    if executor == "ray":
        from lsmlake.ray.compact import compact_table_ray  # optional extra, imported only when asked

        latest = table.snapshot_manager.latest()
        postponed = (
            compact_postponed(table, RestoredState.load(table.io, table.paths, latest)) if latest else None
        )
        return compact_table_ray(table, full=full) or postponed
    if executor != "local":
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    schema, options = table.schema, table.options
    if not schema.primary_keys:
        raise UnsupportedError(f"table {table.name}: compaction of append tables is not supported yet")
    restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    if restored.snapshot is None:
        return None
    # bucket = -2: give postponed rows real buckets first
    postponed = compact_postponed(table, restored) if only is None else None
    if postponed is not None:
        restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    paths = table.paths
    ptypes = [schema.field(k).type for k in schema.partition_keys]
    messages: list[CommitMessage] = []
    written: list[str] = []
    buckets = [b for b in restored.buckets() if b[1] != POSTPONE_BUCKET and (only is None or b in only)]
    try:
        for partition, bucket in progress(buckets, f"compacting {table.name}"):
            entries = restored.entries(partition, bucket)
            values = tuple(deserialize_row(partition, ptypes)) if ptypes else ()
            part_dir = partition_directory(schema, options, values)
            state = BucketFiles(
                partition,
                values,
                bucket,
                entries[0].total_buckets,
                paths.bucket_dir(part_dir, bucket),
                [e.file for e in entries],
                restore_deletion_vectors(table.io, paths, restored, partition, bucket, options),
            )
            message = compact_bucket(table.io, paths, schema, options, state, full=full)
            if message is not None:
                messages.append(message)
                written.extend(written_by(message, state.directory, paths))
        if not messages:
            return postponed
        committer = FileStoreCommit(
            table.io, table.root, schema, options, table_name=table.name, commit_user=commit_user
        )
        ids = committer.commit(messages)
    except BaseException:
        for path in written:
            table.io.delete_file(path)
        raise
    return ids[-1] if ids else None


def compact_postponed(table: Table, restored: RestoredState) -> int | None:
    """Move the rows of every ``bucket-postpone`` into real buckets in one COMPACT snapshot (or None)."""
    compactor = PostponeCompactor(
        table.io, table.root, table.schema, table.options, restored, table_name=table.name
    )
    if not compactor.partitions():
        return None
    try:
        messages = compactor.compact()
        committer = FileStoreCommit(table.io, table.root, table.schema, table.options, table_name=table.name)
        ids = committer.commit(messages)
    except BaseException:
        for path in compactor.written_paths:
            table.io.delete_file(path)
        raise
    return ids[-1] if ids else None
