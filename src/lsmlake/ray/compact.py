"""``table.compact(executor="ray")``: each bucket compacted by a Ray task, one COMPACT commit on the driver.

The driver restores the latest snapshot and sends each task one bucket's live files and its
deletion-vector index file (plain data); the task restores the vectors, runs the same
``compact_bucket`` as the local path and returns its commit message. The driver waits for every
task, so that when one fails it can delete what the others wrote before raising: no snapshot then.
A commit that loses a race is retried as the local one is (``commit.compaction.compact_and_publish``):
only the buckets another commit changed go to Ray again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ray

from lsmlake.commit.compaction import compact_and_publish
from lsmlake.compact.bucket_compactor import BucketFiles, compact_bucket, restore_deletion_vectors, written_by
from lsmlake.compact.executors import BucketCompactor, Compacted, delete_unpublished
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths, partition_directory
from lsmlake.core.schema import TableSchema
from lsmlake.errors import UnsupportedError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import IndexFileMeta
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.ray._common import Storage, TableSource, ensure_ray, open_source, portable_io
from lsmlake.scan.planner import POSTPONE_BUCKET


@dataclass(frozen=True)
class BucketJob:
    """What one compaction task gets: a bucket's live files and its deletion-vector index file."""

    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    total_buckets: int
    directory: str
    files: tuple[DataFileMeta, ...]
    dv_index: IndexFileMeta | None


def bucket_jobs(table: TableHandle, restored: RestoredState, buckets: Sequence[BucketKey]) -> list[BucketJob]:
    schema, options, paths = table.schema, table.options, table.paths
    ptypes = [schema.field(k).type for k in schema.partition_keys]
    jobs = []
    for partition, bucket in buckets:
        entries = restored.entries(partition, bucket)
        values = tuple(deserialize_row(partition, ptypes)) if ptypes else ()
        part_dir = partition_directory(schema, options, values)
        jobs.append(
            BucketJob(
                partition,
                values,
                bucket,
                entries[0].total_buckets,
                paths.bucket_dir(part_dir, bucket),
                tuple(e.file for e in entries),
                restored.dv_index.get((partition, bucket)),
            )
        )
    return jobs


def compact_job(
    storage: Storage,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    job: BucketJob,
    full: bool,
) -> CommitMessage | None:
    """On a worker: compact one bucket exactly as the local path does."""
    io, paths = storage.get(), TablePaths(root)
    key = (job.partition, job.bucket)
    restored = RestoredState(None, {}, {key: job.dv_index} if job.dv_index is not None else {})
    state = BucketFiles(
        job.partition,
        job.partition_values,
        job.bucket,
        job.total_buckets,
        job.directory,
        list(job.files),
        restore_deletion_vectors(io, paths, restored, job.partition, job.bucket, options, job.directory),
    )
    return compact_bucket(io, paths, schema, options, state, full=full)


_compact_remote = ray.remote(compact_job)


def _gather(refs: Sequence[ray.ObjectRef[Any]]) -> tuple[dict[int, Any], BaseException | None]:
    """Every task's result by position, and the first error; waits for all so none is left writing."""
    position = {ref: i for i, ref in enumerate(refs)}
    results: dict[int, Any] = {}
    error: BaseException | None = None
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            try:
                results[position[ref]] = ray.get(ref)
            except Exception as e:
                error = error or e
    return results, error


def ray_executor(table: TableHandle, full: bool) -> BucketCompactor:
    """The ``ray`` compaction executor (entry point ``lsmlake.compact_executors``): each bucket a Ray task."""
    return _ray_compactor(table, Storage(io=portable_io(table.io)), full, {})


def _ray_compactor(
    table: TableHandle, storage: Storage, full: bool, ray_remote_args: dict[str, Any]
) -> BucketCompactor:
    ensure_ray()
    remote = _compact_remote.options(**ray_remote_args) if ray_remote_args else _compact_remote

    def compact(state: RestoredState, buckets: Sequence[BucketKey]) -> Compacted:
        jobs = bucket_jobs(table, state, buckets)
        refs = [remote.remote(storage, table.root, table.schema, table.options, job, full) for job in jobs]
        try:
            results, error = _gather(refs)
        except BaseException:  # interrupted while waiting: stop the tasks; their outputs become orphans
            for ref in refs:
                ray.cancel(ref)
            raise
        out: Compacted = {}
        for i, job in enumerate(jobs):
            message = results.get(i)
            if message is not None:
                out[(job.partition, job.bucket)] = (message, written_by(message, job.directory, table.paths, table.options))
        if error is not None:
            for _, files in out.values():
                delete_unpublished(table, files)
            raise error
        return out

    return compact


def compact_table_ray(source: TableSource, *, full: bool = False, **ray_remote_args: Any) -> int | None:
    """Compact every bucket of the latest snapshot on Ray; the COMPACT snapshot's id, or None."""
    table, storage = open_source(source)
    table.check_committable()
    if not table.schema.primary_keys:
        raise UnsupportedError(f"table {table.name}: compaction of append tables is not supported yet")
    restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    if restored.snapshot is None:
        return None
    compact = _ray_compactor(table, storage, full, ray_remote_args)
    buckets = [b for b in restored.buckets() if b[1] != POSTPONE_BUCKET]  # see compact_postponed
    return compact_and_publish(table, restored, buckets, compact)
