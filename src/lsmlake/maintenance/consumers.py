"""Consumers (`consumer/consumer-<id>`, JSON ``{"nextSnapshot": N}``): positions that block expiration."""

from __future__ import annotations

import json
import posixpath

from lsmlake.core.fileio import FileIO
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
