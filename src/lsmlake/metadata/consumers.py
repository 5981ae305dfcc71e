"""Consumers (`consumer/consumer-<id>`, JSON ``{"nextSnapshot": N}``): positions that block expiration."""

from __future__ import annotations

import json
import posixpath
import re

from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import MAX_NAME_BYTES, name_problem
from lsmlake.core.schema import java_pretty_json
from lsmlake.errors import CorruptFileError

CONSUMER_DIR = "consumer"
CONSUMER_PREFIX = "consumer-"


def consumer_dir(root: str) -> str:
    return posixpath.join(root.rstrip("/"), CONSUMER_DIR)


def read_consumers(io: FileIO, root: str) -> dict[str, int]:
    """Consumer id -> next snapshot id, sorted by id; empty when the table has no consumers."""
    out: dict[str, int] = {}
    for status in sorted(io.list_dir(consumer_dir(root)), key=lambda s: s.name):
        if status.is_dir or not status.name.startswith(CONSUMER_PREFIX):
            continue
        try:
            obj = json.loads(io.read_bytes(status.path))
            out[status.name[len(CONSUMER_PREFIX) :]] = int(obj["nextSnapshot"])
        except FileNotFoundError:
            continue
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFileError(f"consumer file {status.path} is malformed: {e}") from e
    return out


def min_next_snapshot(io: FileIO, root: str) -> int | None:
    """The smallest ``nextSnapshot`` of all consumers (None without consumers)."""
    consumers = read_consumers(io, root)
    return min(consumers.values()) if consumers else None


def check_consumer_id(consumer_id: str) -> str:
    if (
        not isinstance(consumer_id, str)
        or not consumer_id.strip()
        or name_problem(CONSUMER_PREFIX + consumer_id)
    ):
        raise ValueError(
            f"consumer id must be a non-empty file name (no '/', '\\', control characters, at most "
            f"{MAX_NAME_BYTES - len(CONSUMER_PREFIX)} bytes), got {consumer_id!r}"
        )
    return consumer_id


def consumer_path(root: str, consumer_id: str) -> str:
    return posixpath.join(consumer_dir(root), CONSUMER_PREFIX + check_consumer_id(consumer_id))


def read_consumer(io: FileIO, root: str, consumer_id: str) -> int | None:
    """The saved ``nextSnapshot`` of one consumer, None when it has no progress yet."""
    path = consumer_path(root, consumer_id)
    try:
        obj = json.loads(io.read_bytes(path))
        return int(obj["nextSnapshot"])
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptFileError(f"consumer file {path} is malformed: {e}") from e


def write_consumer(io: FileIO, root: str, consumer_id: str, next_snapshot: int) -> None:
    """Save a consumer's progress (Java's ``ConsumerManager.resetConsumer``): replaced atomically."""
    io.overwrite_hint(
        consumer_path(root, consumer_id), java_pretty_json({"nextSnapshot": int(next_snapshot)})
    )


def delete_consumer(io: FileIO, root: str, consumer_id: str) -> None:
    """Remove a consumer's progress (a missing one is no error, as Java's deleteQuietly)."""
    io.delete_file(consumer_path(root, consumer_id))


def _consumer_files(io: FileIO, root: str) -> list[tuple[str, str]]:
    return [
        (s.name[len(CONSUMER_PREFIX) :], s.path)
        for s in sorted(io.list_dir(consumer_dir(root)), key=lambda s: s.name)
        if not s.is_dir and s.name.startswith(CONSUMER_PREFIX) and len(s.name) > len(CONSUMER_PREFIX)
    ]


def expire_consumers(io: FileIO, root: str, older_than_ms: int) -> list[str]:
    """Delete the consumers whose file was last modified before ``older_than_ms`` (epoch ms), as Java's
    ConsumerManager.expire after commits (`consumer.expiration-time`); the ids deleted."""
    expired = []
    for consumer_id, path in _consumer_files(io, root):
        try:
            if io.modified_millis(path) < older_than_ms:
                io.delete_file(path)
                expired.append(consumer_id)
        except FileNotFoundError:
            continue
    return expired


def clear_consumers(
    io: FileIO, root: str, including: str | None = None, excluding: str | None = None
) -> list[str]:
    """Delete the consumers whose id fully matches regex ``including`` (default: all) and not
    ``excluding`` (Java's clear_consumers; Python regex syntax); the ids deleted."""
    include = re.compile(including if including and including.strip() else ".*")
    exclude = re.compile(excluding) if excluding and excluding.strip() else None
    cleared = []
    for consumer_id, path in _consumer_files(io, root):
        if include.fullmatch(consumer_id) and (exclude is None or not exclude.fullmatch(consumer_id)):
            io.delete_file(path)
            cleared.append(consumer_id)
    return cleared
