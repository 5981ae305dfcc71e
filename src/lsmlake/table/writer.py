"""A batch writer of one table: many batches of upserts and deletes, one commit."""

from __future__ import annotations

import posixpath
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.commit.committer import FileStoreCommit
from lsmlake.commit.publish import (
    PublishedWrite,
    append_part,
    publish_appends,
    publish_compaction,
    publish_write,
    written_buckets,
)
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import to_arrow_type
from lsmlake.errors import CommitConflictError, InvalidPartitionSpecError, LsmlakeError
from lsmlake.maintenance.expire import expire_snapshots
from lsmlake.mergetree.kv_layout import RowKind
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.restore import RestoredState
from lsmlake.table.compact import compact_table
from lsmlake.write.input_rows import WriteData, input_rows, row_kinds
from lsmlake.write.writer import FileStoreWrite

if TYPE_CHECKING:
    from lsmlake.table import Table


PartitionSpec = Mapping[str, object]


def typed_partition_spec(schema: TableSchema, spec: PartitionSpec, *, table_name: str) -> dict[str, object]:
    """``spec`` checked against the partition keys, its values cast to the columns' types (strings are
    parsed, as Paimon's partition specs are strings); raise InvalidPartitionSpecError otherwise."""
    unknown = [k for k in spec if k not in schema.field_names]
    if unknown:
        raise InvalidPartitionSpecError(
            f"table {table_name}: partition spec {dict(spec)} names unknown column(s) {unknown}"
        )
    others = [k for k in spec if k not in schema.partition_keys]
    if others:
        raise InvalidPartitionSpecError(
            f"table {table_name}: partition spec {dict(spec)} names non-partition column(s) {others} "
            f"(partition keys: {list(schema.partition_keys)})"
        )
    return {k: _typed_value(k, v, to_arrow_type(schema.field(k).type), table_name) for k, v in spec.items()}


def _typed_value(column: str, value: object, target: pa.DataType, table_name: str) -> object:
    if value is None:
        return None
    try:
        return pa.array([value]).cast(target, safe=True)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidPartitionSpecError(
            f"table {table_name}: partition spec value {value!r} does not fit column {column} "
            f"of type {target} ({e})"
        ) from None


def check_rows_in_spec(rows: pa.Table, spec: Mapping[str, object], *, table_name: str) -> None:
    """Refuse rows outside a static overwrite's partition spec (Paimon: the changes must belong to it)."""
    for column, value in spec.items():
        values = rows.column(column)
        inside = pc.is_null(values) if value is None else pc.fill_null(pc.equal(values, value), False)
        if pc.all(inside).as_py() is False:
            outside = pc.filter(values, pc.invert(inside))[0].as_py()
            raise InvalidPartitionSpecError(
                f"table {table_name}: overwriting partition {dict(spec)}, but a row has {column}={outside!r}, "
                "which is outside it; nothing was written"
            )


def partition_matcher(
    schema: TableSchema, spec: PartitionSpec | bool | None, messages: Sequence[CommitMessage]
) -> Callable[[bytes], bool]:
    """Which partitions an overwrite replaces: those matching ``spec`` (already typed by
    ``typed_partition_spec``), or those written when ``spec`` is True."""
    if not schema.partition_keys:
        return lambda _partition: True
    if spec is True or spec is None:
        written = {m.partition for m in messages}
        return lambda partition: partition in written
    assert isinstance(spec, Mapping)
    types = [schema.field(k).type for k in schema.partition_keys]
    names = list(schema.partition_keys)

    def matches(partition: bytes) -> bool:
        values = dict(zip(names, deserialize_row(partition, types), strict=True))
        return all(values[k] == v for k, v in spec.items())

    return matches


