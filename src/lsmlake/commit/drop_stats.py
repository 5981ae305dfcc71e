"""``manifest.delete-file-drop-stats``: a compaction's entries for the files it read carry no value stats (Paimon
restores a writer's files without them, so its DELETE entries, and the ADD of a file a compaction only moved up a
level, are written without), which keeps manifests small; readers take entries with and without stats."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lsmlake.metadata.manifest import FileKind, ManifestEntry
from lsmlake.metadata.stats import EMPTY_STATS


def without_read_file_stats(entries: Sequence[ManifestEntry]) -> tuple[ManifestEntry, ...]:
    """A COMPACT commit's entries with the value stats of every file it read dropped (Paimon's
    DataFileMeta.copyWithoutStats: empty value stats and stats columns; key stats kept)."""
    read = {e.file.file_name for e in entries if e.kind is FileKind.DELETE}
    return tuple(
        replace(e, file=replace(e.file, value_stats=EMPTY_STATS, value_stats_cols=()))
        if e.file.file_name in read
        else e
        for e in entries
    )
