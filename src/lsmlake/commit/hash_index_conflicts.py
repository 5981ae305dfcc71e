"""Conflict check for HASH index changes: a writer re-indexes only partitions nobody re-indexed since."""

from __future__ import annotations

from collections.abc import Sequence

from lsmlake.metadata.index_manifest import HASH_INDEX, IndexManifestEntry


def hash_index_conflicts(
    base: Sequence[IndexManifestEntry],
    latest: Sequence[IndexManifestEntry],
    changes: Sequence[IndexManifestEntry],
) -> list[str]:
    """Reasons the HASH changes cannot apply (empty when they can).

    A dynamic-bucket writer assigned its new keys from the HASH files of the snapshot it restored
    (``base``). If another commit changed any HASH file of a partition this commit re-indexes, that
    writer may have put one of the same keys into another bucket, so the commit must be retried.
    """
    touched = {e.partition for e in changes if e.index_file.index_type == HASH_INDEX}
    if not touched:
        return []

    def view(entries: Sequence[IndexManifestEntry]) -> dict[tuple[bytes, int], str]:
        return {
            (e.partition, e.bucket): e.index_file.file_name
            for e in entries
            if e.index_file.index_type == HASH_INDEX and e.partition in touched
        }

    before, now = view(base), view(latest)
    if before == now:
        return []
    changed = sorted({b for (_, b) in set(before.items()) ^ set(now.items())})
    return [
        f"the HASH index of bucket(s) {changed} of a partition this commit writes changed since the "
        "writer restored it: another writer placed new keys there, and this write placed new keys too, "
        "by the older index, so one key could end up in two buckets (lsmlake does not yet move such rows "
        "into the other writer's bucket). Nothing was published: run the write again (it places its keys "
        "by the new index), or give concurrent writers of a dynamic-bucket table separate partitions, "
        "or use a fixed bucket count"
    ]
