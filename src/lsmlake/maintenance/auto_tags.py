"""Automatic tags as Paimon's committer makes them: one per period (`tag.automatic-creation` process-time or
watermark, TagAutoCreation), one per batch write (batch, TagBatchCreation), and tag expiry by time
retained (TagTimeExpire)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from lsmlake.core import clock
from lsmlake.core.options import CoreOptions
from lsmlake.core.tag_period import TagPeriod, local_time, zone
from lsmlake.errors import InvalidOptionError, LsmlakeError, NoSuchSnapshotError, NoSuchTagError
from lsmlake.maintenance.cleanup import delete_tag
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metadata.tags import Tag, create_tag, read_tag, read_tags, tag_names, tag_path

BATCH_TAG_PREFIX = "batch-write-"
_NO_WATERMARK = -(2**63)


def _tag_time(table: TableHandle, snapshot: Snapshot) -> dt.datetime | None:
    """The local time a snapshot stands for: its commit time (process-time) or its watermark."""
    o = table.options
    if o.get(CoreOptions.TAG_AUTOMATIC_CREATION) == "watermark":
        if snapshot.watermark is None or snapshot.watermark == _NO_WATERMARK:
            return None
        key = CoreOptions.SINK_WATERMARK_TIME_ZONE.key
        return local_time(snapshot.watermark, zone(o.get(CoreOptions.SINK_WATERMARK_TIME_ZONE), key=key))
    return local_time(snapshot.time_millis, _process_zone(table))


def _process_zone(table: TableHandle) -> dt.tzinfo | None:
    name = table.options.get(CoreOptions.SINK_PROCESS_TIME_ZONE)
    return None if name is None else zone(name, key=CoreOptions.SINK_PROCESS_TIME_ZONE.key)


def check_delay(period: TagPeriod, delay_ms: int) -> None:
    """Paimon's rule: the creation delay must be shorter than one period."""
    if delay_ms >= period.period_ms:
        raise InvalidOptionError(
            f"tag.creation-delay ({delay_ms} ms) must be shorter than the tag period ({period.period_ms} ms)"
        )


def _auto_tags_by_snapshot(tags: list[Tag], period: TagPeriod) -> dict[int, list[str]]:
    grouped: dict[int, list[str]] = defaultdict(list)
    for tag in tags:
        if period.is_auto_tag(tag.name):
            grouped[tag.snapshot.id].append(tag.name)
    return dict(sorted(grouped.items()))


def _drop_tag(table: TableHandle, name: str) -> bool:
    """Delete a tag and the files only it kept; False when it is already gone (Java only warns)."""
    try:
        delete_tag(table, name)
    except NoSuchTagError:
        return False
    return True


def create_auto_tags(table: TableHandle) -> list[str]:
    """Tag the snapshots that end a period, as Paimon's TagAutoCreation after a commit: progress is
    restored from the newest automatic tag, each later snapshot whose time (less `tag.creation-delay`)
    reaches the end of the period after the next tag's gets the previous period's tag (with
    `tag.automatic-completion`: the next missing period's), then the oldest automatic tags beyond
    `tag.num-retained-max` go. Progress comes from the newest tag by name, as Paimon 2.0 reads it
    (1.4 takes the automatic tag of the newest snapshot: the same tag unless tags were made out of
    order). Returns the tags created."""
    o = table.options
    period = o.auto_tag_period
    if period is None:
        return []
    delay = o.get(CoreOptions.TAG_CREATION_DELAY)
    check_delay(period, delay)
    completion = o.get(CoreOptions.TAG_AUTOMATIC_COMPLETION)
    retained = o.get(CoreOptions.TAG_DEFAULT_TIME_RETAINED)
    manager = table.snapshot_manager
    auto = [n for n in tag_names(table.io, table.root) if period.is_auto_tag(n)]
    newest = max(auto, key=lambda n: period.tag_to_time(n) or dt.datetime.min) if auto else None
    latest = manager.latest_id()
    key = (table.root, period, delay, completion, o.get(CoreOptions.TAG_AUTOMATIC_CREATION), _zones(table))
    memo = _PROGRESS.get(key)
    last_seen: tuple[int, int] | None = None
    if (
        memo is not None
        and memo.newest_tag == newest
        and latest is not None
        and latest >= memo.next_snapshot - 1
        and _still_there(manager, memo.last_seen)
    ):
        next_snapshot, next_tag = memo.next_snapshot, memo.next_tag  # this process scanned up to here
        last_seen = memo.last_seen
    else:
        next_tag = None
        next_snapshot = manager.earliest_id() or 1
        if newest is not None:  # progress from the newest automatic tag: one tag file read, not all
            try:
                next_snapshot = read_tag(table.io, table.root, newest).snapshot.id + 1
                next_tag = period.next_tag_time(period.tag_to_time(newest) or dt.datetime.min)
            except NoSuchTagError:  # deleted meanwhile: start over, as without tags
                pass
    created: list[str] = []
    while latest is not None and next_snapshot <= latest:
        try:
            snapshot = manager.snapshot(next_snapshot)
        except NoSuchSnapshotError:
            earliest = manager.earliest_id()
            if earliest is None or earliest <= next_snapshot:
                break
            next_snapshot = earliest  # expired meanwhile
            continue
        next_snapshot += 1
        last_seen = (snapshot.id, snapshot.time_millis)
        moment = _tag_time(table, snapshot)
        if moment is None:
            continue
        if next_tag is not None and moment - dt.timedelta(milliseconds=delay) < period.next_tag_time(
            next_tag
        ):
            continue
        this_tag = (
            next_tag if completion and next_tag is not None else period.normalize_to_previous_tag(moment)
        )
        name = period.time_to_tag(this_tag)
        create_tag(table, name, time_retained_ms=retained, exist_ok=True, snapshot=snapshot)
        created.append(name)
        next_tag = period.next_tag_time(this_tag)
        _retain_auto_tags(table, period)
    _PROGRESS[key] = _Progress(created[-1] if created else newest, next_snapshot, next_tag, last_seen)
    return created


