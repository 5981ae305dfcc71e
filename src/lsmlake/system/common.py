"""What every system table needs: the snapshot to show, schemas by id, and partition rendering."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lsmlake.core.schema import SCHEMA_PREFIX, TableSchema, read_schema, schema_file_name
from lsmlake.core.types import DataType
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.scan.travel import travel_snapshot
from lsmlake.system.render import cast_to_string, decode_stats_row, row_to_string


class SystemContext:
    """One read of one system table: resolves the snapshot once and caches schemas by id."""

    def __init__(self, table: TableHandle, snapshot_id: int | None = None) -> None:
        self.table = table
        self.io = table.io
        self.root = table.root.rstrip("/")
        self.requested_snapshot_id = snapshot_id
        self._schemas: dict[int, TableSchema] = {table.schema.id: table.schema}
        self._latest_schema: TableSchema | None = None
        self._locator: FileLocator | None = None

    # -- schemas
    def schema_ids(self) -> list[int]:
        ids = []
        for s in self.io.list_dir(posixpath.join(self.root, "schema")):
            suffix = s.name[len(SCHEMA_PREFIX) :]
            if not s.is_dir and s.name.startswith(SCHEMA_PREFIX) and suffix.isdigit():
                ids.append(int(suffix))
        return sorted(ids)

    def schema(self, schema_id: int) -> TableSchema:
        found = self._schemas.get(schema_id)
        if found is None:
            found = read_schema(self.io, posixpath.join(self.root, "schema", schema_file_name(schema_id)))
            self._schemas[schema_id] = found
        return found

    @property
    def latest_schema(self) -> TableSchema:
        if self._latest_schema is None:
            ids = self.schema_ids()
            self._latest_schema = self.schema(ids[-1]) if ids else self.table.schema
        return self._latest_schema

    @property
    def locator(self) -> FileLocator:
        if self._locator is None:
            self._locator = FileLocator(self.table)
        return self._locator

    # -- the snapshot to show (time travel like Java's TimeTravelUtil.tryTravelOrLatest)
    def snapshot(self) -> Snapshot | None:
        """The requested snapshot, else the one the table's time-travel options name (a tag's works
        after its snapshot expired), else the latest."""
        found = travel_snapshot(self.table, snapshot_id=self.requested_snapshot_id)
        return self.table.snapshot_manager.latest() if found is None else found

    # -- partitions
    @property
    def partition_types(self) -> list[DataType]:
        schema = self.latest_schema
        return [schema.field(k).type for k in schema.partition_keys]

    def partition_values(self, partition: bytes) -> list[object]:
        return decode_stats_row(partition, self.partition_types)

    def partition_row(self, partition: bytes) -> str | None:
        """The partition as Java casts a ROW to STRING: ``{2024-01-01, 3}`` (``{}`` un-partitioned)."""
        try:
            return row_to_string(self.partition_values(partition), self.partition_types)
        except ValueError:
            return None

    def partition_spec(self, partition: bytes) -> str:
        """``dt=2024-01-01/hr=3`` as in `$partitions` (nulls shown as the default partition name)."""
        keys = self.latest_schema.partition_keys
        default = self.table.options.partition_default_name
        values = self.partition_values(partition)
        return "/".join(
            f"{k}={default if v is None else cast_to_string(v, t)}"
            for k, v, t in zip(keys, values, self.partition_types, strict=True)
        )


def rows_to_table(schema: pa.Schema, rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    """Row tuples (in schema order) as an Arrow table of exactly ``schema``."""
    columns: list[Sequence[Any]] = [list(c) for c in zip(*rows, strict=True)]
    if not rows:
        columns = [[] for _ in schema]
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.table(arrays, schema=schema)
