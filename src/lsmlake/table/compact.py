"""``table.compact()``: move postponed rows to real buckets, then compact every bucket of the latest
snapshot with the executor asked for (local, or a plugin such as Ray) and commit one COMPACT snapshot."""

from __future__ import annotations

from collections.abc import Collection

from lsmlake.commit.compaction import commit_compaction, compact_and_publish
from lsmlake.compact.executors import delete_unpublished
from lsmlake.compact.executors import executor as named_executor
from lsmlake.errors import CommitStateUnknownError, UnsupportedError
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.scan.planner import POSTPONE_BUCKET
from lsmlake.write.postpone import PostponeCompactor


def compact_table(
    table: TableHandle,
    *,
    full: bool = False,
    executor: str = "local",
    only: Collection[tuple[bytes, int]] | None = None,
    commit_user: str | None = None,
) -> int | None:
    """Compact each bucket (its strategy, or everything to the max level when ``full``); snapshot id or None.

    ``executor="ray"`` compacts the buckets as Ray tasks (needs the ``ray`` extra) and commits once.
    ``only`` limits the compaction to these (partition, bucket) pairs (postponed rows are left alone);
    ``commit_user`` commits as that writer (a write re-running its own compaction).
    """
    compactor_for = named_executor(executor)  # ValueError for an unknown name, before any I/O
    table.check_committable()
    if not table.schema.primary_keys:
        raise UnsupportedError(f"table {table.name}: compaction of append tables is not supported yet")
    restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    if restored.snapshot is None:
        return None
    # bucket = -2: give postponed rows real buckets first
    last = compact_postponed(table, restored) if only is None else None
    if last is not None:
        restored = RestoredState.load(table.io, table.paths, table.snapshot_manager.latest())
    pending = [b for b in restored.buckets() if b[1] != POSTPONE_BUCKET and (only is None or b in only)]
    done = compact_and_publish(table, restored, pending, compactor_for(table, full), commit_user=commit_user)
    return done if done is not None else last


def compact_postponed(table: TableHandle, restored: RestoredState) -> int | None:
    """Move the rows of every ``bucket-postpone`` into real buckets in one COMPACT snapshot (or None)."""
    compactor = PostponeCompactor(
        table.io, table.root, table.schema, table.options, restored, table_name=table.name
    )
    if not compactor.partitions():
        return None
    try:
        read_dvs = (restored.dv_index, f"snapshot {restored.snapshot.id if restored.snapshot else 0}")
        return commit_compaction(table, compactor.compact(), read_dvs=read_dvs)
    except BaseException as e:
        if not isinstance(e, CommitStateUnknownError):  # else the snapshot may reference them
            delete_unpublished(table, compactor.written_paths)
        raise
