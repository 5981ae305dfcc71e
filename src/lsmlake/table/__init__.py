"""A Paimon table opened from a warehouse: its schema, options, writers and snapshots."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.schema import TableSchema
from lsmlake.errors import (
    ImmutableColumnError,
    NoSuchColumnError,
    UnsupportedError,
)
from lsmlake.expr import FilterInput
from lsmlake.maintenance.branches import (
    create_branch,
    delete_branch,
    fast_forward,
    list_branches,
    open_branch,
)
from lsmlake.maintenance.cleanup import RollbackResult, delete_tag, rollback_to
from lsmlake.maintenance.expire import ExpireResult, expire_snapshots
from lsmlake.maintenance.orphans import remove_orphan_files
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import Tag, create_tag, list_tags
from lsmlake.read.options import ReadOptions
from lsmlake.read.table_read import Scan, read_table, scan_table
from lsmlake.schema_change import SchemaChange, commit_changes, latest_schema
from lsmlake.schema_change.apply import apply_changes, check_changes, check_dynamic_options
from lsmlake.stream.batch_incremental import is_incremental, read_incremental
from lsmlake.stream.options import StreamOptions
from lsmlake.table.arrow_dataset import TableDataset
from lsmlake.table.compact import compact_table
from lsmlake.table.explain import explain_table
from lsmlake.table.partition_expire import expire_partitions
from lsmlake.table.partitions import drop_partitions
from lsmlake.table.stream import TableStream, stream_table
from lsmlake.table.writer import TableWriter
from lsmlake.write.input_rows import WriteData, constant_column

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class Table(TableHandle):
    """One table; cheap to create, holds no open handles. ``with_options`` gives a re-optioned copy."""

    def with_options(self, options: Mapping[str, str]) -> Table:
        """A copy of this table that reads and writes with extra (dynamic) options."""
        given = {str(k): str(v) for k, v in options.items()}
        check_dynamic_options(self.schema, self.name, self.dynamic_options, given)  # as CREATE would
        return self.with_dynamic_options(given)

    # -- schema evolution
    def alter(self, *changes: SchemaChange) -> Table:
        """Apply schema changes (``lsmlake.schema_change.add_column(...)``, ``drop_column``, ...) as one
        new schema version; returns the table re-opened on it (this object keeps the old schema).

        Changes apply to the latest schema on storage. Refused changes raise and write nothing; an ALTER
        that loses the race for the next schema id to a concurrent one is re-applied on top of it, or
        raises CommitConflictError when it no longer applies. A table of a REST catalog sends the
        changes to the catalog's server, which writes the new schema.
        """
        if self.catalog_env is not None:
            # checked here first, against the latest schema the server wrote, as on any catalog
            checked = check_changes(changes)
            current = latest_schema(self.io, self.root, table_name=self.name)
            manager = self.snapshot_manager
            if (
                apply_changes(
                    current,
                    checked,
                    table_name=self.name,
                    has_snapshots=lambda: manager.latest_id() is not None,
                )
                is None
            ):
                return Table(self.name, self.io, self.root, current, self.dynamic_options, self.catalog_env)
            schema = self.catalog_env.alter_table(self.root, checked)
        else:
            schema = commit_changes(self.io, self.root, changes, table_name=self.name)
        return Table(self.name, self.io, self.root, schema, self.dynamic_options, self.catalog_env)

    def latest_schema(self) -> TableSchema:
        """The newest schema on storage (newer than ``self.schema`` if the table was altered since)."""
        return latest_schema(self.io, self.root, table_name=self.name)

    # -- writing
    def writer(self) -> TableWriter:
        """A writer for many batches and one commit (use as a context manager)."""
        return TableWriter(self)

    def write(self, data: WriteData) -> int | None:
        """Upsert ``data`` in one commit; returns the new snapshot id (None if there was nothing to write).

        The commit publishes an APPEND snapshot, then usually a COMPACT one; the id returned is the last
        (``writer().result`` lists them all). An error raised after the APPEND landed carries
        ``published_snapshot_ids`` (see ``TableWriter``): the write is committed, do not retry it."""
        with self.writer() as w:
            w.write(data)
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def overwrite(self, data: WriteData, *, partitions: Mapping[str, object] | None = None) -> int | None:
        """Replace data in one OVERWRITE snapshot (INSERT OVERWRITE).

        Without ``partitions``: the partitions present in ``data`` (the whole table when it is not
        partitioned, or with option `dynamic-partition-overwrite` false). With ``partitions`` (e.g.
        ``{"dt": "2024-01-01"}``): every partition matching them, even if ``data`` is empty - which
        truncates them; rows outside them raise InvalidPartitionSpecError and nothing is written.
        """
        with TableWriter(self, overwrite=True if partitions is None else partitions) as w:
            w.write(data)
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def truncate(self) -> int | None:
        """Remove every row in one OVERWRITE snapshot."""
        with TableWriter(self, overwrite={}) as w:
            pass
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def delete(self, keys: WriteData | str | pc.Expression) -> int | None:
        """Delete rows in one commit: by primary keys (a table of key columns) or a filter (SQL WHERE
        text or a ``pyarrow.compute.Expression``)."""
        if isinstance(keys, (str, pc.Expression)):
            keys = self.read(filter=keys, columns=self.primary_keys or None)
            if keys.num_rows == 0:
                return None
        with self.writer() as w:
            w.delete(keys)
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    def update(self, where: FilterInput, values: Mapping[str, object]) -> int | None:
        """Set columns to constant values on the rows matching a filter (SQL WHERE text, a pyarrow
        expression or DNF), in one commit; the new rows are ``+U`` records, as Spark's UPDATE writes."""
        unknown = [c for c in values if c not in self.schema.field_names]
        if unknown:
            raise NoSuchColumnError(f"table {self.name}: update sets unknown column(s) {unknown}")
        placing = {"primary-key": self.schema.primary_keys, "partition": self.schema.partition_keys}
        for what, names in placing.items():
            if protected := [c for c in values if c in names]:
                raise ImmutableColumnError(
                    f"table {self.name}: update may not change {what} column(s) {protected}"
                )
        rows = self.read(filter=where)
        if rows.num_rows == 0:
            return None
        for name, value in values.items():
            index = rows.schema.get_field_index(name)
            column = constant_column(
                value, rows.num_rows, self.schema.field(name).type, column=name, table_name=self.name
            )
            rows = rows.set_column(index, rows.schema.field(name), column)
        with self.writer() as w:
            w.update(rows)
        return w.snapshot_ids[-1] if w.snapshot_ids else None

    # -- reading
    def scan(
        self,
        *,
        filter: FilterInput = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of_millis: int | None = None,
        limit: int | None = None,
    ) -> Scan:
        """Plan a read: ``.splits()``, ``.to_arrow()``, ``.to_batches()``, ``.to_pandas()``.

        A past snapshot (``snapshot_id``, ``tag``, ``as_of_millis`` or a time-travel option) is read with
        its own schema, as Paimon does: ``columns``, ``filter`` and the result use its column names."""
        return scan_table(
            self,
            ReadOptions(
                filter=filter,
                columns=columns,
                snapshot_id=snapshot_id,
                tag=tag,
                as_of_millis=as_of_millis,
                limit=limit,
            ),
        )

    def read(
        self,
        *,
        filter: FilterInput = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of_millis: int | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        """The rows a reader sees (merged, deletes applied) that pass ``filter``, now or at a past point.

        A past snapshot is read with its own schema (see ``scan``); a tag is readable after its snapshot
        expired. With option `incremental-between` (or `incremental-between-timestamp`): the rows added
        between the two snapshots, in the current schema (see ``lsmlake.stream.batch_incremental``;
        `$audit_log` shows the row kinds too)."""
        options = ReadOptions(
            filter=filter,
            columns=columns,
            snapshot_id=snapshot_id,
            tag=tag,
            as_of_millis=as_of_millis,
            limit=limit,
        )
        if is_incremental(self) and not options.names_a_snapshot:
            return read_incremental(self, filter=filter, columns=columns, limit=limit)
        return read_table(self, options)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream protocol: the latest rows, batch by batch as the consumer pulls them
        (``pl.DataFrame(table)``, ``pa.table(table)``, ``duckdb.sql("SELECT ... FROM table")``)."""
        return self.scan().to_batches().__arrow_c_stream__(requested_schema)

    def to_polars(self, *, filter: FilterInput = None, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """The rows as a Polars DataFrame (the ``polars`` extra), streamed in without a pa.Table copy;
        ``lsmlake.polars.scan_table`` gives a lazy frame with pushdown."""
        import polars as pl

        result = pl.DataFrame(self.scan(filter=filter, columns=columns))
        assert isinstance(result, pl.DataFrame)
        return result

    def to_duckdb(self, connection: Any, name: str, **read: Any) -> Any:
        """Register the table on a DuckDB connection as view ``name``: each query's projection and WHERE
        conjuncts are pushed into an lsmlake scan (``read`` takes ``snapshot_id``, ``tag``,
        ``as_of_millis``); returns the registered :class:`~lsmlake.table.arrow_dataset.TableDataset`."""
        dataset = TableDataset(self, ReadOptions(**read))
        connection.register(name, dataset)
        return dataset

    def stream(
        self,
        *,
        filter: FilterInput = None,
        columns: Sequence[str] | None = None,
        mode: str | None = None,
        snapshot_id: int | None = None,
        timestamp_millis: int | None = None,
        consumer_id: str | None = None,
        poll_interval: float | None = None,
        stop_when_caught_up: bool = False,
        until_snapshot: int | None = None,
        auto_commit: bool = True,
        binlog: bool = False,
    ) -> TableStream:
        """Follow the table: an iterator of change tables with a leading ``rowkind`` column (+I/-U/+U/-D).

        ``mode`` is `scan.mode` (latest-full, latest, from-snapshot, from-snapshot-full, from-timestamp,
        compacted-full); ``consumer_id`` saves progress so a restarted stream resumes; the stream polls
        every ``poll_interval`` seconds and ends when caught up (``stop_when_caught_up``) or after
        snapshot ``until_snapshot``, else runs until the caller stops iterating."""
        options = StreamOptions(
            filter=filter,
            columns=columns,
            mode=mode,
            snapshot_id=snapshot_id,
            timestamp_millis=timestamp_millis,
            consumer_id=consumer_id,
            poll_interval=poll_interval,
            stop_when_caught_up=stop_when_caught_up,
            until_snapshot=until_snapshot,
            auto_commit=auto_commit,
            binlog=binlog,
        )
        return stream_table(self, options)

    def explain(self, *, filter: FilterInput = None, snapshot_id: int | None = None) -> str:
        """Per bucket: raw or merge read, and the rule that decided it."""
        return explain_table(self, filter=filter, snapshot_id=snapshot_id)

    # -- compaction
    def compact(self, *, full: bool = False, executor: str = "local") -> int | None:
        """Run the compaction strategy (or a full compaction) on every bucket; one COMPACT snapshot.

        ``executor="ray"`` runs the buckets as Ray tasks (the ``ray`` extra)."""
        return compact_table(self, full=full, executor=executor)

    # -- maintenance
    def create_tag(self, name: str, snapshot_id: int | None = None) -> Tag:
        """Tag a snapshot (the latest by default); tagged files survive expiry."""
        return create_tag(self, name, snapshot_id)

    def delete_tag(self, name: str) -> None:
        delete_tag(self, name)

    def list_tags(self) -> list[Tag]:
        return list_tags(self)

    def rollback_to(self, snapshot_id: int | None = None, *, tag: str | None = None) -> RollbackResult:
        """Make a snapshot (or a tag's) the latest again; newer snapshots and their files go. A table of
        a REST catalog asks the server, which removes them (the result then lists the snapshots only)."""
        return rollback_to(self, snapshot_id, tag)

    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than_ms: int | None = None,
    ) -> ExpireResult:
        """Expire snapshots the retention options (or these overrides) no longer keep, with their files."""
        return expire_snapshots(
            self, retain_min=retain_min, retain_max=retain_max, older_than_ms=older_than_ms
        )

    def remove_orphan_files(self, *, older_than_ms: int | None = None, dry_run: bool = False) -> list[str]:
        """Delete files no snapshot, tag or changelog uses and older than the guard (default: one day)."""
        return remove_orphan_files(self, older_than_ms=older_than_ms, dry_run=dry_run)

    # -- partitions
    def drop_partitions(self, *specs: Mapping[str, object]) -> int | None:
        """Drop the partitions matching any spec (``{"dt": "2024-01-01"}``) in one OVERWRITE snapshot;
        its id, or None when none of them exists."""
        return drop_partitions(self, specs)

    def expire_partitions(
        self,
        *,
        expiration_time_ms: int | None = None,
        strategy: str | None = None,
        timestamp_formatter: str | None = None,
        timestamp_pattern: str | None = None,
        max_expires: int | None = None,
        now: dt.datetime | None = None,
    ) -> list[dict[str, str]]:
        """Drop partitions older than `partition.expiration-time` (or these overrides) at ``now`` (local
        time, default the clock's); the dropped partitions' specs."""
        return expire_partitions(
            self,
            expiration_time_ms=expiration_time_ms,
            strategy=strategy,
            timestamp_formatter=timestamp_formatter,
            timestamp_pattern=timestamp_pattern,
            max_expires=max_expires,
            now=now,
        )

    # -- branches
    def create_branch(self, name: str, tag: str | None = None) -> Table:
        """Create branch ``name`` from ``tag`` (its snapshot and schemas), or empty (the latest schema);
        returns the branch, which reads and writes like a table (``db.t$branch_<name>``)."""
        create_branch(self, name, tag)
        return open_branch(self, name)

    def branch(self, name: str) -> Table:
        """Branch ``name`` of this table (``main`` is the table itself)."""
        return open_branch(self, name)

    def delete_branch(self, name: str) -> None:
        """Delete a branch's metadata; files only it used are left to orphan cleaning."""
        delete_branch(self, name)

    def list_branches(self) -> list[str]:
        """The names of the table's branches (not ``main``), sorted."""
        return [b.name for b in list_branches(self.io, self.root)]

    def fast_forward(self, name: str) -> None:
        """Make the main table equal to branch ``name`` (Paimon's fast-forward)."""
        self._refuse_in_rest_catalog("fast_forward")
        fast_forward(self, name)

    def _refuse_in_rest_catalog(self, verb: str) -> None:
        """Verbs that replace the latest snapshot in place: a REST catalog's server records the latest
        snapshot from its commits, so doing them on the files would leave it pointing elsewhere."""
        if self.catalog_env is not None:
            raise UnsupportedError(
                f"table {self.name}: {verb} is not available for a table of a REST catalog (its server keeps "
                "the latest snapshot; lsmlake's client does not call its endpoint for this yet)"
            )

    # -- snapshots
    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, primary_key={self.primary_keys}, partition_keys={self.partition_keys})"
