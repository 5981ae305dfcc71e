"""Streaming scan policy: where a stream starts (scan.mode, consumer progress) and which snapshots follow."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.errors import InvalidOptionError, NoSuchSnapshotError, UnsupportedError
from lsmlake.mergetree.interval_partition import KeyBounds
from lsmlake.metadata.snapshot import FIRST_SNAPSHOT_ID, Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.scan.split import Split
from lsmlake.scan.split_generator import split_for_batch
from lsmlake.stream.incremental import ChangeMode

STREAM_SCAN_MODES = (
    "default",
    "latest-full",
    "full",
    "latest",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
    "compacted-full",
)
COMPACT = "COMPACT"


@dataclass(frozen=True)
class StartingPoint:
    """The first plan of a stream: a snapshot read in full (merged), then changes from ``next_snapshot``."""

    full_snapshot: int | None
    next_snapshot: int


def stream_mode(options: CoreOptions) -> str:
    """`scan.mode` with ``default`` resolved as Paimon's ``CoreOptions.startupMode()`` does."""
    mode = options.get(CoreOptions.SCAN_MODE)
    if mode not in STREAM_SCAN_MODES:
        raise UnsupportedError(f"scan.mode={mode!r} is not supported for streaming reads")
    if mode == "full":
        return "latest-full"
    if mode != "default":
        return mode
    if options.is_set(CoreOptions.SCAN_TIMESTAMP_MILLIS) or options.is_set(CoreOptions.SCAN_TIMESTAMP):
        return "from-timestamp"
    if options.is_set(CoreOptions.SCAN_SNAPSHOT_ID):
        return "from-snapshot"
    if options.is_set(CoreOptions.SCAN_TAG_NAME):
        raise UnsupportedError("a stream cannot start from a tag (scan.tag-name); use scan.snapshot-id")
    return "latest-full"


def follow_up_mode(options: CoreOptions) -> ChangeMode:
    """``delta`` (APPEND snapshots' new files) for changelog-producer none, else ``changelog``."""
    return "delta" if options.changelog_producer == "none" else "changelog"


def full_phase_levels(options: CoreOptions, num_levels: int) -> Callable[[int], bool] | None:
    """Levels the first full read keeps: lookup skips level 0 (it will yield changelog later),
    full-compaction reads only the top level; other producers read everything (None)."""
    producer = options.changelog_producer
    if producer == "lookup":
        return lambda level: level > 0
    if producer == "full-compaction":
        top = num_levels - 1
        return lambda level: level == top
    return None


