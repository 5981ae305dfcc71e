"""``CALL sys.rescale``: a fixed-bucket table's (or partition's) rows rewritten into a new bucket count
in one OVERWRITE snapshot, as Paimon's RescaleAction does; the whole table's rescale changes the
schema's ``bucket`` first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow.compute as pc

from lsmlake.errors import InvalidPartitionSpecError, UnsupportedError
from lsmlake.schema_change import set_option
from lsmlake.schema_change.manager import commit_changes
from lsmlake.table.partition_expire import live_partitions
from lsmlake.table.writer import partition_matcher, typed_partition_spec

if TYPE_CHECKING:
    from lsmlake.table import Table


def _spec_filter(spec: Mapping[str, object]) -> pc.Expression | None:
    out: pc.Expression | None = None
    for k, v in spec.items():
        term = pc.field(k).is_null() if v is None else pc.field(k) == v
        out = term if out is None else out & term
    return out


def rescale(
    table: Table, bucket_num: int | None, partition: Mapping[str, object] | None = None
) -> int | None:
    """Rewrite the rows of the latest snapshot (of ``partition`` only, when given) into ``bucket_num``
    buckets (default: the table's `bucket`, which brings a partition rescaled earlier back in line) in
    one OVERWRITE snapshot; its id. Without ``partition`` the schema's `bucket` becomes ``bucket_num``
    first; with it the schema stays and only that partition's files change (Paimon's per-partition
    bucket counts: writes to it are refused until it is rescaled to the table's count again). Rows
    committed by another writer while this runs are lost, as in Paimon: run it alone."""
    current = table.options.bucket
    if current <= 0:
        mode = {-1: "dynamic", -2: "postpone"}.get(current, str(current))
        raise UnsupportedError(
            f"table {table.name}: rescale needs a fixed-bucket table (bucket > 0), this one is {mode} ({current})"
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
    rows = table.scan(snapshot_id=snapshot.id, filter=_spec_filter(spec or {})).to_batches()
    if spec is not None:
        return table.with_dynamic_options({"bucket": str(n)}).overwrite(rows, partitions=spec)
    target = table
    if n != current:
        schema = commit_changes(
            table.io, table.root, [set_option("bucket", str(n))], table_name=table.name, rewriting_data=True
        )
        target = type(table)(
            table.name, table.io, table.root, schema, table.dynamic_options, table.catalog_env
        )
    # every partition, including those whose rows were all deleted (their files go too)
    return target.with_dynamic_options({"dynamic-partition-overwrite": "false"}).overwrite(rows)
