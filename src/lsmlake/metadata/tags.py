"""Tags (`tag/tag-<name>`): snapshot JSON plus optional tagCreateTime/tagTimeRetained (format.md §3)."""

from __future__ import annotations

import datetime as dt
import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsmlake.core import clock
from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import name_problem
from lsmlake.core.schema import java_pretty_json
from lsmlake.errors import AlreadyExistsError, CorruptFileError, NoSuchSnapshotError, NoSuchTagError
from lsmlake.metadata.snapshot import Snapshot, snapshot_from_json, snapshot_to_json
from lsmlake.metadata.table_handle import TableHandle

TAG_DIR = "tag"
TAG_PREFIX = "tag-"
_BAD_CHARS = frozenset("/\\") | frozenset(chr(c) for c in range(0x20))


@dataclass(frozen=True)
class Tag:
    """A named, immutable copy of one snapshot (core:`tag/Tag.java`)."""

    name: str
    snapshot: Snapshot
    create_time: dt.datetime | None = None
    """`tagCreateTime`: the creator's local wall clock (Java LocalDateTime), only set with a retention."""
    time_retained_ms: int | None = None
    """`tagTimeRetained` in milliseconds, when the tag was created with a retention."""


def tag_dir(root: str) -> str:
    return posixpath.join(root.rstrip("/"), TAG_DIR)


def tag_path(root: str, name: str) -> str:
    return posixpath.join(tag_dir(root), TAG_PREFIX + check_tag_name(name))


def check_tag_name(name: str) -> str:
    """A tag name must be non-blank, not start with '.', and hold no path separators or control chars."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tag name must be a non-blank string, got {name!r}")
    if name.startswith(".") or any(c in _BAD_CHARS for c in name) or name_problem(TAG_PREFIX + name):
        raise ValueError(
            f"tag name {name!r} is invalid: it may not start with '.', hold '/', '\\' or control "
            "characters (raw or percent-encoded), or make a file name longer than 255 bytes"
        )
    return name


# --------------------------------------------------------------------------- codec


def _local_datetime_json(value: dt.datetime) -> list[int]:
    """Jackson's LocalDateTime array: [y, mo, d, h, mi] then second / nano only when non-zero."""
    out = [value.year, value.month, value.day, value.hour, value.minute]
    nanos = value.microsecond * 1000
    if value.second or nanos:
        out.append(value.second)
        if nanos:
            out.append(nanos)
    return out


