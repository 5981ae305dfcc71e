"""``write.sequence-number-init-mode`` = snapshot (Paimon 2.x): each snapshot records the highest sequence
number the table has handed out, in its properties, and writers start every bucket above it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lsmlake.metadata.manifest import FileKind, ManifestEntry
from lsmlake.metadata.snapshot import Snapshot

MAX_SEQUENCE_NUMBER = "sequence.generation.max-sequence-number"
"""The snapshot property Paimon's SequenceSnapshotProperties names."""


def recorded_max_sequence_number(snapshot: Snapshot | None) -> int | None:
    """The highest sequence number ``snapshot`` records, or None when it records none."""
    if snapshot is None or not snapshot.properties:
        return None
    value = snapshot.properties.get(MAX_SEQUENCE_NUMBER)
    return None if value is None else int(value)


def max_added_sequence_number(entries: Iterable[ManifestEntry]) -> int | None:
    """The highest max sequence number among the ADD entries, or None when there is none."""
    return max((e.file.max_sequence_number for e in entries if e.kind is FileKind.ADD), default=None)


def merged_properties(latest_max: int | None, delta: Iterable[ManifestEntry]) -> Mapping[str, str]:
    """The properties of a new snapshot: the higher of the latest's maximum and the delta's added files'
    (none when neither exists; an empty map then, as Paimon writes)."""
    current = max_added_sequence_number(delta)
    known = [n for n in (latest_max, current) if n is not None]
    return {MAX_SEQUENCE_NUMBER: str(max(known))} if known else {}