def _start_millis(options: CoreOptions) -> int:
    millis = options.get(CoreOptions.SCAN_TIMESTAMP_MILLIS)
    if millis is not None:
        return millis
    text = options.get(CoreOptions.SCAN_TIMESTAMP) or ""
    try:
        return int(dt.datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise InvalidOptionError(f"option 'scan.timestamp': {text!r} is not a timestamp") from None


def _latest_compacted(manager: SnapshotManager, options: CoreOptions, latest: int, earliest: int) -> int:
    """The newest COMPACT snapshot (every `full-compaction.delta-commits`-th with the full-compaction
    producer or that option set); the latest snapshot when there is none."""
    delta_commits: int | None = None
    if options.changelog_producer == "full-compaction" or options.full_compaction_delta_commits:
        delta_commits = options.get(CoreOptions.FULL_COMPACTION_DELTA_COMMITS) or 1
    for sid in range(latest, earliest - 1, -1):
        s = manager.snapshot(sid)
        if s.commit_kind == COMPACT and (delta_commits is None or s.commit_identifier % delta_commits == 0):
            return sid
    return latest


def starting_point(
    manager: SnapshotManager,
    options: CoreOptions,
    *,
    latest_at_creation: int | None,
    consumer_next: int | None = None,
    earliest_changelog: int | None = None,
) -> StartingPoint | None:
    """Where the stream starts, or None while the table has no snapshot to start from (try again later).

    ``latest_at_creation`` is the latest snapshot when the stream was created (mode ``latest`` reads
    changes after it, or from the first snapshot when there was none). A consumer's saved
    ``nextSnapshot`` wins over the mode unless `consumer.ignore-progress` is set. Changes may start
    before the earliest snapshot at ``earliest_changelog`` (long-lived changelogs of expired snapshots).
    """
    mode = stream_mode(options)
    earliest, latest = manager.earliest_id(), manager.latest_id()
    first_change = earliest
    if earliest is not None and earliest_changelog is not None:
        first_change = min(earliest, earliest_changelog)
    if consumer_next is not None and not options.get(CoreOptions.CONSUMER_IGNORE_PROGRESS):
        if first_change is None:
            return None
        return StartingPoint(None, max(consumer_next, first_change))
    if mode == "latest":
        if latest_at_creation is None:
            return StartingPoint(None, FIRST_SNAPSHOT_ID)
        return StartingPoint(None, latest_at_creation + 1)
    if earliest is None or latest is None:
        return None
    if mode == "latest-full":
        return StartingPoint(latest, latest + 1)
    if mode == "compacted-full":
        sid = _latest_compacted(manager, options, latest, earliest)
        return StartingPoint(sid, sid + 1)
    if mode in ("from-snapshot", "from-snapshot-full"):
        start = options.get(CoreOptions.SCAN_SNAPSHOT_ID)
        if start is None:
            raise InvalidOptionError(f"scan.mode={mode} needs scan.snapshot-id")
        if mode == "from-snapshot":
            return StartingPoint(None, max(start, first_change or earliest))
        sid = max(start, earliest)
        if sid > latest:
            raise NoSuchSnapshotError(f"snapshot {sid} does not exist yet (latest is {latest})")
        return StartingPoint(sid, sid + 1)
    # from-timestamp: changes after the newest snapshot committed before the time
    millis = _start_millis(options)
    for sid in range(latest, earliest - 1, -1):
        if manager.snapshot(sid).time_millis < millis:
            return StartingPoint(None, sid + 1)
    return StartingPoint(None, earliest)


def next_snapshot(
    manager: SnapshotManager,
    snapshot_id: int,
    *,
    long_lived: Callable[[int], Snapshot | None] | None = None,
) -> Snapshot | None:
    """Snapshot ``snapshot_id`` if it exists yet (or, once expired, its long-lived changelog from
    ``long_lived``); raises when it has expired without one."""
    if manager.snapshot_exists(snapshot_id):
        try:
            return manager.snapshot(snapshot_id)
        except NoSuchSnapshotError:
            pass  # expired between the check and the read: fall through to the changelog / earliest check
    kept = long_lived(snapshot_id) if long_lived is not None else None
    if kept is not None:
        return kept
    earliest = manager.earliest_id()
    if earliest is not None and earliest > snapshot_id:
        raise NoSuchSnapshotError(
            f"snapshot {snapshot_id} has expired (earliest is {earliest}); the stream cannot continue "
            "without losing changes (a consumer-id keeps the snapshots a stream still needs)"
        )
    return None


def restrict_levels(
    splits: Sequence[Split], keep: Callable[[int], bool], schema: TableSchema, options: CoreOptions
) -> list[Split]:
    """The splits of a batch plan re-planned over only the files whose level ``keep`` accepts."""
    by_bucket: dict[tuple[bytes, int], list[Split]] = {}
    for s in splits:
        by_bucket.setdefault((s.partition, s.bucket), []).append(s)
    bounds = KeyBounds([schema.field(k).type for k in schema.trimmed_primary_keys])
    out: list[Split] = []
    for bucket_splits in by_bucket.values():
        first = bucket_splits[0]
        kept = [(f, d) for s in bucket_splits for f, d in zip(s.files, s.deletion_files, strict=True)]
        kept = [(f, d) for f, d in kept if keep(f.level)]
        if not kept:
            continue
        dvs = {f.file_name: d for f, d in kept}
        groups = split_for_batch(
            [f for f, _ in kept],
            bounds,
            target_size=options.get(CoreOptions.SOURCE_SPLIT_TARGET_SIZE),
            open_file_cost=options.get(CoreOptions.SOURCE_SPLIT_OPEN_FILE_COST),
            deletion_vectors=options.deletion_vectors_enabled,
            merge_engine=options.merge_engine,
        )
        out.extend(
            replace(
                first,
                files=g.files,
                deletion_files=tuple(dvs[f.file_name] for f in g.files),
                raw_convertible=g.raw_convertible,
                sections=g.sections,
                rule=f"stream first plan: {g.rule}",
            )
            for g in groups
        )
    return out
