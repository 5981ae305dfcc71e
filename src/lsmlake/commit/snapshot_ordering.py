"""``sequence.snapshot-ordering`` at commit time: the files a non-compaction snapshot adds carry its id as
their sequence range (Paimon 2.x's FileStoreCommitImpl stamps it), so reads order their rows by commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lsmlake.metadata.manifest import FileKind, ManifestEntry


def stamp_snapshot_id(entries: Sequence[ManifestEntry], snapshot_id: int) -> tuple[ManifestEntry, ...]:
    """``entries`` with every added data file's min and max sequence number set to ``snapshot_id`` (the
    caller leaves a COMPACT snapshot's entries alone: their rows already carry the ids they were read with)."""
    return tuple(_stamped(e, snapshot_id) for e in entries)


def _stamped(entry: ManifestEntry, snapshot_id: int) -> ManifestEntry:
    if entry.kind is not FileKind.ADD:
        return entry
    file = replace(entry.file, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
    return replace(entry, file=file)
