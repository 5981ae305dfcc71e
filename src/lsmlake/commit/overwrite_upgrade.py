"""``overwrite-upgrade``: an OVERWRITE that compacts nothing moves a bucket's new level-0 files to the top
level when their key ranges do not overlap (Paimon's FileStoreCommitImpl.tryUpgrade), so reads that skip
level 0 (deletion vectors, first-row) see the overwritten rows at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from lsmlake.core.types import DataType
from lsmlake.mergetree.interval_partition import KeyBounds
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.index_manifest import hash_index_files
from lsmlake.metadata.manifest import ManifestEntry


def compacts(messages: Sequence[CommitMessage]) -> bool:
    """Whether the messages carry compaction changes: rewritten files or deletion-vector index files."""
    return any(
        m.compact_before
        or m.compact_after
        or len(hash_index_files(m.new_index_files)) != len(m.new_index_files)
        or len(hash_index_files(m.deleted_index_files)) != len(m.deleted_index_files)
        for m in messages
    )


def upgraded(
    entries: Sequence[ManifestEntry], key_types: Sequence[DataType], max_level: int
) -> list[ManifestEntry]:
    """``entries`` (an OVERWRITE's added files) with each bucket's files at ``max_level`` when every file is
    at level 0 in a real bucket of a primary-key table and a bucket's files do not overlap by key."""
    if not key_types or any(e.file.level > 0 or e.bucket < 0 for e in entries):
        return list(entries)
    bounds = KeyBounds(key_types)
    buckets: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in entries:
        buckets.setdefault((e.partition, e.bucket), []).append(e)
    out: list[ManifestEntry] = []
    for group in buckets.values():
        ordered = sorted(group, key=lambda e: bounds.key(e.file.min_key))
        if any(bounds.key(a.file.max_key) >= bounds.key(b.file.min_key) for a, b in pairwise(ordered)):
            out.extend(group)
        else:
            out.extend(replace(e, file=e.file.upgrade(max_level)) for e in ordered)
    return out
