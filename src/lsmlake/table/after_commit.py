"""What a writer runs after its commit, in Paimon's order (TableCommitImpl.maintain, then the batch
writer's tag): automatic tags, tag expiry, partition expiry, consumer expiry, snapshot expiry, the batch tag, marking
the written partitions done."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

from lsmlake.core import clock
from lsmlake.core.options import CoreOptions
from lsmlake.maintenance.auto_tags import create_auto_tags, create_batch_tag, expire_tags
from lsmlake.maintenance.expire import expire_after_commit
from lsmlake.metadata.consumers import expire_consumers
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.table.partition_done import mark_written_partitions_done
from lsmlake.table.partition_expire import expire_partitions_after_commit


def _warned(table: TableHandle, what: str, step: Callable[[], object]) -> None:
    """Run one step; a failure is only warned about: the commit stands, the next commit tries again."""
    try:
        step()
    except Exception as e:
        warnings.warn(f"table {table.name}: {what} after commit failed: {e}", stacklevel=4)


TAG_EXPIRE_CHECK_INTERVAL_MS = 60_000
"""Tag expiry lists and reads every tag; a process does it for a table at most once a minute (by
``core.clock``), so a stream of small commits pays no LIST per commit. Java checks on every commit."""
_LAST_TAG_CHECK: dict[str, int] = {}


def _tag_check_due(table: TableHandle) -> bool:
    now = clock.epoch_millis()
    last = _LAST_TAG_CHECK.get(table.root)
    if last is not None and 0 <= now - last < TAG_EXPIRE_CHECK_INTERVAL_MS:
        return False
    _LAST_TAG_CHECK[table.root] = now
    return True


def maintain_after_commit(
    table: TableHandle, *, latest: int | None = None, written: Iterable[bytes] = ()
) -> None:
    """Everything the options ask for after a commit that published snapshots (`write-only` skips all
    but the batch tag and marking the ``written`` partitions done, as in Paimon's batch writers)."""
    o = table.options
    if not o.get(CoreOptions.WRITE_ONLY):
        _warned(table, "automatic tag creation", lambda: create_auto_tags(table))
        if o.get(CoreOptions.TAG_TIME_EXPIRE_ENABLED) and _tag_check_due(table):
            _warned(table, "tag expiry", lambda: expire_tags(table))
        expire_partitions_after_commit(table)
        consumer_ttl = o.get(CoreOptions.CONSUMER_EXPIRATION_TIME)
        if consumer_ttl is not None:  # before snapshot expiry, which consumers hold back
            cutoff = clock.epoch_millis() - consumer_ttl
            _warned(table, "consumer expiry", lambda: expire_consumers(table.io, table.root, cutoff))
        expire_after_commit(table, latest=latest)
    if o.get(CoreOptions.TAG_AUTOMATIC_CREATION) == "batch":
        _warned(table, "batch tag creation", lambda: create_batch_tag(table))
    if o.get(CoreOptions.PARTITION_END_INPUT_TO_DONE):
        _warned(table, "marking partitions done", lambda: mark_written_partitions_done(table, written))
