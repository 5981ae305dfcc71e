"""A Paimon table opened from a warehouse: its schema, options, writers and snapshots."""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.commit.publish import compact_manifests
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import table_root_of
from lsmlake.core.schema import TableSchema
from lsmlake.errors import (
    ImmutableColumnError,
    InvalidIdentifierError,
    NoSuchColumnError,
    NoSuchSnapshotError,
    UnsupportedError,
)
from lsmlake.expr import FilterInput
from lsmlake.maintenance.auto_tags import create_auto_tags, expire_tags
from lsmlake.maintenance.branches import (
    create_branch,
    delete_branch,
    fast_forward,
    list_branches,
    open_branch,
    rename_branch,
)
from lsmlake.maintenance.changelog_expire import CHANGELOG_DIR, expire_table_changelogs
from lsmlake.maintenance.cleanup import RollbackResult, delete_tag, rollback_to
from lsmlake.maintenance.expire import ExpireResult, expire_snapshots
from lsmlake.maintenance.orphans import remove_orphan_files
from lsmlake.metadata.consumers import clear_consumers, delete_consumer, write_consumer
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import (
    Tag,
    create_tag,
    create_tag_from_timestamp,
    list_tags,
    rename_tag,
    replace_tag,
)
from lsmlake.read.lookup import lookup_rows
from lsmlake.read.lookup_keys import KeysInput
from lsmlake.read.options import ReadOptions
from lsmlake.read.table_read import Scan, read_table, scan_table
from lsmlake.schema_change import SchemaChange, commit_changes, latest_schema
from lsmlake.schema_change.apply import apply_changes, check_changes, check_dynamic_options
from lsmlake.stream.batch_incremental import is_incremental, read_incremental
from lsmlake.stream.options import StreamOptions
from lsmlake.table.arrow_dataset import TableDataset
from lsmlake.table.compact import compact_table
from lsmlake.table.explain import explain_table
from lsmlake.table.file_index_rewrite import RewriteResult, rewrite_file_index
from lsmlake.table.partition_done import mark_done, spec_paths
from lsmlake.table.partition_expire import expire_partitions
from lsmlake.table.partitions import drop_partitions
from lsmlake.table.rescale import plan_rescale
from lsmlake.table.stream import TableStream, stream_table
from lsmlake.table.unexisting_files import remove_unexisting_files
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
        partitioned, or with option `dynamic-partition-overwrite` false); with no rows that replaces
        no partition, and no snapshot is made (as in Paimon). With ``partitions`` (e.g.
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
            keys = self.rows_to_change(keys, self.primary_keys or None)
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
        rows = self.rows_to_change(where, None)
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

    def rows_to_change(self, where: FilterInput, columns: Sequence[str] | None = None) -> pa.Table:
        """The live rows a DELETE or UPDATE by ``where`` changes: the latest snapshot whatever the table's
        time-travel or incremental options, merged over every level (level-0 rows a deletion-vector or
        first-row batch read skips included: a newer version there is the one changed), and only this
        table's own rows (a `scan.fallback-branch` branch's rows are not this table's to change)."""
        snapshot = self.latest_snapshot()
        options = ReadOptions(filter=where, columns=columns)
        if snapshot is None:  # still checks the filter and columns
            return Scan(self, options).context.output_schema.empty_table()
        return Scan(self, options, snapshot=snapshot, all_levels=True).to_arrow()

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

    def lookup(
        self, keys: KeysInput, columns: Sequence[str] | None = None, *, snapshot_id: int | None = None
    ) -> pa.Table:
        """The latest live row of each primary key in ``keys`` (a pyarrow Table or dict of the key
        columns, a list of key dicts, values or tuples), as ``read(filter=<key IN keys>)`` returns it.

        The result holds one row per distinct key the table has, in the order the keys first appear
        (keys the table lacks give no row); its columns are the primary key, in the order ``keys`` gives
        it, then ``columns`` (default: every other column). Keys are routed to their bucket, files
        skipped by key range and bloom filter, and the rest binary-searched in cached key columns
        (`lookup.cache-max-memory-size` bounds that cache). ``snapshot_id`` (or the table's time-travel
        option) looks up a past snapshot under its own schema, as ``read`` reads it."""
        return lookup_rows(self, keys, columns=columns, snapshot_id=snapshot_id)

    def lookup_one(
        self, key: object, columns: Sequence[str] | None = None, *, snapshot_id: int | None = None
    ) -> dict[str, Any] | None:
        """The latest live row of one primary key (a dict of the key columns, or the value of a one-column
        key) as a dict, or None when the table does not hold it."""
        keys: KeysInput = [key] if isinstance(key, Mapping) else {self.primary_keys[0]: [key]}
        if not isinstance(key, Mapping) and len(self.primary_keys) != 1:
            raise ValueError(
                f"table {self.name}: its primary key {self.primary_keys} has several columns; "
                "give the key as a dict"
            )
        rows = self.lookup(keys, columns, snapshot_id=snapshot_id).to_pylist()
        return rows[0] if rows else None

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
    def compact_manifests(self) -> int | None:
        """Rewrite the latest snapshot's manifests as one merged set (Paimon's compact_manifest) in a
        COMPACT snapshot that changes no rows; its id, or None when there was nothing to merge."""
        return compact_manifests(self)

    def create_tag(
        self, name: str, snapshot_id: int | None = None, *, time_retained_ms: int | None = None
    ) -> Tag:
        """Tag a snapshot (the latest by default; an expired one a tag still holds); tagged files survive
        expiry. The tag is deleted after commits once ``time_retained_ms`` (default
        `tag.default-time-retained`, unset: never) has passed."""
        if time_retained_ms is None:
            time_retained_ms = self.options.get(CoreOptions.TAG_DEFAULT_TIME_RETAINED)
        return create_tag(self, name, snapshot_id, time_retained_ms=time_retained_ms)

    def create_tag_from_timestamp(
        self, name: str, timestamp_millis: int, *, time_retained_ms: int | None = None
    ) -> Tag:
        """Tag the oldest snapshot (or tagged snapshot) committed at or after ``timestamp_millis``."""
        return create_tag_from_timestamp(self, name, timestamp_millis, time_retained_ms=time_retained_ms)

    def rename_tag(self, name: str, target: str) -> None:
        """Rename tag ``name`` to ``target`` (which must not exist)."""
        rename_tag(self, name, target)

    def replace_tag(
        self, name: str, snapshot_id: int | None = None, *, time_retained_ms: int | None = None
    ) -> Tag:
        """Point an existing tag at another snapshot (the latest by default)."""
        return replace_tag(self, name, snapshot_id, time_retained_ms=time_retained_ms)

    def expire_tags(self, *, older_than: dt.datetime | None = None) -> list[str]:
        """Delete tags past their time retained, and with ``older_than`` (local time) those created
        before it; the names deleted."""
        return expire_tags(self, older_than=older_than)

    def create_auto_tags(self) -> list[str]:
        """Run `tag.automatic-creation` now (writers run it after each commit); the tags created."""
        return create_auto_tags(self)

    def rewrite_file_index(self, *partitions: Mapping[str, object]) -> RewriteResult:
        """Rebuild every live data file's file index (of the partitions matching any spec, default all)
        for the current `file-index.*` options, in one COMPACT snapshot (CALL sys.rewrite_file_index)."""
        return rewrite_file_index(self, partitions)

    def delete_tag(self, name: str) -> None:
        delete_tag(self, name)

    def list_tags(self) -> list[Tag]:
        return list_tags(self)

    def rollback_to(self, snapshot_id: int | None = None, *, tag: str | None = None) -> RollbackResult:
        """Make a snapshot (or a tag's) the latest again; newer snapshots and their files go. A table of
        a REST catalog asks the server, which removes them (the result then lists the snapshots only)."""
        return rollback_to(self, snapshot_id, tag)

    def rollback_to_timestamp(self, timestamp_millis: int) -> RollbackResult:
        """Roll back to the newest snapshot committed at or before ``timestamp_millis`` (epoch ms)."""
        snapshot = self.snapshot_manager.earlier_or_equal_time_millis(timestamp_millis)
        if snapshot is None:
            raise NoSuchSnapshotError(
                f"table {self.name}: no snapshot was committed at or before {timestamp_millis} (epoch ms)"
            )
        return rollback_to(self, snapshot.id, None)

    def rollback_to_watermark(self, watermark: int) -> RollbackResult:
        """Roll back to the newest snapshot whose watermark is at most ``watermark`` (Paimon's rule)."""
        snapshot = self.snapshot_manager.earlier_or_equal_watermark(watermark)
        if snapshot is None:
            raise NoSuchSnapshotError(
                f"table {self.name}: no snapshot has a watermark at or before {watermark}"
            )
        return rollback_to(self, snapshot.id, None)

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

    def rescale(
        self, bucket_num: int | None = None, partitions: Mapping[str, object] | None = None
    ) -> int | None:
        """Rewrite a fixed-bucket table's partitions (or one, ``{"dt": "2024-01-01"}``) into
        ``bucket_num`` buckets (default: the table's `bucket`) in one OVERWRITE snapshot; the schema
        stays, as in Paimon. Returns the snapshot id (CALL sys.rescale); see
        ``lsmlake.table.rescale.plan_rescale``."""
        plan = plan_rescale(self, bucket_num, partitions)
        rows = self.scan(snapshot_id=plan.snapshot_id, filter=plan.filter).to_batches()
        # as Paimon's RescaleAction: a commit by another writer since the snapshot read fails the rescale
        target = self.with_dynamic_options(
            {
                "bucket": str(plan.bucket_num),
                CoreOptions.COMMIT_STRICT_MODE_LAST_SAFE_SNAPSHOT.key: str(plan.snapshot_id),
            }
        )
        if plan.partition is not None:
            return target.overwrite(rows, partitions=plan.partition)
        # as Paimon's: the partitions the rows fall in under `dynamic-partition-overwrite` (the default)
        return target.overwrite(rows)

    def remove_unexisting_files(self, *, dry_run: bool = False) -> list[str]:
        """Drop from the latest snapshot the data files missing on storage (one COMPACT snapshot with
        their DELETE entries, none on ``dry_run``); their paths (CALL sys.remove_unexisting_files)."""
        return remove_unexisting_files(self, dry_run=dry_run)

    def purge_files(self) -> None:
        """Empty the table as Paimon's purge_files does: branches, tags, consumers and long-lived
        changelogs go, the table is truncated, and every snapshot but that last one expires with its
        files. The schema stays. Refused on a branch: the branches listed are the table's, its
        siblings among them (Java's purgeFiles would drop them all)."""
        if table_root_of(self.root) != self.root:
            raise UnsupportedError(
                f"table {self.name} is a branch: purge_files empties a whole table, every branch included; "
                "delete the branch (delete_branch) or purge the main table"
            )
        for branch in self.list_branches():
            self.delete_branch(branch)
        for tag in self.list_tags():
            delete_tag(self, tag.name)
        self.clear_consumers()
        quiet = {
            "write-only": "true",
            "tag.automatic-creation": "none",
            "partition.end-input-to-done": "false",
        }
        self.with_dynamic_options(quiet).truncate()  # no after-commit tags or markers, as Java's truncate
        self.io.delete_dir(posixpath.join(self.root, CHANGELOG_DIR))
        expire_snapshots(self, retain_min=1, retain_max=1, older_than_ms=2**62, max_deletes=2**31 - 1)

    # -- consumers and changelogs
    def reset_consumer(self, consumer_id: str, next_snapshot_id: int | None = None) -> None:
        """Set a stream consumer's next snapshot (it must exist), or delete the consumer (None)."""
        if next_snapshot_id is None:
            delete_consumer(self.io, self.root, consumer_id)
            return
        self.snapshot_manager.snapshot(next_snapshot_id)  # NoSuchSnapshotError when it does not exist
        write_consumer(self.io, self.root, consumer_id, next_snapshot_id)

    def clear_consumers(self, including: str | None = None, excluding: str | None = None) -> list[str]:
        """Delete consumers whose id fully matches regex ``including`` (all by default) and not
        ``excluding``; the ids deleted."""
        return clear_consumers(self.io, self.root, including, excluding)

    def expire_changelogs(
        self,
        *,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than_ms: int | None = None,
        max_deletes: int | None = None,
        delete_all: bool = False,
    ) -> list[int]:
        """Expire long-lived changelogs by the changelog retention options (or these overrides), or all
        of them; the changelog ids removed."""
        return expire_table_changelogs(
            self,
            retain_max=retain_max,
            retain_min=retain_min,
            older_than_ms=older_than_ms,
            max_deletes=max_deletes,
            delete_all=delete_all,
        )

    # -- partitions
    def drop_partitions(self, *specs: Mapping[str, object]) -> int | None:
        """Drop the partitions matching any spec (``{"dt": "2024-01-01"}``) in one OVERWRITE snapshot;
        its id, or None when none of them exists."""
        return drop_partitions(self, specs)

    def mark_partitions_done(self, *specs: Mapping[str, object]) -> list[str]:
        """Mark partitions (``{"dt": "20240101"}``) done with a `_SUCCESS` file in each directory, as
        Paimon's success-file action; the files written."""
        return mark_done(self, spec_paths(self, specs))

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
        if self.catalog_env is not None:  # the server creates it (and records it for its commits)
            self.catalog_env.create_branch(self.root, name, tag)
        else:
            create_branch(self, name, tag)
        return open_branch(self, name)

    def branch(self, name: str) -> Table:
        """Branch ``name`` of this table (``main`` is the table itself)."""
        return open_branch(self, name)

    def delete_branch(self, name: str) -> None:
        """Delete a branch's metadata; files only it used are left to orphan cleaning."""
        if self.catalog_env is not None:
            self.catalog_env.drop_branch(self.root, name)
        else:
            delete_branch(self, name)

    def list_branches(self) -> list[str]:
        """The names of the table's branches (not ``main``), sorted."""
        return [b.name for b in list_branches(self.io, self.root)]

    def rename_branch(self, name: str, target: str) -> None:
        """Rename branch ``name`` to ``target``."""
        if self.catalog_env is not None:
            self.catalog_env.rename_branch(self.root, name, target)
        else:
            rename_branch(self, name, target)

    def fast_forward(self, name: str) -> None:
        """Make the main table equal to branch ``name`` (Paimon's fast-forward)."""
        if self.catalog_env is not None:  # the server keeps the latest snapshot: it fast-forwards
            if table_root_of(self.root) != self.root:
                raise InvalidIdentifierError(
                    f"fast-forward runs on the main table, not on branch {self.name}"
                )
            self.catalog_env.fast_forward(self.root, name)
        else:
            fast_forward(self, name)

    # -- snapshots
    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, primary_key={self.primary_keys}, partition_keys={self.partition_keys})"
