"""Writing a Ray Dataset into a table: one writer per bucket on the workers, one commit on the driver.

Paimon's primary-key tables assume a single writer per bucket (sequence numbers continue per
bucket from the files restored). So the dataset is shuffled by (partition, bucket) - computed with
lsmlake's own routing, i.e. Paimon's bucket hash over the conformed rows - and each group, all rows
of one bucket, is written by one ``map_groups`` call: level-0 files, then the bucket's compaction
as a local write would do it (unless ``write-only``). The call returns the bucket's commit messages
and the paths it wrote; the driver commits them once, as ``TableWriter.commit`` does.

Why not a Ray ``Datasink``: a datasink's write tasks receive whatever blocks Ray hands them, so a
bucket could be split over two tasks, and ``on_write_failed`` never learns what the tasks that did
succeed wrote. Here a failing group catches its own error, deletes its own files and reports the
error as data, so the driver always sees every group's outcome: on any error it deletes every file
the write produced and raises, and no snapshot is made. (A worker process that dies outright is
retried by Ray; files of the lost attempt are left to ``table.remove_orphan_files()``.)
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
import threading
import traceback
import warnings
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import ray.data

from lsmlake.bucket.routing import route_rows
from lsmlake.commit.publish import naming_published, publish
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.errors import RayWriteError, UnsupportedError
from lsmlake.mergetree.kv_layout import RowKind
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.ray._common import Storage, TableSource, open_source
from lsmlake.table.after_commit import maintain_after_commit
from lsmlake.write.input_rows import conform, row_kinds
from lsmlake.write.writer import FileStoreWrite

GROUP_COLUMN = "__lsmlake_bucket_group"
"""The shuffle key added to each row: a hash of its (partition, bucket)."""

_RESULT_SCHEMA = pa.schema(
    [
        ("rows", pa.int64()),
        ("messages", pa.binary()),
        ("written", pa.binary()),
        ("error", pa.binary()),
        ("error_text", pa.string()),
    ]
)


def group_key(partition: bytes, bucket: int) -> int:
    """A stable non-negative int64 per (partition, bucket); two buckets sharing one only share a writer."""
    digest = hashlib.blake2b(partition + bucket.to_bytes(8, "big", signed=True), digest_size=7).digest()
    return int.from_bytes(digest, "big")


def _add_group_keys(batch: pa.Table, *, name: str, schema: TableSchema, num_buckets: int) -> pa.Table:
    """Conform a batch to the table (types decide the bucket hash) and tag each row with its group."""
    rows = conform(batch, schema, table_name=name)
    keys = np.zeros(rows.num_rows, dtype=np.int64)
    for group in route_rows(rows, schema, num_buckets):
        keys[group.indices] = group_key(group.partition, group.bucket)
    return rows.append_column(GROUP_COLUMN, pa.array(keys, pa.int64()))


_RESTORED: dict[tuple[str, int | None], RestoredState] = {}
_RESTORED_LOCK = threading.Lock()


def _restored(io: FileIO, root: str, snapshot_id: int | None) -> RestoredState:
    """The base snapshot's live files, loaded once per worker process for all the groups it writes."""
    key = (root, snapshot_id)
    with _RESTORED_LOCK:
        state = _RESTORED.get(key)
    if state is not None:
        return state
    if snapshot_id is None:
        state = RestoredState(None)
    else:
        state = RestoredState.load(io, TablePaths(root), SnapshotManager(io, root).snapshot(snapshot_id))
    with _RESTORED_LOCK:
        if len(_RESTORED) >= 2:
            _RESTORED.clear()
        _RESTORED[key] = state
    return state


def _result(
    *,
    rows: int = 0,
    messages: Sequence[CommitMessage] = (),
    written: Sequence[str] = (),
    error: BaseException | None = None,
) -> pa.Table:
    error_bytes = error_text = None
    if error is not None:
        error_text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        try:
            error_bytes = pickle.dumps(error)
            pickle.loads(error_bytes)
        except Exception:
            error_bytes = None
    return pa.table(
        {
            "rows": [rows],
            "messages": [pickle.dumps(list(messages))],
            "written": [pickle.dumps(list(written))],
            "error": [error_bytes],
            "error_text": [error_text],
        },
        schema=_RESULT_SCHEMA,
    )


def _write_group(
    batch: pa.Table,
    *,
    storage: Storage,
    root: str,
    name: str,
    schema: TableSchema,
    options: CoreOptions,
    snapshot_id: int | None,
    compact: bool,
) -> pa.Table:
    """On a worker: write all rows of one bucket; report messages and written files, or the error."""
    writer: FileStoreWrite | None = None
    try:
        io = storage.get()
        writer = FileStoreWrite(
            io, root, schema, options, table_name=name, restore=lambda: _restored(io, root, snapshot_id)
        )
        rows = conform(batch.drop_columns([GROUP_COLUMN]), schema, table_name=name)
        kinds = row_kinds(rows, options, RowKind.INSERT, table_name=name)
        writer.write(rows, kinds)
        messages = writer.prepare_commit(compact=compact)
        return _result(rows=rows.num_rows, messages=messages, written=writer.written_paths)
    except Exception as e:
        _abort(writer)
        return _result(error=e)
    except BaseException:  # cancelled: clean up, then let Ray see it
        _abort(writer)
        raise


