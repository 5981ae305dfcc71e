"""A Paimon table opened from a warehouse: its schema, options, writers and snapshots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.predicate import Predicate
from lsmlake.core.schema import TableSchema
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.operations.input_rows import WriteData
from lsmlake.table_compact import compact_table
from lsmlake.table_read import Scan, explain_table, read_table, scan_table
from lsmlake.table_writer import TableWriter


@dataclass(frozen=True)
class Table:
    """One table; cheap to create, holds no open handles. ``with_options`` gives a re-optioned copy."""

    name: str
    io: FileIO
    root: str
    schema: TableSchema
    dynamic_options: Mapping[str, str] = field(default_factory=dict)

    @property
    def options(self) -> CoreOptions:
        merged = dict(self.schema.effective_options)
        merged.update(self.dynamic_options)
        return CoreOptions.of(merged, primary_key_table=bool(self.schema.primary_keys))

    @property
    def paths(self) -> TablePaths:
        return TablePaths(self.root)

    @property
    def snapshot_manager(self) -> SnapshotManager:
        return SnapshotManager(self.io, self.root)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    def with_options(self, options: Mapping[str, str]) -> Table:
        """A copy of this table that reads and writes with extra (dynamic) options."""
        merged = dict(self.dynamic_options)
        merged.update({str(k): str(v) for k, v in options.items()})
        return Table(self.name, self.io, self.root, self.schema, merged)

    # -- writing
    def writer(self) -> TableWriter:
        """A writer for many batches and one commit (use as a context manager)."""
        return TableWriter(self)

    def write(self, data: WriteData) -> int | None:
        """Upsert ``data`` in one commit; returns the new snapshot id (None if there was nothing to write)."""
        with self.writer() as w:
            w.write(data)
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def overwrite(self, data: WriteData, *, partitions: Mapping[str, object] | None = None) -> int | None:
        """Replace data in one OVERWRITE snapshot (INSERT OVERWRITE).

        Without ``partitions``: the partitions present in ``data`` (the whole table when it is not
        partitioned). With ``partitions`` (e.g. ``{"dt": "2024-01-01"}``): every partition matching
        them, even if ``data`` is empty - which truncates them.
        """
        with TableWriter(self, overwrite=True if partitions is None else partitions) as w:
            w.write(data)
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def truncate(self) -> int | None:
        """Remove every row in one OVERWRITE snapshot."""
        with TableWriter(self, overwrite={}) as w:
            pass
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def delete(self, keys: WriteData | str) -> int | None:
        """Delete rows in one commit: by primary keys (a table of key columns) or a SQL WHERE string."""
        if isinstance(keys, str):
            keys = self.read(filter=keys, columns=self.primary_keys or None)
            if keys.num_rows == 0:
                return None
        with self.writer() as w:
            w.delete(keys)
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def update(self, where: str, values: Mapping[str, object]) -> int | None:
        """Set columns to constant values on the rows matching a SQL WHERE string, in one commit."""
        unknown = [c for c in values if c not in self.schema.field_names]
        if unknown:
            raise ValueError(f"table {self.name}: update sets unknown column(s) {unknown}")
        protected = [c for c in values if c in self.schema.primary_keys]
        if protected:
            raise ValueError(f"table {self.name}: update may not change primary-key column(s) {protected}")
        rows = self.read(filter=where)
        if rows.num_rows == 0:
            return None
        for name, value in values.items():
            index = rows.schema.get_field_index(name)
            column = pa.array([value] * rows.num_rows, type=rows.schema.field(name).type)
            rows = rows.set_column(index, rows.schema.field(name), column)
        return self.write(rows)

    # -- reading
    def scan(
        self, *, filter: str | Predicate | None = None, columns: Sequence[str] | None = None,
        snapshot_id: int | None = None, limit: int | None = None,
    ) -> Scan:
        """Plan a read: ``.splits()``, ``.to_arrow()``, ``.to_batches()``, ``.to_pandas()``."""
        return scan_table(self, filter=filter, columns=columns, snapshot_id=snapshot_id, limit=limit)

    def read(
        self, *, filter: str | Predicate | None = None, columns: Sequence[str] | None = None,
        snapshot_id: int | None = None, limit: int | None = None,
    ) -> pa.Table:
        """The rows a reader sees (merged, deletes applied) that pass ``filter``."""
        return read_table(self, filter=filter, columns=columns, snapshot_id=snapshot_id, limit=limit)

    def explain(self, *, filter: str | Predicate | None = None, snapshot_id: int | None = None) -> str:
        """Per bucket: raw or merge read, and the rule that decided it."""
        return explain_table(self, filter=filter, snapshot_id=snapshot_id)

    # -- compaction
    def compact(self, *, full: bool = False) -> int | None:
        """Run the compaction strategy (or a full compaction) on every bucket; one COMPACT snapshot."""
        return compact_table(self, full=full)

    # -- snapshots
    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, primary_key={self.primary_keys}, partition_keys={self.partition_keys})"
