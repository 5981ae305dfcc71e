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

    A dynamic-bucket writer assigned its new keys from the HASH files of ``base`` (the snapshot it
    restored, or the one its APPEND was re-routed onto: ``commit/reroute.py``). If another commit
    changed any HASH file of a partition this commit re-indexes since, the commit must not publish.
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
    changed = sorted({bucket for (_, bucket), _ in set(before.items()) ^ set(now.items())})
    return [
        f"the HASH index of bucket(s) {changed} of a partition this commit writes changed since the "
        "writer's keys were routed by it: another writer placed new keys there, and the HASH files this "
        "commit would publish do not include them, so one key could end up in two buckets. Nothing was "
        "published: run the write again (it places its keys by the new index)"
    ]