def _abort(writer: FileStoreWrite | None) -> None:
    if writer is None:
        return
    try:
        writer.abort()
    except Exception as e:  # the write failed already; report that, not this
        warnings.warn(f"lsmlake.ray: could not delete the files of a failed bucket writer: {e}", stacklevel=2)


def _delete(io: FileIO, paths: Iterable[str]) -> None:
    for path in paths:
        _delete_one(io, path)


def _delete_one(io: FileIO, path: str) -> None:
    try:
        io.delete_file(path)
    except Exception as e:
        warnings.warn(f"lsmlake.ray: could not delete {path} after a failed write: {e}", stacklevel=3)


def _worker_error(row: dict[str, Any]) -> BaseException:
    text = row.get("error_text") or "unknown error"
    if row.get("error") is not None:
        try:
            error = pickle.loads(row["error"])
            if isinstance(error, BaseException):
                if hasattr(error, "add_note"):
                    error.add_note(f"raised by an lsmlake bucket writer on a Ray worker:\n{text}")
                return error
        except Exception:
            pass
    return RayWriteError(f"a bucket writer on a Ray worker failed:\n{text}")


@contextlib.contextmanager
def _sort_shuffle(ds: ray.data.Dataset) -> Iterator[None]:
    """Group by a sort rather than Ray's default hash shuffle while the write runs.

    The hash shuffle starts aggregator actors for every dataset (seconds of fixed cost per write,
    about 10 s on a two-CPU machine); the sort-based one runs as plain tasks. The dataset shares its
    DataContext with the one it derives from, so the setting is put back afterwards.
    """
    context = getattr(ds, "context", None)
    previous = getattr(context, "shuffle_strategy", None)
    if context is None or previous is None:
        yield
        return
    try:
        from ray.data.context import ShuffleStrategy

        context.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    except (ImportError, AttributeError, ValueError):
        yield
        return
    try:
        yield
    finally:
        context.shuffle_strategy = previous


def commit_messages(
    table: TableHandle,
    messages: Sequence[CommitMessage],
    written: Sequence[str],
    *,
    base_snapshot_id: int | None,
) -> int | None:
    """Publish the workers' messages as a local write does (APPEND, then COMPACT); id of the last snapshot.

    ``base_snapshot_id`` is the snapshot the workers restored their buckets from: another writer's data
    in those buckets since is a conflict. On failure every written file that no published snapshot
    references is deleted, and an error raised after a snapshot landed names it.
    """
    if not messages and table.options.get(CoreOptions.SNAPSHOT_IGNORE_EMPTY_COMMIT):
        return None  # without it, publish makes the empty snapshot
    delete = partial(_delete_one, table.io)
    ids = publish(table, messages, base_snapshot_id=base_snapshot_id, written=written, delete=delete)
    if ids:
        with naming_published(ids, table_name=table.name):
            maintain_after_commit(table, latest=ids[-1], written=[m.partition for m in messages])
    return ids[-1] if ids else None


def write_table(
    ds: ray.data.Dataset,
    table: TableSource,
    *,
    compact: bool = True,
    num_partitions: int | None = None,
    **ray_remote_args: Any,
) -> int | None:
    """Upsert the rows of ``ds`` into ``table`` in one commit; the last snapshot's id (None: no change).

    Rows need every table column (types are cast as in ``table.write``; row kinds come from
    ``rowkind.field`` when set). Each (partition, bucket) is written by exactly one Ray task, which also
    runs the bucket's compaction like a local write (``compact=False`` or option ``write-only`` skips
    it). Several rows with one key in one write: which wins is undefined unless a ``sequence.field``
    orders them (the shuffle does not keep the dataset's order). ``num_partitions``: blocks the
    rows are spread over before grouping, at most that many writing tasks (default: the table's
    bucket count). ``ray_remote_args`` go to the writing tasks.
    """
    driver_table, storage = open_source(table)
    driver_table.check_committable()
    schema, options, name = driver_table.schema, driver_table.options, driver_table.name
    num_buckets = options.bucket
    if schema.primary_keys and num_buckets <= 0:
        raise UnsupportedError(
            f"table {name}: Ray writes need a fixed bucket count (option 'bucket' = N), "
            f"the table has {num_buckets}"
        )
    latest = driver_table.snapshot_manager.latest()
    base = latest.id if latest is not None else None

    keyed = ds.map_batches(
        partial(_add_group_keys, name=name, schema=schema, num_buckets=num_buckets),
        batch_format="pyarrow",
    )
    # the sort that groups the rows keeps the number of blocks: make enough for the buckets to spread
    keyed = keyed.repartition(num_partitions or max(num_buckets, 1))
    with _sort_shuffle(keyed):
        written_ds = keyed.groupby(GROUP_COLUMN).map_groups(
            partial(
                _write_group,
                storage=storage,
                root=driver_table.root,
                name=name,
                schema=schema,
                options=options,
                snapshot_id=base,
                compact=compact,
            ),
            batch_format="pyarrow",
            **ray_remote_args,
        )
        try:
            results = written_ds.take_all()
        except Exception:
            # some Ray versions fail to shuffle an empty dataset; nothing was written then
            if keyed.limit(1).count() == 0:
                return None
            raise

    written = [p for r in results for p in pickle.loads(r["written"])]
    failed = [r for r in results if r["error_text"] is not None]
    if failed:
        _delete(driver_table.io, written)
        raise _worker_error(failed[0])
    messages = [m for r in results for m in pickle.loads(r["messages"])]
    return commit_messages(driver_table, messages, written, base_snapshot_id=base)
