"""Partition expiry (`partition.expiration-time`): checked after commits as Paimon's committer does, or
run on demand; expired partitions are dropped in OVERWRITE snapshots."""

from __future__ import annotations

import datetime as dt
import time
import warnings
from collections.abc import Callable

from lsmlake.commit.publish import PublishedWrite, publish
from lsmlake.core import clock
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.options import CoreOptions
from lsmlake.core.partition_time import formatter_regex, partition_time
from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError, InvalidPartitionSpecError
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.table_handle import TableHandle

STRATEGIES = ("values-time", "update-time")
_EPOCH = dt.datetime(1970, 1, 1)
_LAST_CHECK: dict[str, float] = {}
"""Table root -> when this process last checked it for expired partitions (monotonic seconds); Java
keeps the same per committer."""


def live_partitions(table: TableHandle) -> dict[bytes, int]:
    """Partition -> its newest file's creation time (local wall-clock ms) in the latest snapshot."""
    out: dict[bytes, int] = {}
    for e in live_entries(table.io, table.paths, table.snapshot_manager.latest()):
        created = e.file.creation_time_millis or 0
        out[e.partition] = max(out.get(e.partition, created), created)
    return out


def drop_matching(table: TableHandle, matches: Callable[[bytes], bool]) -> int | None:
    """One OVERWRITE snapshot removing every file of the matching partitions."""
    result = PublishedWrite()
    publish(
        table,
        [],
        base_snapshot_id=None,
        written=[],
        delete=table.io.delete_file,
        overwrite=matches,
        result=result,
    )
    return result.snapshot_ids[-1] if result.snapshot_ids else None


def _java_text(value: object, t: DataType) -> str | None:
    """A partition value as Java's internal object prints it (a DATE is its day number)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if t.root == "DATE" and isinstance(value, dt.date):
        return str((value - dt.date(1970, 1, 1)).days)
    return str(value)


def _wall_ms(moment: dt.datetime) -> int:
    return int((moment - _EPOCH) / dt.timedelta(milliseconds=1))


def expire_partitions(
    table: TableHandle,
    *,
    expiration_time_ms: int | None = None,
    strategy: str | None = None,
    timestamp_formatter: str | None = None,
    timestamp_pattern: str | None = None,
    max_expires: int | None = None,
    now: dt.datetime | None = None,
) -> list[dict[str, str]]:
    """Drop the partitions older than ``expiration_time_ms`` (default `partition.expiration-time`) at
    ``now`` (local time): by their values' time (values-time; values that do not parse never expire) or
    their newest file (update-time). At most ``max_expires`` (`partition.expiration-max-num`), sorted by
    value; committed in batches of `partition.expiration-batch-size`. Returns the dropped specs."""
    o = table.options
    expiration = (
        o.get(CoreOptions.PARTITION_EXPIRATION_TIME) if expiration_time_ms is None else expiration_time_ms
    )
    if expiration is None or expiration < 0:
        raise InvalidOptionError(
            f"table {table.name}: partition expiry needs an expiration time (partition.expiration-time)"
        )
    how = (strategy or o.get(CoreOptions.PARTITION_EXPIRATION_STRATEGY)).strip().lower()
    if how not in STRATEGIES:
        raise InvalidOptionError(
            f"partition expiration strategy {how!r} is not one of {', '.join(STRATEGIES)}"
        )
    formatter = timestamp_formatter or o.get(CoreOptions.PARTITION_TIMESTAMP_FORMATTER)
    if formatter:
        formatter_regex(formatter)  # refuse an unreadable pattern before anything is dropped
    pattern = timestamp_pattern or o.get(CoreOptions.PARTITION_TIMESTAMP_PATTERN)
    limit = o.get(CoreOptions.PARTITION_EXPIRATION_MAX_NUM) if max_expires is None else max_expires
    if not table.partition_keys:
        raise InvalidPartitionSpecError(
            f"table {table.name} is not partitioned: it has no partition to expire"
        )
    keys = list(table.partition_keys)
    types = [table.schema.field(k).type for k in keys]
    cutoff = (now or clock.local_now()) - dt.timedelta(milliseconds=expiration)
    expired: list[tuple[bytes, list[str]]] = []
    for partition, last_created in live_partitions(table).items():
        texts = [_java_text(v, t) for v, t in zip(deserialize_row(partition, types), types, strict=True)]
        if how == "values-time":
            moment = partition_time(keys, texts, pattern=pattern, formatter=formatter)
            old = moment is not None and cutoff > moment
        else:
            old = _wall_ms(cutoff) > last_created
        if old:
            expired.append((partition, [o.partition_default_name if x is None else x for x in texts]))
    expired.sort(key=lambda item: ",".join(item[1]))
    expired = expired[: max(limit, 0)]
    batch = o.get(CoreOptions.PARTITION_EXPIRATION_BATCH_SIZE) or len(expired)
    for start in range(0, len(expired), max(batch, 1)):
        chosen = {p for p, _ in expired[start : start + batch]}
        drop_matching(table, chosen.__contains__)
    return [dict(zip(keys, values, strict=True)) for _, values in expired]


def expire_partitions_after_commit(table: TableHandle) -> None:
    """What a writer runs after its commit when `partition.expiration-time` is set (not `write-only`):
    expire partitions, at most once per `partition.expiration-check-interval` in this process (the first
    commit checks at once). A failure is only warned about: the commit stands."""
    o = table.options
    if o.get(CoreOptions.WRITE_ONLY) or o.get(CoreOptions.PARTITION_EXPIRATION_TIME) is None:
        return
    if not table.partition_keys:
        return
    interval_s = o.get(CoreOptions.PARTITION_EXPIRATION_CHECK_INTERVAL) / 1000
    key, moment = table.root, time.monotonic()
    last = _LAST_CHECK.get(key)
    if interval_s > 0 and last is not None and moment - last <= interval_s:
        return
    _LAST_CHECK[key] = moment
    try:
        expire_partitions(table)
    except Exception as e:
        warnings.warn(f"table {table.name}: partition expiry after commit failed: {e}", stacklevel=3)
