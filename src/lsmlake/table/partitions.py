"""Dropping partitions by spec: ALTER TABLE ... DROP PARTITION, CALL sys.drop_partition, Table.drop_partitions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from lsmlake.errors import InvalidPartitionSpecError
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.table.partition_expire import drop_matching, live_partitions
from lsmlake.table.writer import partition_matcher, typed_partition_spec


def _matcher(table: TableHandle, specs: Sequence[Mapping[str, object]]) -> Callable[[bytes], bool]:
    if not table.partition_keys:
        raise InvalidPartitionSpecError(f"table {table.name} is not partitioned: it has no partition to drop")
    if not specs:
        raise InvalidPartitionSpecError(f"table {table.name}: name at least one partition to drop")
    default = table.options.partition_default_name
    matchers = []
    for spec in specs:
        if not spec:
            raise InvalidPartitionSpecError(
                f"table {table.name}: an empty partition spec would drop every partition; truncate the table instead"
            )
        plain = {k: (None if v == default else v) for k, v in spec.items()}
        matchers.append(
            partition_matcher(
                table.schema, typed_partition_spec(table.schema, plain, table_name=table.name), []
            )
        )
    return lambda partition: any(m(partition) for m in matchers)


def drop_partitions(table: TableHandle, specs: Sequence[Mapping[str, object]]) -> int | None:
    """Drop the partitions matching any of ``specs`` (``{"dt": "2024-01-01"}``; string values are parsed
    as the columns' types, the default partition name means null) in one OVERWRITE snapshot; its id, or
    None when no live partition matches (nothing is committed)."""
    matches = _matcher(table, specs)
    if not any(matches(p) for p in live_partitions(table)):
        return None
    return drop_matching(table, matches)
