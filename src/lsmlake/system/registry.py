"""System tables (`t$snapshots`, `t$files`, ...): names, dispatch, and a table-like handle for the catalog."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lsmlake.metadata.table_handle import TableHandle
from lsmlake.schema_change.apply import check_dynamic_options
from lsmlake.system.common import SystemContext
from lsmlake.system.data_tables import audit_log_table, binlog_table, ro_table
from lsmlake.system.file_indexes_table import file_indexes_table
from lsmlake.system.file_tables import (
    buckets_table,
    files_table,
    manifests_table,
    partitions_table,
    table_indexes_table,
)
from lsmlake.system.metadata_tables import (
    branches_table,
    consumers_table,
    options_table,
    schemas_table,
    snapshots_table,
    tags_table,
)

_READERS: dict[str, Callable[[SystemContext], pa.Table]] = {
    "snapshots": snapshots_table,
    "schemas": schemas_table,
    "options": options_table,
    "files": files_table,
    "manifests": manifests_table,
    "partitions": partitions_table,
    "buckets": buckets_table,
    "table_indexes": table_indexes_table,
    "file_indexes": file_indexes_table,
    "tags": tags_table,
    "consumers": consumers_table,
    "branches": branches_table,
    "audit_log": audit_log_table,
    "binlog": binlog_table,
    "ro": ro_table,
}
SYSTEM_TABLES: tuple[str, ...] = tuple(_READERS)
"""The system table names lsmlake can read."""

SNAPSHOT_SCOPED = frozenset({"files", "manifests", "partitions", "buckets", "table_indexes", "file_indexes"})
"""Tables that show one snapshot (``snapshot_id``, or options `scan.snapshot-id` / `scan.tag-name`)."""


def _check_name(name: str) -> str:
    key = name.lower() if isinstance(name, str) else name
    if key not in _READERS:
        raise ValueError(f"unknown system table {name!r}; valid names are: {', '.join(SYSTEM_TABLES)}")
    return key


def read_system_table(table: TableHandle, name: str, *, snapshot_id: int | None = None) -> pa.Table:
    """Read system table ``name`` of ``table`` as Arrow, with Paimon's column names and order.

    ``snapshot_id`` (or the table's `scan.snapshot-id` / `scan.tag-name` / `scan.timestamp-millis`
    options) picks the snapshot of the per-snapshot tables; the others list everything there is.
    """
    return _READERS[_check_name(name)](SystemContext(table, snapshot_id))


@dataclass(frozen=True)
class SystemTable:
    """``db.t$name``: a read-only table over ``table``'s metadata (what ``Catalog.get_table`` can return)."""

    table: TableHandle
    system_name: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "system_name", _check_name(self.system_name))

    @property
    def name(self) -> str:
        return f"{self.table.name}${self.system_name}"

    def read(
        self,
        *,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        out = read_system_table(self.table, self.system_name, snapshot_id=snapshot_id)
        if columns is not None:
            out = out.select(list(columns))
        if limit is not None:
            out = out.slice(0, limit)
        return out

    def with_options(self, options: dict[str, str]) -> SystemTable:
        """This system table over its table with extra (dynamic) options, checked as ``Table.with_options``."""
        given = {str(k): str(v) for k, v in options.items()}
        check_dynamic_options(self.table.schema, self.table.name, self.table.dynamic_options, given)
        return SystemTable(self.table.with_dynamic_options(given), self.system_name)

    def __repr__(self) -> str:
        return f"SystemTable({self.name!r})"
