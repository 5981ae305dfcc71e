"""Which router a primary-key writer uses for its bucket mode: dynamic, cross-partition or postpone."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np
import pyarrow as pa

from lsmlake.bucket.cross_partition import CrossPartitionRouter, is_cross_partition
from lsmlake.bucket.dynamic import DynamicBucketRouter
from lsmlake.bucket.routing import RowGroup, route_rows
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.errors import InvalidOptionError, SchemaMismatchError
from lsmlake.format.avro_schema import data_file_schema
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.index_manifest import IndexFileMeta
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.scan.planner import POSTPONE_BUCKET as POSTPONE_BUCKET  # re-exported

BucketId = tuple[bytes, int]


class BucketRouter(Protocol):
    """Assigns buckets to a batch (possibly adding or re-partitioning rows) and owns index files."""

    written_paths: list[str]

    def route(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray, list[RowGroup]]: ...

    def prepare_commit(self) -> dict[BucketId, IndexFileMeta]: ...


class PostponeRouter:
    """``bucket = -2``: every row of a partition goes to ``bucket-postpone`` until compaction."""

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        self.written_paths: list[str] = []

    def route(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray, list[RowGroup]]:
        groups = [replace(g, bucket=POSTPONE_BUCKET) for g in route_rows(rows, self.schema, 0)]
        return rows, kinds, groups

    def prepare_commit(self) -> dict[BucketId, IndexFileMeta]:
        return {}


def postpone_write_options(options: CoreOptions, schema: TableSchema) -> CoreOptions:
    """Options of a postpone-bucket writer, as Java's ``PostponeBucketFileStoreWrite`` sets them: file names
    carry ``-u-<user>-s-<writer>-w-`` (its compaction groups files by that writer prefix), and files are avro
    without stats whenever Avro can hold the table's columns."""
    prefix = f"{options.data_file_prefix}-u-{uuid.uuid4()}-s-{random.randrange(2**31 - 1)}-w-"
    raw = {**options.raw, CoreOptions.DATA_FILE_PREFIX.key: prefix}
    try:
        data_file_schema(schema.fields)
    except SchemaMismatchError:
        pass  # a type or a column name Avro cannot hold: the table's own format
    else:
        raw.update({CoreOptions.FILE_FORMAT.key: "avro", CoreOptions.METADATA_STATS_MODE.key: "none"})
    return CoreOptions.of(raw, primary_key_table=True)


def router_for(
    io: FileIO,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    snapshot: Callable[[], Snapshot | None],
) -> BucketRouter | None:
    """The router of a primary-key table in dynamic or postpone mode; None for fixed buckets."""
    if not schema.primary_keys or options.bucket > 0:
        return None
    if options.bucket == POSTPONE_BUCKET:
        return PostponeRouter(schema)
    if options.get(CoreOptions.BUCKET_KEY):
        raise InvalidOptionError("option 'bucket-key' cannot be set in dynamic bucket mode (bucket = -1)")
    if is_cross_partition(schema, options):
        return CrossPartitionRouter(io, root, schema, options, snapshot)
    return DynamicBucketRouter(io, TablePaths(root), schema, options, snapshot)


def attach_index_files(
    messages: Sequence[CommitMessage], files: dict[BucketId, IndexFileMeta], total_buckets: int
) -> list[CommitMessage]:
    """Add each bucket's new HASH index file to its commit message (a message of its own if needed)."""
    out = []
    pending = dict(files)
    for m in messages:
        meta = pending.pop((m.partition, m.bucket), None)
        out.append(m if meta is None else replace(m, new_index_files=(*m.new_index_files, meta)))
    out += [
        CommitMessage(partition, bucket, total_buckets, new_index_files=(meta,))
        for (partition, bucket), meta in pending.items()
    ]
    return out


def bucket_mode_text(schema: TableSchema, options: CoreOptions) -> str:
    """A one-line description of the table's bucket mode (for ``explain``)."""
    bucket = options.bucket
    if bucket > 0:
        return f"bucket mode: fixed, {bucket} bucket(s)"
    if not schema.primary_keys:
        return "bucket mode: bucket-unaware (append, bucket = -1)"
    if bucket == POSTPONE_BUCKET:
        writes = (
            "writes go to real buckets (postpone.batch-write-fixed-bucket)"
            if options.get(CoreOptions.POSTPONE_BATCH_WRITE_FIXED_BUCKET)
            else "writes go to bucket-postpone"
        )
        return f"bucket mode: postpone (bucket = -2); {writes}; rows in bucket-postpone are read after compaction"
    if is_cross_partition(schema, options):
        return "bucket mode: dynamic, cross-partition upsert (bucket = -1, global key index)"
    return "bucket mode: dynamic (bucket = -1, HASH index per bucket)"