def _still_there(manager: SnapshotManager, seen: tuple[int, int] | None) -> bool:
    """Whether the last snapshot a run scanned is still the same one (a rollback and new commits
    reuse its id with another commit time; an expired one cannot be checked: start over)."""
    if seen is None:
        return True
    try:
        return manager.snapshot(seen[0]).time_millis == seen[1]
    except NoSuchSnapshotError:
        return False


@dataclass(frozen=True)
class _Progress:
    """Where this process's last run over a table stopped: valid while the newest automatic tag is
    the same and the last snapshot scanned is unchanged (another process tagging, or a rollback, makes
    the next run restore from the tags)."""

    newest_tag: str | None
    next_snapshot: int
    next_tag: dt.datetime | None
    last_seen: tuple[int, int] | None
    """The id and commit time of the last snapshot scanned (None: none yet)."""


_PROGRESS: dict[tuple[object, ...], _Progress] = {}
"""Java keeps this state in its committer; without it every commit would re-read the snapshots since
the newest automatic tag (all of them in watermark mode when no snapshot has a watermark)."""


def _zones(table: TableHandle) -> tuple[str | None, str]:
    o = table.options
    return o.get(CoreOptions.SINK_PROCESS_TIME_ZONE), o.get(CoreOptions.SINK_WATERMARK_TIME_ZONE)


def _retain_auto_tags(table: TableHandle, period: TagPeriod) -> None:
    """Delete the oldest automatic tags (by snapshot) beyond `tag.num-retained-max`."""
    most = table.options.get(CoreOptions.TAG_NUM_RETAINED_MAX)
    if most is None or sum(map(period.is_auto_tag, tag_names(table.io, table.root))) <= most:
        return  # no more automatic tags than snapshots they could group: nothing to read
    grouped = _auto_tags_by_snapshot(read_tags(table.io, table.root), period)
    for snapshot_id, names in list(grouped.items())[: max(len(grouped) - most, 0)]:
        if len(names) != 1:
            raise LsmlakeError(
                f"table {table.name}: snapshot {snapshot_id} has more than one automatic tag: {', '.join(names)}"
            )
        _drop_tag(table, names[0])


def expire_tags(table: TableHandle, *, older_than: dt.datetime | None = None) -> list[str]:
    """Delete the tags whose time retained has passed (by the local clock), and with ``older_than``
    also those created before it (a tag without a creation time counts from its file's modification
    time), as Paimon's TagTimeExpire. Returns the tags deleted."""
    now = clock.local_now()
    expired = []
    for tag in read_tags(table.io, table.root):
        created, retained = tag.create_time, tag.time_retained_ms
        if created is None or retained is None:
            if older_than is None:
                continue
            try:
                modified = table.io.modified_millis(tag_path(table.root, tag.name))
            except FileNotFoundError:
                continue
            created = local_time(modified, None)
        reached = retained is not None and now > created + dt.timedelta(milliseconds=retained)
        if (reached or (older_than is not None and older_than > created)) and _drop_tag(table, tag.name):
            expired.append(tag.name)
    return expired


def create_batch_tag(table: TableHandle) -> str | None:
    """Batch mode: tag the latest snapshot 'batch-write-<yyyy-MM-dd>' (or `tag.batch.customized-name`),
    replacing a tag of that name, then keep at most `tag.num-retained-max` tags of any kind (oldest
    snapshot first), as Paimon's TagBatchCreation after a batch write. Returns the tag's name."""
    o = table.options
    snapshot = table.snapshot_manager.latest()
    if snapshot is None:
        return None
    name = o.get(CoreOptions.TAG_BATCH_CUSTOMIZED_NAME) or (
        BATCH_TAG_PREFIX + local_time(snapshot.time_millis, _process_zone(table)).strftime("%Y-%m-%d")
    )
    _drop_tag(table, name)
    create_tag(table, name, time_retained_ms=o.get(CoreOptions.TAG_DEFAULT_TIME_RETAINED), snapshot=snapshot)
    _retain_tags(table)
    return name


def _retain_tags(table: TableHandle) -> None:
    """Batch mode's retention: whole snapshots' tags go oldest first; within the last snapshot touched,
    the tags modified first."""
    most = table.options.get(CoreOptions.TAG_NUM_RETAINED_MAX)
    if most is None:
        return
    tags = read_tags(table.io, table.root)
    count = len(tags)
    grouped: dict[int, list[str]] = defaultdict(list)
    for tag in tags:
        grouped[tag.snapshot.id].append(tag.name)
    for _, names in sorted(grouped.items()):
        if count <= most:
            return
        if count - len(names) > most:
            for name in names:
                _drop_tag(table, name)
            count -= len(names)
            continue
        by_age = sorted(names, key=lambda n: table.io.modified_millis(tag_path(table.root, n)))
        for name in by_age[: count - most]:
            _drop_tag(table, name)
        return
