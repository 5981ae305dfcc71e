"""The per-partition statistics a REST catalog commit carries (Paimon's PartitionStatistics of the delta)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.paths import partition_value_text
from lsmlake.core.types import DataType
from lsmlake.metadata.manifest import FileKind, ManifestEntry


@dataclass(frozen=True)
class PartitionNaming:
    """How a table spells a partition as ``{key: text}``: its partition keys and types, the default
    partition name for nulls and blanks, and ``partition.legacy-name`` (fixed once a table has data)."""

    keys: tuple[str, ...] = ()
    types: tuple[DataType, ...] = ()
    default_name: str = "__DEFAULT_PARTITION__"
    legacy: bool = True

    def spec(self, partition: bytes) -> dict[str, str]:
        if not self.keys:
            return {}
        values = deserialize_row(partition, list(self.types))
        out = {}
        for key, value, t in zip(self.keys, values, self.types, strict=True):
            text = partition_value_text(value, t, legacy=self.legacy)
            out[key] = self.default_name if text is None or not text.strip() else text
        return out


def _epoch_millis(local_millis: int | None) -> int:
    """A file's creation time (local wall clock encoded as UTC, Paimon's _CREATION_TIME) as epoch ms,
    as Java's DataFileMeta.creationTimeEpochMillis reads it in the local time zone."""
    if local_millis is None:
        return 0
    wall = dt.datetime.fromtimestamp(local_millis / 1000, tz=dt.timezone.utc).replace(tzinfo=None)
    return int(wall.timestamp() * 1000)


def partition_statistics(delta: Sequence[ManifestEntry], naming: PartitionNaming) -> list[dict[str, Any]]:
    """PartitionEntry.merge of a snapshot's delta, as PartitionStatistics JSON: per partition the added
    minus deleted records, bytes and files, the newest file creation time, and the bucket count."""
    merged: dict[bytes, dict[str, Any]] = {}
    for entry in delta:
        sign = 1 if entry.kind == FileKind.ADD else -1
        f = entry.file
        stats = merged.get(entry.partition)
        if stats is None:
            stats = merged[entry.partition] = {
                "spec": naming.spec(entry.partition),
                "recordCount": 0,
                "fileSizeInBytes": 0,
                "fileCount": 0,
                "lastFileCreationTime": _epoch_millis(f.creation_time_millis),
                "totalBuckets": entry.total_buckets,
            }
        stats["recordCount"] += sign * f.row_count
        stats["fileSizeInBytes"] += sign * f.file_size
        stats["fileCount"] += sign
        stats["lastFileCreationTime"] = max(
            stats["lastFileCreationTime"], _epoch_millis(f.creation_time_millis)
        )
        stats["totalBuckets"] = entry.total_buckets
    return list(merged.values())
