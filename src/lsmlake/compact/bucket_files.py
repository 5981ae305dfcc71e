"""What one bucket's compaction starts from (its live files and deletion vectors) and the bookkeeping of
what it wrote: the files to delete if the commit fails, and two compactions of a bucket folded into one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from lsmlake.core.external_paths import index_file_path, located_path
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import PathGuard
from lsmlake.core.paths import TablePaths
from lsmlake.mergetree.dv_maintainer import BucketDeletionVectors
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.restore import RestoredState


@dataclass
class BucketFiles:
    """The live state of one bucket that compaction starts from."""

    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    total_buckets: int
    directory: str
    files: list[DataFileMeta]
    deletion_vectors: BucketDeletionVectors


def restore_deletion_vectors(
    io: FileIO,
    paths: TablePaths,
    restored: RestoredState,
    partition: bytes,
    bucket: int,
    options: CoreOptions,
    directory: str | None = None,
) -> BucketDeletionVectors:
    """The committed deletion vectors of one bucket (whose data files are in ``directory``)."""
    index_file = restored.dv_index.get((partition, bucket))
    path = None
    if index_file is not None:
        path = PathGuard.of(io, paths.root, options).resolve(
            index_file.external_path,
            index_file_path(paths.index_file(index_file.file_name), directory, index_file.file_name, None, options),
            source=f"deletion vector index {index_file.file_name}",
        )
    return BucketDeletionVectors.restore(
        io, path, index_file, bitmap64=options.get(CoreOptions.DELETION_VECTORS_BITMAP64)
    )


def written_by(
    message: CommitMessage, directory: str, paths: TablePaths, options: CoreOptions | None = None
) -> list[str]:
    """Paths of the files a compaction wrote (to delete them if the commit fails)."""
    before = {f.file_name for f in message.compact_before}
    out = [
        located_path(directory, f.file_name, f.external_path)
        for f in (*message.compact_after, *message.compact_changelog_files)
        if f.file_name not in before
    ]
    out += [
        paths.index_file(f.file_name)
        if options is None
        else index_file_path(paths.index_file(f.file_name), directory, f.file_name, f.external_path, options)
        for f in message.new_index_files
    ]
    return out


def combine_results(
    first: CommitMessage,
    second: CommitMessage,
    *,
    data_path: Callable[[str], str],
    index_path: Callable[[str], str],
    delete: Callable[[str], None],
) -> CommitMessage:
    """Two compactions of one bucket as one change; files the first wrote and the second replaced are deleted."""
    first_after = {(f.file_name, f.level) for f in first.compact_after}
    consumed = {
        (f.file_name, f.level) for f in second.compact_before if (f.file_name, f.level) in first_after
    }
    original = {f.file_name for f in first.compact_before}
    for name, _ in consumed:
        if name not in original:
            delete(data_path(name))
    if first.new_index_files and (second.new_index_files or second.deleted_index_files):
        for f in first.new_index_files:
            delete(index_path(f.file_name))
        new_index, deleted_index = second.new_index_files, first.deleted_index_files
    elif first.new_index_files:
        new_index, deleted_index = first.new_index_files, first.deleted_index_files
    else:
        new_index, deleted_index = (
            second.new_index_files,
            first.deleted_index_files + second.deleted_index_files,
        )
    return replace(
        first,
        compact_before=first.compact_before
        + tuple(f for f in second.compact_before if (f.file_name, f.level) not in consumed),
        compact_after=tuple(f for f in first.compact_after if (f.file_name, f.level) not in consumed)
        + second.compact_after,
        new_index_files=new_index,
        deleted_index_files=deleted_index,
        compact_changelog_files=first.compact_changelog_files + second.compact_changelog_files,
    )
