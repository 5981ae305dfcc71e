"""The catalog-wide system tables of Paimon's `sys` database: `sys.tables` (AllTablesTable),
`sys.partitions` (AllPartitionsTable) and `sys.all_table_options` (AllTableOptionsTable), over every
table of every database."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.system.common import SystemContext, rows_to_table

SYSTEM_DATABASE = "sys"

ALL_TABLES_SCHEMA = pa.schema(
    [
        ("database_name", pa.string()),
        ("table_name", pa.string()),
        ("table_type", pa.string()),
        ("partitioned", pa.bool_()),
        ("primary_key", pa.bool_()),
        ("owner", pa.string()),
        ("created_at", pa.int64()),
        ("created_by", pa.string()),
        ("updated_at", pa.int64()),
        ("updated_by", pa.string()),
        ("record_count", pa.int64()),
        ("file_size_in_bytes", pa.int64()),
        ("file_count", pa.int64()),
        ("last_file_creation_time", pa.int64()),
    ]
)
ALL_TABLE_OPTIONS_SCHEMA = pa.schema(
    [("database_name", pa.string()), ("table_name", pa.string()), ("key", pa.string()), ("value", pa.string())]
)

ALL_PARTITIONS_SCHEMA = pa.schema(
    [
        ("database_name", pa.string()),
        ("table_name", pa.string()),
        ("partition_name", pa.string()),
        ("record_count", pa.int64()),
        ("file_size_in_bytes", pa.int64()),
        ("file_count", pa.int64()),
        ("last_file_creation_time", pa.int64()),
        ("done", pa.bool_()),
    ]
)

Entry = tuple[str, str, TableHandle, str]
"""(database, table, the opened table, its location as the catalog reports it in option `path`)."""


def _long(text: str | None) -> int | None:
    return None if text is None else int(text)


def all_tables(entries: Sequence[Entry]) -> pa.Table:
    """One row per table. As with Java's filesystem and JDBC catalogs (no version management), the
    snapshot columns (record count, file size and count, last file creation) are null."""
    rows = []
    for database, name, table, _ in entries:
        o = table.schema.options
        rows.append(
            (
                database,
                name,
                o.get("type", "table"),
                bool(table.schema.partition_keys),
                bool(table.schema.primary_keys),
                o.get("owner"),
                _long(o.get("createdAt")),
                o.get("createdBy"),
                _long(o.get("updatedAt")),
                o.get("updatedBy"),
                None,
                None,
                None,
                None,
            )
        )
    return rows_to_table(ALL_TABLES_SCHEMA, rows)


def all_table_options(entries: Sequence[Entry]) -> pa.Table:
    """One row per option of every table: its stored options plus `path` (as Java's catalog adds it)."""
    rows: list[tuple[str, str, str, str]] = []
    for database, name, table, path in entries:
        options = {**table.schema.options, "path": path}
        rows.extend((database, name, key, value) for key, value in sorted(options.items()))
    return rows_to_table(ALL_TABLE_OPTIONS_SCHEMA, rows)


def _epoch_millis(wall_clock_millis: int) -> int:
    """A data file's creation time (the writer's local wall clock read as UTC) as epoch ms, as Java's
    creationTimeEpochMillis reads it in this machine's zone."""
    wall = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=wall_clock_millis)
    return int(wall.timestamp() * 1000)


def all_partitions(entries: Sequence[Entry]) -> pa.Table:
    """One row per partition of every partitioned table, from its latest snapshot's live files."""
    rows = []
    for database, name, table, _ in entries:
        if not table.schema.partition_keys:
            continue
        ctx = SystemContext(table, None)
        totals: dict[bytes, list[int]] = {}
        for e in live_entries(table.io, table.paths, table.snapshot_manager.latest()):
            t = totals.setdefault(e.partition, [0, 0, 0, -(2**63)])
            t[0] += e.file.row_count
            t[1] += e.file.file_size
            t[2] += 1
            if e.file.creation_time_millis is not None:
                t[3] = max(t[3], _epoch_millis(e.file.creation_time_millis))
        for partition, (records, size, files, created) in totals.items():
            last = None if created == -(2**63) else created
            rows.append((database, name, ctx.partition_spec(partition), records, size, files, last, False))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return rows_to_table(ALL_PARTITIONS_SCHEMA, rows)


GLOBAL_TABLES: dict[str, Callable[[Sequence[Entry]], pa.Table]] = {
    "tables": all_tables,
    "partitions": all_partitions,
    "all_table_options": all_table_options,
}


@dataclass(frozen=True)
class GlobalSystemTable:
    """``sys.<name>``: a read-only table over the whole catalog (what ``Catalog.get_table`` returns)."""

    system_name: str
    entries: Callable[[], list[Entry]]

    @property
    def name(self) -> str:
        return f"{SYSTEM_DATABASE}.{self.system_name}"

    def read(self, *, columns: Sequence[str] | None = None, limit: int | None = None) -> pa.Table:
        out = GLOBAL_TABLES[self.system_name](self.entries())
        if columns is not None:
            out = out.select(list(columns))
        return out if limit is None else out.slice(0, limit)

    def __repr__(self) -> str:
        return f"GlobalSystemTable({self.name!r})"
