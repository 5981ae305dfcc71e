"""Time travel: the snapshot a read names (id, tag, time, watermark, version) and the table under its schema."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from lsmlake.errors import InvalidOptionError, NoSuchSnapshotError
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import H, TableHandle
from lsmlake.metadata.tags import list_tags, tag_path, tag_snapshot
from lsmlake.schema_change.manager import schema_at

SNAPSHOT_ID = "scan.snapshot-id"
TAG_NAME = "scan.tag-name"
WATERMARK = "scan.watermark"
TIMESTAMP = "scan.timestamp"
TIMESTAMP_MILLIS = "scan.timestamp-millis"
VERSION = "scan.version"
TIME_TRAVEL_OPTIONS = (SNAPSHOT_ID, TAG_NAME, WATERMARK, TIMESTAMP, TIMESTAMP_MILLIS, VERSION)
"""Options that pin a batch read to one snapshot (Java's TimeTravelUtil keys plus `scan.version`)."""
INCREMENTAL_OPTIONS = ("incremental-between", "incremental-between-timestamp")
WATERMARK_PREFIX = "watermark-"

SCAN_POSITION_OPTIONS = (
    *TIME_TRAVEL_OPTIONS,
    "scan.mode",
    *INCREMENTAL_OPTIONS,
    "incremental-between-scan-mode",
    "consumer-id",
)
"""Dynamic options that choose what to read, dropped once a read is pinned to one snapshot."""


@dataclass(frozen=True)
class TimeTravel:
    """A read of one named snapshot: the table under that snapshot's schema, and the snapshot."""

    table: TableHandle
    """The table with the snapshot's columns (names, types) and today's options, minus time-travel ones."""
    snapshot: Snapshot


def parse_millis(text: str, what: str) -> int:
    """Epoch millis, or a timestamp string read in the local time zone (as Java's default zone)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return int(dt.datetime.fromisoformat(text.strip().replace("T", " ")).timestamp() * 1000)
    except ValueError:
        raise InvalidOptionError(f"{what}: {text!r} is neither epoch millis nor a timestamp") from None


def travel_option(table: TableHandle) -> tuple[str, str] | None:
    """The one time-travel option the table's options set, or None; two of them, or one together with
    an `incremental-between*` option, are refused (as Java's SchemaValidation does)."""
    options = table.options
    found = [(k, v) for k in TIME_TRAVEL_OPTIONS if (v := options.get(k)) is not None]
    if len(found) > 1:
        raise InvalidOptionError(
            f"table {table.name}: only one of the options {', '.join(TIME_TRAVEL_OPTIONS)} may be set, "
            f"got {', '.join(k for k, _ in found)}"
        )
    if found:
        incremental = [k for k in INCREMENTAL_OPTIONS if options.get(k) is not None]
        if incremental:
            raise InvalidOptionError(
                f"table {table.name}: option {found[0][0]} conflicts with {incremental[0]}"
            )
    return found[0] if found else None


def snapshot_by_id(table: TableHandle, snapshot_id: int) -> Snapshot:
    """Snapshot ``snapshot_id``; NoSuchSnapshotError names the snapshots that do exist (and a tag that
    still holds an expired one)."""
    manager = table.snapshot_manager
    if snapshot_id > 0 and manager.snapshot_exists(snapshot_id):
        return manager.snapshot(snapshot_id)
    earliest, latest = manager.earliest_id(), manager.latest_id()
    if earliest is None or latest is None:
        raise NoSuchSnapshotError(f"table {table.name} has no snapshot {snapshot_id}: it has no snapshots")
    if 0 < snapshot_id < earliest:
        why = f"it has expired; the earliest snapshot is {earliest} (latest {latest})"
        tags = [t.name for t in list_tags(table) if t.snapshot.id == snapshot_id]
        if tags:
            why += f"; tag {tags[0]!r} still holds it"
    else:
        why = f"the available snapshots are {earliest}..{latest}"
    raise NoSuchSnapshotError(f"table {table.name} has no snapshot {snapshot_id}: {why}")


def tag_exists(table: TableHandle, name: str) -> bool:
    return bool(name) and table.io.is_file(tag_path(table.root, name))


def _version_snapshot(table: TableHandle, version: str) -> Snapshot:
    """`scan.version` as Java's adaptScanVersion reads it: a tag, else ``watermark-<n>``, else an id."""
    text = version.strip()
    if tag_exists(table, text):
        return tag_snapshot(table, text)
    if text.startswith(WATERMARK_PREFIX):
        return _watermark_snapshot(table, text[len(WATERMARK_PREFIX) :], VERSION)
    if text.isdigit():
        return snapshot_by_id(table, int(text))
    raise NoSuchSnapshotError(
        f"table {table.name}: {VERSION}={version!r} names no tag, watermark-<n> or snapshot id"
    )


def _watermark_snapshot(table: TableHandle, text: str, key: str) -> Snapshot:
    try:
        watermark = int(text)
    except ValueError:
        raise InvalidOptionError(f"table {table.name}: option {key}: {text!r} is not a watermark") from None
    found = table.snapshot_manager.later_or_equal_watermark(watermark)
    if found is None:
        raise NoSuchSnapshotError(f"table {table.name} has no snapshot with a watermark >= {watermark}")
    return found


def snapshot_at_millis(table: TableHandle, millis: int) -> Snapshot:
    """The newest snapshot committed at or before ``millis`` (Java's earlierOrEqualTimeMills)."""
    found = table.snapshot_manager.earlier_or_equal_time_millis(millis)
    if found is None:
        raise NoSuchSnapshotError(f"table {table.name} has no snapshot at or before {millis} (epoch millis)")
    return found


def _option_snapshot(table: TableHandle, key: str, value: str) -> Snapshot:
    what = f"table {table.name}: option {key}"
    if key == SNAPSHOT_ID:
        if not value.strip().lstrip("-").isdigit():
            raise InvalidOptionError(f"{what} must be a snapshot id, got {value!r}")
        return snapshot_by_id(table, int(value))
    if key == TAG_NAME:
        return tag_snapshot(table, value)
    if key == VERSION:
        return _version_snapshot(table, value)
    if key == WATERMARK:
        return _watermark_snapshot(table, value, key)
    return snapshot_at_millis(table, parse_millis(value, what))


def travel_snapshot(
    table: TableHandle,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    as_of_millis: int | None = None,
) -> Snapshot | None:
    """The snapshot a read names: the arguments (at most one) win over the table's time-travel options;
    None when neither names one (read the latest)."""
    if sum(x is not None for x in (snapshot_id, tag, as_of_millis)) > 1:
        raise ValueError("give at most one of snapshot_id, tag and as_of_millis")
    if snapshot_id is not None:
        return snapshot_by_id(table, snapshot_id)
    if tag is not None:
        return tag_snapshot(table, tag)
    if as_of_millis is not None:
        return snapshot_at_millis(table, as_of_millis)
    option = travel_option(table)
    return None if option is None else _option_snapshot(table, *option)


def table_at(table: H, snapshot: Snapshot) -> H:
    """``table`` as of ``snapshot``: that snapshot's schema (its columns, names and types) with the
    table's current options (Java's ``schema(snapshot.schemaId()).copy(options)``), and no options
    left that pick what to read."""
    schema = table.schema
    if snapshot.schema_id != schema.id:
        old = schema_at(table.io, table.root, snapshot.schema_id, table_name=table.name)
        schema = replace(old, options=schema.effective_options)
    return replace(without_scan_position(table), schema=schema)


def without_scan_position(table: H) -> H:
    """The table without dynamic options that choose what to read (for reading one given snapshot)."""
    kept = {k: v for k, v in table.dynamic_options.items() if k not in SCAN_POSITION_OPTIONS}
    return table if len(kept) == len(table.dynamic_options) else replace(table, dynamic_options=kept)


def time_travel(
    table: TableHandle,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    as_of_millis: int | None = None,
) -> TimeTravel | None:
    """The snapshot a read names with the table under its schema; None for a read of the latest."""
    snapshot = travel_snapshot(table, snapshot_id=snapshot_id, tag=tag, as_of_millis=as_of_millis)
    return None if snapshot is None else TimeTravel(table_at(table, snapshot), snapshot)
