"""``table.compact()``: compact every bucket of the latest snapshot and commit one COMPACT snapshot;
buckets that another commit changed meanwhile are compacted again from the then latest snapshot."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from rich.console import Console
from rich.progress import track

from lsmlake.bucket.routers import POSTPONE_BUCKET
from lsmlake.commit.committer import FileStoreCommit
from lsmlake.compact.bucket_compactor import BucketFiles, compact_bucket, restore_deletion_vectors, written_by
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.paths import partition_directory
from lsmlake.errors import CommitConflictError, UnsupportedError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.write.postpone import PostponeCompactor

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

    ``executor="ray"`` compacts the buckets as Ray tasks (needs the ``ray`` extra) and commits once.
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
    if not table.schema.primary_keys:
        raise UnsupportedError(f"table {table.name}: compaction of append tables is not supported yet")
    restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    if restored.snapshot is None:
        return None
    # bucket = -2: give postponed rows real buckets first
    last = compact_postponed(table, restored) if only is None else None
    if last is not None:
        restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    pending = [b for b in restored.buckets() if b[1] != POSTPONE_BUCKET and (only is None or b in only)]
    done = compact_and_publish(
        table, restored, pending, _local_compactor(table, full), commit_user=commit_user
    )
    return done if done is not None else last


# Each compacted bucket's commit message and the files it wrote (to delete them if it is not published).
Compacted = dict[BucketKey, tuple[CommitMessage, list[str]]]
# Compacts the given buckets as they are in the given state (locally, or as Ray tasks); a compactor that
# fails deletes what it wrote before raising.
BucketCompactor = Callable[[RestoredState, Sequence[BucketKey]], Compacted]

# Attempts at one COMPACT snapshot; after a conflict, the buckets that another commit changed are
# compacted again from the then latest snapshot, and the others keep the files already written.
COMPACT_ATTEMPTS = 3


def compact_and_publish(
    table: Table,
    restored: RestoredState,
    buckets: Sequence[BucketKey],
    compact: BucketCompactor,
    *,
    commit_user: str | None = None,
) -> int | None:
    """Compact ``buckets`` and publish them in one COMPACT snapshot (its id; None if none needed it).

    A conflict costs only the buckets whose input files are no longer all live: they are compacted again
    from the latest snapshot. Out of attempts, nothing is published, every new file is deleted, and
    CommitConflictError is raised."""
    kept: Compacted = {}
    lost: list[BucketKey] = []
    pending = [b for b in buckets if restored.entries(*b)]
    try:
        for _ in range(COMPACT_ATTEMPTS):
            kept.update(compact(restored, pending))
            if not kept:
                return None
            try:
                return _commit(table, [m for m, _ in kept.values()], commit_user)
            except CommitConflictError:
                pass
            restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
            lost = [b for b, (m, _) in kept.items() if not _inputs_live(m, restored)]
            lost = lost or list(kept)  # not explained by the inputs: redo them all
            for b in lost:
                delete_unpublished(table, kept.pop(b)[1])
            pending = [b for b in lost if restored.entries(*b)]  # some may have been emptied since
    except BaseException:
        for _, files in kept.values():
            delete_unpublished(table, files)
        raise
    for _, files in kept.values():
        delete_unpublished(table, files)
    raise CommitConflictError(
        f"table {table.name}: the compaction lost to other writers' commits {COMPACT_ATTEMPTS} times "
        f"({len(lost)} bucket(s) changed under it); nothing was published"
    )


def _local_compactor(table: Table, full: bool) -> BucketCompactor:
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
    table: Table, restored: RestoredState, partition: bytes, bucket: int, *, full: bool
) -> tuple[CommitMessage | None, list[str]]:
    """One bucket's compaction message (None when it needs none) and the files it wrote."""
    schema, options, paths = table.schema, table.options, table.paths
    entries = restored.entries(partition, bucket)
    ptypes = [schema.field(k).type for k in schema.partition_keys]
    values = tuple(deserialize_row(partition, ptypes)) if ptypes else ()
    state = BucketFiles(
        partition,
        values,
        bucket,
        entries[0].total_buckets,
        paths.bucket_dir(partition_directory(schema, options, values), bucket),
        [e.file for e in entries],
        restore_deletion_vectors(table.io, paths, restored, partition, bucket, options),
    )
    message = compact_bucket(table.io, paths, schema, options, state, full=full)
    return message, [] if message is None else written_by(message, state.directory, paths)


def _commit(table: Table, messages: Sequence[CommitMessage], commit_user: str | None) -> int | None:
    committer = FileStoreCommit(
        table.io, table.root, table.schema, table.options, table_name=table.name, commit_user=commit_user
    )
    ids = committer.commit(messages)
    return ids[-1] if ids else None


def _inputs_live(message: CommitMessage, latest: RestoredState) -> bool:
    """Whether every file the compaction replaces is still live in its bucket of ``latest``."""
    live = {e.file.file_name for e in latest.entries(message.partition, message.bucket)}
    return all(f.file_name in live for f in message.compact_before)


def delete_unpublished(table: Table, paths: Iterable[str]) -> None:
    """Delete files a compaction wrote but did not publish; a file that cannot be deleted is only
    warned about (it is an orphan for orphan cleaning), so the error being handled is not masked."""
    for path in paths:
        try:
            table.io.delete_file(path)
        except Exception as e:
            warnings.warn(f"table {table.name}: could not delete unpublished file {path}: {e}", stacklevel=2)


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
        delete_unpublished(table, compactor.written_paths)
        raise
    return ids[-1] if ids else None
