"""Batch writes to postpone tables (``postpone.batch-write-fixed-bucket``): rows go straight to real buckets.

As Java Paimon's batch sinks (Flink's ``PostponeFixedBucketSink``, Spark's ``PostponeFixBucketProcessor``)
do: a partition whose real buckets hold files keeps their count (the ``total_buckets`` its manifest
entries carry, Java's ``PostponeUtils.getKnownNumBuckets``); a partition without any gets
``min(writer parallelism, postpone.batch-write-fixed-bucket.max-parallelism)`` buckets; lsmlake writes
with one writer, so that is 1 (a rescale can change a partition's count). The rows are hashed into
those buckets with the table's bucket key and written as level-0 files of the table's own format (no
postpone file naming), as Java's ``write-only`` writer does, committed with the partition's bucket count
as ``total_buckets``; each bucket's sequence numbers continue from its restored files.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lsmlake.bucket.routing import RowGroup, route_rows
from lsmlake.core.bucket import bucket_ids
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.errors import CorruptFileError, InvalidOptionError
from lsmlake.metadata.index_manifest import IndexFileMeta
from lsmlake.metadata.restore import RestoredState
from lsmlake.scan.planner import POSTPONE_BUCKET

BucketId = tuple[bytes, int]
WRITER_PARALLELISM = 1
"""lsmlake writes a table with one writer: Java gives a new partition as many buckets as it has writers."""


def batch_write_fixed_bucket(schema: TableSchema, options: CoreOptions) -> bool:
    """Whether a write to this table goes to real buckets instead of ``bucket-postpone``."""
    return (
        bool(schema.primary_keys)
        and options.bucket == POSTPONE_BUCKET
        and options.get(CoreOptions.POSTPONE_BATCH_WRITE_FIXED_BUCKET)
    )


def known_bucket_counts(restored: RestoredState) -> dict[bytes, int]:
    """The bucket count of every partition whose real buckets hold files (their ``total_buckets``)."""
    counts: dict[bytes, int] = {}
    for (partition, bucket), entries in restored.files.items():
        if bucket < 0:
            continue
        for e in entries:
            if e.total_buckets < 0:
                continue
            old = counts.setdefault(partition, e.total_buckets)
            if old != e.total_buckets:
                raise CorruptFileError(
                    f"a partition of this postpone table has files written with {old} and with "
                    f"{e.total_buckets} buckets (file {e.file.file_name})"
                )
    return counts


def new_partition_bucket_num(options: CoreOptions) -> int:
    """Buckets a partition without real-bucket files gets: min(parallelism, max-parallelism)."""
    cap = options.get(CoreOptions.POSTPONE_BATCH_WRITE_FIXED_BUCKET_MAX_PARALLELISM)
    key = CoreOptions.POSTPONE_BATCH_WRITE_FIXED_BUCKET_MAX_PARALLELISM.key
    if cap <= 0:
        raise InvalidOptionError(f"option {key!r} must be > 0, got {cap}")
    return min(WRITER_PARALLELISM, cap)


class PostponeFixedBucketRouter:
    """Routes a postpone table's batch-written rows to real buckets, per partition (see module docstring)."""

    def __init__(
        self, schema: TableSchema, options: CoreOptions, restored: Callable[[], RestoredState]
    ) -> None:
        self.schema = schema
        self.default_num = new_partition_bucket_num(options)
        self._restored = restored
        self._counts: dict[bytes, int] | None = None
        self.written_paths: list[str] = []

    def total_buckets(self, partition: bytes) -> int:
        """The bucket count this write gives ``partition`` (its known count, else the default)."""
        if self._counts is None:
            self._counts = known_bucket_counts(self._restored())
        return self._counts.setdefault(partition, self.default_num)

    def route(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray, list[RowGroup]]:
        groups: list[RowGroup] = []
        keys = list(self.schema.bucket_keys)
        types = [self.schema.field(k).type for k in keys]
        for part in route_rows(rows, self.schema, 0):
            n = self.total_buckets(part.partition)
            taken = rows.select(keys).take(pa.array(part.indices))
            buckets = bucket_ids([taken.column(k) for k in keys], types, n).astype(np.int64)
            order = np.argsort(buckets, kind="stable")  # arrival order kept within a bucket
            sorted_buckets = buckets[order]
            starts = np.flatnonzero(np.r_[True, sorted_buckets[1:] != sorted_buckets[:-1]])
            ends = np.r_[starts[1:], len(order)]
            for s, e in zip(starts, ends, strict=True):
                groups.append(
                    RowGroup(
                        part.partition,
                        part.partition_values,
                        int(sorted_buckets[s]),
                        part.indices[order[s:e]],
                    )
                )
        return rows, kinds, groups

    def prepare_commit(self) -> dict[BucketId, IndexFileMeta]:
        return {}
