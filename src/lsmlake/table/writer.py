"""A batch writer of one table: many batches of upserts and deletes, one commit."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.commit.publish import CommitResult, PublishedWrite, naming_published, publish
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import to_arrow_type
from lsmlake.errors import CommitConflictError, InvalidPartitionSpecError, LsmlakeError
from lsmlake.mergetree.kv_layout import RowKind
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.table.after_commit import maintain_after_commit
from lsmlake.write.input_rows import WriteData, input_rows, row_kinds
from lsmlake.write.memory_pool import WriteBufferPool
from lsmlake.write.writer import FileStoreWrite

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
    """Collects writes and deletes; ``commit()`` (or leaving the ``with`` block) publishes them once.

    After the commit, ``result`` (a CommitResult) names every snapshot it published, APPEND first. If
    the commit raises, ``result`` names those that landed before the error, as does the error's
    ``published_snapshot_ids``: empty means nothing happened (a CommitConflictError always means
    that, so retrying on it is safe); otherwise the write is committed and must not be retried."""

    def __init__(self, table: TableHandle, *, overwrite: Mapping[str, object] | bool | None = False) -> None:
        """``overwrite``: False for upserts; True to replace the partitions written (the whole table when
        un-partitioned or when `dynamic-partition-overwrite` is false); a mapping of partition values to
        replace exactly the partitions matching it (rows outside it are refused)."""
        table.check_committable()
        self.table = table
        self._overwrite: PartitionSpec | bool | None = overwrite
        if isinstance(overwrite, Mapping):
            self._overwrite = typed_partition_spec(table.schema, overwrite, table_name=table.name)
        elif overwrite is True and not table.options.get(CoreOptions.DYNAMIC_PARTITION_OVERWRITE):
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
            # a postpone table's overwrite keeps each partition's bucket count, as Java's batch sink does
            bucket_counts=(lambda: RestoredState.load(table.io, table.paths, table.snapshot_manager.latest()))
            if overwrite is not False
            else None,
        )
        self._closed = False
        self.snapshot_ids: list[int] = []
        self.result: CommitResult | None = None

    @property
    def memory(self) -> WriteBufferPool:
        """The write buffer budget (`write-buffer-size`) all buckets of this writer share: ``budget``,
        ``used`` (buffered plus being flushed), ``peak``."""
        return self._write.pool

    def wait_for_flushes(self) -> None:
        """Block until the background flushes started so far are written; raise the error of one that failed."""
        self._check_open()
        self._write.wait_for_flushes()

    def _check_open(self) -> None:
        if self._closed:
            raise LsmlakeError(f"table {self.table.name}: this writer has already committed or aborted")

    def write(self, data: WriteData) -> None:
        """Upsert rows (every column of the table); row kinds come from ``rowkind.field`` when set."""
        self._write_rows(data, RowKind.INSERT, "write")

    def update(self, data: WriteData) -> None:
        """Write new versions of existing rows (every column) as ``+U`` records, as UPDATE does in
        Spark and Flink (``rowkind.field`` still wins when set); the merge treats them as upserts."""
        self._write_rows(data, RowKind.UPDATE_AFTER, "update")

    def _write_rows(self, data: WriteData, kind: RowKind, what: str) -> None:
        self._check_open()
        rows = input_rows(data, self.table.schema, table_name=self.table.name, what=what)
        kinds = row_kinds(rows, self.table.options, kind, table_name=self.table.name)
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
        """Flush and publish; returns the id of the last snapshot written (None if nothing changed).
        ``result`` has them all; an error raised after a snapshot landed carries their ids."""
        self._check_open()
        self._closed = True
        overwriting = self._overwrite is not False
        try:
            messages = self._write.prepare_commit()
            replaces = (
                partition_matcher(self.table.schema, self._overwrite, messages) if overwriting else None
            )
        except FileNotFoundError as e:
            self._write.abort()
            # compaction reads the files this writer restored; one vanished, so another commit
            # replaced them and snapshot expiry removed them since: the restore is stale
            raise CommitConflictError(
                f"table {self.table.name}: a file restored from snapshot "
                f"{self._write.restored_snapshot_id} is gone ({e}); another writer changed the bucket - retry"
            ) from e
        except BaseException:
            self._write.abort()
            raise
        unplaced = None if overwriting else self._write.unplaced_deletes()
        if self._overwrite is True and self.table.partition_keys and not any(m.new_files for m in messages):
            # a dynamic partition overwrite that wrote nothing replaces no partition: no snapshot, as in
            # Paimon (its commit skips the overwrite when there are no new files)
            self._write.abort()
            self.result = CommitResult()
            return None
        if not messages and not overwriting and unplaced is None and not self._forced_empty():
            self.result = CommitResult()
            return None
        result = PublishedWrite()  # filled as snapshots land: their files are never deleted on failure
        try:
            publish(
                self.table,
                messages,
                # an overwrite replaces what it finds at commit time: it has no base
                base_snapshot_id=None if overwriting else self._write.restored_snapshot_id,
                known_snapshot=None if overwriting else self._write.restored_snapshot,
                base_level0=None if overwriting else self._write.restored_level0(),
                written=self._write.written_paths,
                delete=self.table.io.delete_file,
                overwrite=replaces,
                result=result,
                unplaced_deletes=unplaced,
            )
        finally:
            self.snapshot_ids = result.snapshot_ids
            self.result = result.frozen()
        if self.snapshot_ids:
            with naming_published(self.snapshot_ids, table_name=self.table.name):
                maintain_after_commit(
                    self.table, latest=self.snapshot_ids[-1], written=[m.partition for m in messages]
                )
        return self.result.snapshot_id

    def _forced_empty(self) -> bool:
        """`snapshot.ignore-empty-commit` false: an empty commit still publishes a snapshot."""
        return not self.table.options.get(CoreOptions.SNAPSHOT_IGNORE_EMPTY_COMMIT)

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
