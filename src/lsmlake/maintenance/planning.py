"""Pure planning for expiration, rollback, tag deletion and orphan cleaning: sets of paths in, paths out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

_EMPTY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FileSets:
    """Paths grouped by kind; what an operation deletes (or would delete)."""

    data_files: frozenset[str] = _EMPTY
    """Data files and their extra files (`_EXTRA_FILES`)."""
    changelog_files: frozenset[str] = _EMPTY
    manifest_files: frozenset[str] = _EMPTY
    """Manifest lists, manifests and index manifests."""
    index_files: frozenset[str] = _EMPTY
    statistics_files: frozenset[str] = _EMPTY

    def all(self) -> frozenset[str]:
        return (
            self.data_files
            | self.changelog_files
            | self.manifest_files
            | self.index_files
            | self.statistics_files
        )

    def minus(self, paths: AbstractSet[str]) -> FileSets:
        return FileSets(
            self.data_files - paths,
            self.changelog_files - paths,
            self.manifest_files - paths,
            self.index_files - paths,
            self.statistics_files - paths,
        )

    def __len__(self) -> int:
        return len(self.all())


@dataclass(frozen=True)
class SnapshotFiles:
    """The files one snapshot (or tag) references, as paths; optional parts are None when not collected."""

    snapshot_id: int
    manifest_files: frozenset[str] = _EMPTY
    """Its manifest lists, the manifests they list, and its index manifest."""
    index_files: frozenset[str] = _EMPTY
    statistics_files: frozenset[str] = _EMPTY
    delta_added: frozenset[str] = _EMPTY
    """Data files ADDed by its delta manifests."""
    delta_deleted: frozenset[str] = _EMPTY
    """Data files DELETEd by its delta manifests and not re-added there (a level upgrade keeps the file)."""
    changelog_files: frozenset[str] = _EMPTY
    live: frozenset[str] | None = None
    """Data files live in the snapshot (ADD minus DELETE over all its manifests)."""
    mentioned: frozenset[str] | None = None
    """Every data or changelog file any of its manifests names, ADD or DELETE (orphan cleaning)."""

    def metadata(self) -> frozenset[str]:
        return self.manifest_files | self.index_files | self.statistics_files


@dataclass(frozen=True)
class Protection:
    """What must survive: an anchor snapshot's live files, later deltas, and whole tags/branches."""

    anchor: SnapshotFiles | None
    """The earliest retained snapshot (its live files are protected)."""
    later: Sequence[SnapshotFiles] = ()
    """Retained snapshots after the anchor (their metadata, delta ADDs and changelog are protected)."""
    holders: Sequence[SnapshotFiles] = field(default_factory=tuple)
    """Tags and branch snapshots: their metadata and live files are protected."""

    def paths(self) -> frozenset[str]:
        out: set[str] = set()
        retained = ([self.anchor] if self.anchor is not None else []) + list(self.later)
        for s in retained:
            out |= s.metadata() | s.delta_added | s.changelog_files
        if self.anchor is not None:
            out |= _live(self.anchor)
        for h in self.holders:
            out |= h.metadata() | _live(h)
        return frozenset(out)


def _live(s: SnapshotFiles) -> frozenset[str]:
    if s.live is None:
        raise ValueError(f"the live files of snapshot {s.snapshot_id} were not collected")
    return s.live


def _union(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    out: set[str] = set()
    for s in sets:
        out |= s
    return frozenset(out)


# --------------------------------------------------------------------------- expiration


def expire_end(
    *,
    earliest: int,
    latest: int,
    retain_min: int,
    retain_max: int,
    max_deletes: int,
    older_than_ms: int,
    snapshot_times: Mapping[int, int],
    consumer_min_next: int | None = None,
) -> int:
    """The exclusive end of the range ``[earliest, end)`` to expire (``ExpireSnapshotsImpl.expire``).

    ``snapshot_times`` maps ids to commit times (ids missing from it are skipped). A snapshot
    expires only once its successor is older than ``older_than_ms``; ``retain_max`` forces
    expiry regardless of time, ``retain_min``, consumers and ``max_deletes`` cap it.
    """
    if retain_min < 1:
        raise ValueError(f"retain_min must be at least 1, got {retain_min}")
    if retain_max < retain_min:
        raise ValueError(f"retain_max ({retain_max}) must not be less than retain_min ({retain_min})")
    if max_deletes < 1:
        raise ValueError(f"max_deletes must be at least 1, got {max_deletes}")
    low = max(latest - retain_max + 1, earliest)
    max_exclusive = latest - retain_min + 1
    if consumer_min_next is not None:
        max_exclusive = min(max_exclusive, consumer_min_next)
    max_exclusive = min(max_exclusive, earliest + max_deletes)
    for sid in range(low, max_exclusive):
        following = snapshot_times.get(sid + 1)
        if following is not None and older_than_ms <= following:
            return max(sid, earliest)
    return max(max_exclusive, earliest)


def expire_candidates(expiring: Sequence[SnapshotFiles], end: SnapshotFiles) -> FileSets:
    """Files the expired snapshots ``[begin, end)`` may free, before protection is subtracted.

    Data files: DELETE entries of the deltas of ``[begin, end]`` (a file deleted by snapshot k
    is not live from k on). Changelog and metadata: everything the expired snapshots reference.
    """
    return FileSets(
        data_files=_union(s.delta_deleted for s in [*expiring, end]),
        changelog_files=_union(s.changelog_files for s in expiring),
        manifest_files=_union(s.manifest_files for s in expiring),
        index_files=_union(s.index_files for s in expiring),
        statistics_files=_union(s.statistics_files for s in expiring),
    )


def removal_candidates(removed: Sequence[SnapshotFiles]) -> FileSets:
    """Files that rolled-back snapshots reference: their delta ADDs, and the live files of those
    whose live set was collected (the oldest removed one, whose files may predate every delta
    that is left when the history before it has expired)."""
    return FileSets(
        data_files=_union(s.delta_added | (s.live or _EMPTY) for s in removed),
        changelog_files=_union(s.changelog_files for s in removed),
        manifest_files=_union(s.manifest_files for s in removed),
        index_files=_union(s.index_files for s in removed),
        statistics_files=_union(s.statistics_files for s in removed),
    )


def tag_candidates(tag: SnapshotFiles) -> FileSets:
    """Files a deleted tag kept alive: its live data files and its metadata."""
    return FileSets(
        data_files=_live(tag),
        manifest_files=tag.manifest_files,
        index_files=tag.index_files,
        statistics_files=tag.statistics_files,
    )


def plan_deletion(candidates: FileSets, protection: Protection) -> FileSets:
    """Candidates minus every protected path."""
    return candidates.minus(protection.paths())


# --------------------------------------------------------------------------- orphans


def orphan_files(
    listed: Iterable[tuple[str, int]], used: AbstractSet[str], *, older_than_ms: int
) -> list[str]:
    """Listed ``(path, modification ms)`` not in ``used`` and older than the threshold, sorted."""
    return sorted(path for path, mtime in listed if path not in used and mtime < older_than_ms)