class TableWriter:
    """Collects writes and deletes; ``commit()`` (or leaving the ``with`` block) publishes them once."""

    def __init__(self, table: Table, *, overwrite: Mapping[str, object] | bool | None = False) -> None:
        """``overwrite``: False for upserts; True to replace the partitions written (the whole table when
        un-partitioned or when `dynamic-partition-overwrite` is false); a mapping of partition values to
        replace exactly the partitions matching it (rows outside it are refused)."""
        self.table = table
        self._overwrite: PartitionSpec | bool | None = overwrite
        if isinstance(overwrite, Mapping):
            self._overwrite = typed_partition_spec(table.schema, overwrite, table_name=table.name)
        elif overwrite is True and not table.options.get_bool("dynamic-partition-overwrite"):
            self._overwrite = {}  # a static overwrite without a partition spec replaces the whole table
        self._write = FileStoreWrite(
            table.io,
            table.root,
            table.schema,
            table.options,
            table_name=table.name,
            # an overwrite ignores previous files: they are all replaced
            restore=(lambda: RestoredState(None))
            if overwrite is not False
            else (lambda: RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())),
        )
        self._closed = False
        self.snapshot_ids: list[int] = []

    def _check_open(self) -> None:
        if self._closed:
            raise LsmlakeError(f"table {self.table.name}: this writer has already committed or aborted")

    def write(self, data: WriteData) -> None:
        """Upsert rows (every column of the table); row kinds come from ``rowkind.field`` when set."""
        self._check_open()
        rows = input_rows(data, self.table.schema, table_name=self.table.name, what="write")
        kinds = row_kinds(rows, self.table.options, RowKind.INSERT, table_name=self.table.name)
        if isinstance(self._overwrite, Mapping):
            check_rows_in_spec(rows, self._overwrite, table_name=self.table.name)
        self._write.write(rows, kinds)

    def delete(self, keys: WriteData) -> None:
        """Delete the rows whose primary keys are given (other columns may be omitted)."""
        self._check_open()
        schema = self.table.schema
        if not schema.primary_keys:
            raise LsmlakeError(f"table {self.table.name}: deleting by key needs a primary-key table")
        rows = input_rows(
            keys,
            schema,
            table_name=self.table.name,
            what="delete",
            required=list(schema.primary_keys),
            fill_missing=True,
        )
        if isinstance(self._overwrite, Mapping):
            check_rows_in_spec(rows, self._overwrite, table_name=self.table.name)
        kinds = np.full(rows.num_rows, int(RowKind.DELETE), dtype=np.int8)
        self._write.write(rows, kinds)

    def commit(self) -> int | None:
        """Flush and publish; returns the id of the last snapshot written (None if nothing changed)."""
        self._check_open()
        self._closed = True
        result = PublishedWrite()  # filled as snapshots land: their files are never deleted on failure
        try:
            overwriting = self._overwrite is not False
            try:
                messages = self._write.prepare_commit()
            except FileNotFoundError as e:
                # compaction reads the files this writer restored; one vanished, so another commit
                # replaced them and snapshot expiry removed them since: the restore is stale
                raise CommitConflictError(
                    f"table {self.table.name}: a file restored from snapshot "
                    f"{self._write.restored_snapshot_id} is gone ({e}); another writer changed the bucket - retry"
                ) from e
            if not messages and not overwriting:
                return None
            committer = FileStoreCommit(
                self.table.io,
                self.table.root,
                self.table.schema,
                self.table.options,
                table_name=self.table.name,
            )
            if not overwriting:
                committer.base_snapshot_id = self._write.restored_snapshot_id
                publish_write(
                    committer,
                    result,
                    messages,
                    table_name=self.table.name,
                    recompact=self._recompact(messages, committer.commit_user),
                )
            else:
                appends = [append_part(m) for m in messages]
                replaces = partition_matcher(self.table.schema, self._overwrite, messages)
                publish_appends(result, appends, [committer.overwrite(appends, replaces=replaces)])
                # as in Paimon, an overwrite commits no changelog: drop the input changelog files
                dropped = {f.file_name for m in messages for f in m.changelog_files}
                for path in self._write.written_paths:
                    if posixpath.basename(path) in dropped:
                        self.table.io.delete_file(path)
                publish_compaction(committer, result, messages, table_name=self.table.name)
        except BaseException:
            self._write.abort(keep=result.published)
            self.snapshot_ids = result.snapshot_ids
            raise
        self.snapshot_ids = result.snapshot_ids
        if result.compaction_dropped:
            self._write.abort(keep=result.published)
        if not self.table.options.get_bool("write-only"):
            # as Java's commit does: expire what the retention options no longer keep
            try:
                expire_snapshots(self.table)
            except Exception as e:  # the commit stands; expiry runs again after the next one
                warnings.warn(
                    f"table {self.table.name}: snapshot expiry after commit failed: {e}", stacklevel=2
                )
        return self.snapshot_ids[-1] if self.snapshot_ids else None

    def _recompact(
        self, messages: Sequence[CommitMessage], commit_user: str
    ) -> Callable[[], int | None] | None:
        """A fresh compaction of the buckets written, for when the write's own compaction loses a race."""
        options = self.table.options
        if options.get_bool("write-only") or not self.table.schema.primary_keys:
            return None
        touched = written_buckets(messages)
        full = options.get_int("full-compaction.delta-commits", 0) > 0
        return lambda: compact_table(self.table, full=full, only=touched, commit_user=commit_user)

    def abort(self) -> None:
        """Discard everything written so far; no snapshot is created."""
        if not self._closed:
            self._closed = True
            self._write.abort()

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            if not self._closed:
                self.commit()
        else:
            self.abort()