def _local_datetime_from_json(raw: Any) -> dt.datetime | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return dt.datetime.fromisoformat(raw)
    parts = [int(x) for x in raw] + [0] * (7 - len(raw))
    year, month, day, hour, minute, second, nanos = parts[:7]
    return dt.datetime(year, month, day, hour, minute, second, nanos // 1000)


def _duration_ms_from_json(raw: Any) -> int | None:
    """Jackson writes a Duration as decimal seconds (e.g. ``86400.000000000``)."""
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return round(float(raw) * 1000)
    return None


def encode_tag(tag: Tag) -> str:
    """Tag JSON: the snapshot's JSON, plus the two tag fields when the tag has a retention."""
    obj = snapshot_to_json(tag.snapshot)
    if tag.create_time is not None:
        obj["tagCreateTime"] = _local_datetime_json(tag.create_time)
    if tag.time_retained_ms is not None:
        obj["tagTimeRetained"] = tag.time_retained_ms / 1000.0
    return java_pretty_json(obj)


def decode_tag(name: str, text: str | bytes, *, path: str = "<tag>") -> Tag:
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise CorruptFileError(f"tag file {path} is not valid JSON: {e}") from e
    if not isinstance(obj, dict):
        raise CorruptFileError(f"tag file {path} does not hold a JSON object")
    snapshot = snapshot_from_json(obj, name=path)
    try:
        create_time = _local_datetime_from_json(obj.get("tagCreateTime"))
    except (TypeError, ValueError) as e:
        raise CorruptFileError(f"tag file {path} has a malformed tagCreateTime: {e}") from e
    return Tag(name, snapshot, create_time, _duration_ms_from_json(obj.get("tagTimeRetained")))


# --------------------------------------------------------------------------- reading


def read_tag(io: FileIO, root: str, name: str) -> Tag:
    path = tag_path(root, name)
    try:
        data = io.read_bytes(path)
    except FileNotFoundError as e:
        raise NoSuchTagError(f"tag {name!r} does not exist ({path})") from e
    return decode_tag(name, data, path=path)


def tag_names(io: FileIO, root: str) -> list[str]:
    """Names of the tag files under ``<root>/tag`` (temp files ignored), sorted."""
    return sorted(
        s.name[len(TAG_PREFIX) :]
        for s in io.list_dir(tag_dir(root))
        if not s.is_dir and s.name.startswith(TAG_PREFIX) and len(s.name) > len(TAG_PREFIX)
    )


def read_tags(io: FileIO, root: str) -> list[Tag]:
    """Every tag of a table (or branch) root, sorted by name; tags deleted meanwhile are skipped."""
    out = []
    for name in tag_names(io, root):
        try:
            out.append(read_tag(io, root, name))
        except NoSuchTagError:
            continue
    return out


def list_tags(table: TableHandle) -> list[Tag]:
    """The table's tags, sorted by name."""
    return read_tags(table.io, table.root)


def tag_snapshot(table: TableHandle, name: str) -> Snapshot:
    """The snapshot a tag points at (for time travel); works after the snapshot itself has expired."""
    return require_tag(table, name).snapshot


# --------------------------------------------------------------------------- creating


def create_tag(
    table: TableHandle,
    name: str,
    snapshot_id: int | None = None,
    *,
    time_retained_ms: int | None = None,
    exist_ok: bool = False,
    snapshot: Snapshot | None = None,
) -> Tag:
    """Tag a snapshot (``snapshot``, else ``snapshot_id``, else the latest); the tag file is created
    atomically. On a table with automatic tags, an automatic tag's name is refused for a snapshot that
    already has one (as Paimon's TagManager)."""
    check_tag_name(name)
    if time_retained_ms is not None and time_retained_ms < 0:
        raise ValueError(f"time_retained_ms must be >= 0, got {time_retained_ms}")
    if snapshot is None:
        snapshot = _snapshot_to_tag(table, snapshot_id, "tag")
    if _is_auto_tag_name(table, name) and table.io.exists(tag_path(table.root, name)):
        if exist_ok:  # an existing tag is no error, even on an auto-tagged snapshot (Java checks first)
            return read_tag(table.io, table.root, name)
        raise AlreadyExistsError(f"tag {name!r} of table {table.name} already exists")
    _check_no_auto_tag(table, name, snapshot)
    tag = _new_tag(name, snapshot, time_retained_ms)
    path = tag_path(table.root, name)
    if not table.io.write_if_absent(path, encode_tag(tag).encode("utf-8")):  # create-only
        if exist_ok:
            return read_tag(table.io, table.root, name)
        raise AlreadyExistsError(f"tag {name!r} of table {table.name} already exists")
    return tag


def create_tag_from_timestamp(
    table: TableHandle, name: str, timestamp_millis: int, *, time_retained_ms: int | None = None
) -> Tag:
    """Tag the oldest snapshot committed at or after ``timestamp_millis``, or an older tagged snapshot
    that is (Paimon's create_tag_from_timestamp: a tag keeps an expired snapshot reachable)."""
    snapshot = table.snapshot_manager.later_or_equal_time_millis(timestamp_millis)
    tagged = sorted({t.snapshot.id: t.snapshot for t in read_tags(table.io, table.root)}.items())
    for _, candidate in tagged:
        if timestamp_millis <= candidate.time_millis:
            if snapshot is None or candidate.time_millis < snapshot.time_millis:
                snapshot = candidate
            break
    if snapshot is None:
        raise NoSuchSnapshotError(
            f"table {table.name}: no snapshot was committed at or after {timestamp_millis} (epoch ms)"
        )
    return create_tag(table, name, time_retained_ms=time_retained_ms, snapshot=snapshot)


def replace_tag(
    table: TableHandle, name: str, snapshot_id: int | None = None, *, time_retained_ms: int | None = None
) -> Tag:
    """Point an existing tag at another snapshot (the latest by default), as Paimon's replace_tag: the
    tag file is overwritten; files only the old snapshot kept are left to orphan cleaning."""
    require_tag(table, name)
    snapshot = _snapshot_to_tag(table, snapshot_id, "replace the tag")
    _check_no_auto_tag(table, name, snapshot)
    tag = _new_tag(name, snapshot, time_retained_ms)
    table.io.write_bytes(tag_path(table.root, name), encode_tag(tag).encode("utf-8"))
    return tag


def rename_tag(table: TableHandle, name: str, target: str) -> None:
    """Rename a tag (its file); the target name must not exist."""
    require_tag(table, name)
    check_tag_name(target)
    dst = tag_path(table.root, target)
    if table.io.exists(dst):
        raise AlreadyExistsError(f"tag {target!r} of table {table.name} already exists")
    table.io.rename(tag_path(table.root, name), dst)


def _snapshot_to_tag(table: TableHandle, snapshot_id: int | None, what: str) -> Snapshot:
    """Snapshot ``snapshot_id`` (an expired one from a tag that holds it), or the latest."""
    manager = table.snapshot_manager
    if snapshot_id is not None:
        if manager.snapshot_exists(snapshot_id):
            return manager.snapshot(snapshot_id)
        for tag in read_tags(table.io, table.root):
            if tag.snapshot.id == snapshot_id:
                return tag.snapshot
        raise NoSuchSnapshotError(f"table {table.name}: cannot {what}: snapshot {snapshot_id} does not exist")
    latest = manager.latest()
    if latest is None:
        raise NoSuchSnapshotError(f"table {table.name} has no snapshot to {what}")
    return latest


def _new_tag(name: str, snapshot: Snapshot, time_retained_ms: int | None) -> Tag:
    """Paimon writes tagCreateTime (the local clock) only with a retention, so old readers still parse it."""
    if time_retained_ms is None:
        return Tag(name, snapshot)
    return Tag(name, snapshot, create_time=clock.local_now(), time_retained_ms=time_retained_ms)


def _is_auto_tag_name(table: TableHandle, name: str) -> bool:
    period = table.options.auto_tag_period
    return period is not None and period.is_auto_tag(name)


def _check_no_auto_tag(table: TableHandle, name: str, snapshot: Snapshot) -> None:
    period = table.options.auto_tag_period
    if period is None or not period.is_auto_tag(name):
        return
    tagged = [
        t.name
        for t in read_tags(table.io, table.root)
        if period.is_auto_tag(t.name) and t.snapshot.id == snapshot.id
    ]
    if tagged:
        raise AlreadyExistsError(
            f"table {table.name}: snapshot {snapshot.id} is already auto-tagged with {tagged}"
        )


def remove_tag_files(io: FileIO, root: str, names: Sequence[str]) -> None:
    """Delete tag files (metadata only; the files they protect are cleaned by the caller)."""
    for name in names:
        io.delete_file(tag_path(root, name))


def require_tag(table: TableHandle, name: str) -> Tag:
    check_tag_name(name)
    try:
        return read_tag(table.io, table.root, name)
    except NoSuchTagError:
        raise NoSuchTagError(f"tag {name!r} of table {table.name} does not exist") from None
