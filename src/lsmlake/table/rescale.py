"""``CALL sys.rescale`` planned: a fixed-bucket table's (or partition's) new bucket count checked;
``Table.rescale`` then rewrites the rows in one OVERWRITE snapshot. As Paimon's RescaleAction, the schema
on storage is never changed: the new count is the overwrite's own (ALTER TABLE sets the table's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow.compute as pc

from lsmlake.bucket.routers import POSTPONE_BUCKET
from lsmlake.errors import InvalidPartitionSpecError, UnsupportedError
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.table.partition_expire import live_partitions
from lsmlake.table.writer import partition_matcher, typed_partition_spec


@dataclass(frozen=True)
class RescalePlan:
    """What a rescale rewrites: the rows of ``snapshot_id`` matching ``filter``, into ``bucket_num``
    buckets; ``partition`` (typed spec) for one partition, else every partition holding live rows."""

    snapshot_id: int
    bucket_num: int
    filter: pc.Expression | None
    partition: dict[str, object] | None


def _spec_filter(spec: Mapping[str, object]) -> pc.Expression | None:
    out: pc.Expression | None = None
    for k, v in spec.items():
        term = pc.field(k).is_null() if v is None else pc.field(k) == v
        out = term if out is None else out & term
    return out


def plan_rescale(
    table: TableHandle, bucket_num: int | None, partition: Mapping[str, object] | None = None
) -> RescalePlan:
    """Check a rescale of the latest snapshot (of ``partition`` only, when given) into ``bucket_num``
    buckets (default: the table's `bucket`, so ALTER TABLE SET ('bucket' = 'n') then a rescale is
    Paimon's documented way to change a table's count). The schema stays, as Paimon's RescaleAction
    leaves it: the partitions rewritten into another count than the table's `bucket` refuse writes
    until ALTER TABLE sets that count (or they are rescaled back), on both lsmlake and Java. Without
    ``partition`` every partition with live rows is rewritten (a dynamic overwrite, as Paimon's: a
    partition whose rows were all deleted keeps its files). A commit by another writer while the
    rescale runs fails the rescale (Paimon's `commit.strict-mode.last-safe-snapshot`, set to
    ``snapshot_id``), except an APPEND of postponed rows, which the rescale keeps."""
    current = table.options.bucket
    if current == POSTPONE_BUCKET and bucket_num is None:
        raise ValueError(
            f"table {table.name}: rescaling a postpone-bucket table needs the resulting bucket number "
            "(bucket_num), as in Paimon"
        )
    if current <= 0 and current != POSTPONE_BUCKET:
        raise UnsupportedError(
            f"table {table.name}: rescale needs a fixed-bucket or postpone-bucket table, this one is "
            f"dynamic ({current})"
        )
    if bucket_num is not None and (
        isinstance(bucket_num, bool) or not isinstance(bucket_num, int) or bucket_num < 1
    ):
        raise ValueError(f"table {table.name}: bucket_num must be a positive integer, got {bucket_num!r}")
    if table.catalog_env is not None:
        raise UnsupportedError(f"table {table.name}: rescale of a table of a REST catalog is not supported")
    snapshot = table.snapshot_manager.latest()
    if snapshot is None:
        raise ValueError(f"table {table.name} has no snapshot: there is nothing to rescale")
    n = current if bucket_num is None else bucket_num
    spec: dict[str, object] | None = None
    if partition is not None:
        if not table.partition_keys:
            raise InvalidPartitionSpecError(
                f"table {table.name} is not partitioned: rescale takes no partition"
            )
        default = table.options.partition_default_name
        spec = typed_partition_spec(
            table.schema,
            {k: (None if v == default else v) for k, v in partition.items()},
            table_name=table.name,
        )
        matches = partition_matcher(table.schema, spec, [])
        if not any(matches(p) for p in live_partitions(table)):
            raise InvalidPartitionSpecError(
                f"table {table.name}: partition {dict(partition)} has no data files: there is nothing to rescale"
            )
    return RescalePlan(snapshot.id, n, _spec_filter(spec or {}), spec)
