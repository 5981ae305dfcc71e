"""Conflict detection for commits that delete or re-level files (pure: base entries + delta entries)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from lsmlake.core.types import DataType
from lsmlake.mergetree.interval_partition import KeyBounds
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import IndexFileMeta
from lsmlake.metadata.manifest import FileKind, ManifestEntry


def _fold(entries: Sequence[ManifestEntry]) -> dict[tuple[object, ...], ManifestEntry]:
    """Live files by identity: ADDs minus later DELETEs (lenient about DELETEs of unknown files)."""
    live: dict[tuple[object, ...], ManifestEntry] = {}
    for e in entries:
        if e.kind == FileKind.ADD:
            live[e.identifier()] = e
        else:
            live.pop(e.identifier(), None)
    return live


def detect_conflicts(
    base: Sequence[ManifestEntry], delta: Sequence[ManifestEntry], key_types: Sequence[DataType]
) -> list[str]:
    """Reasons the delta cannot apply on top of the base (empty when it can), as Paimon checks them.

    The base holds the live files of the touched buckets. A file the delta deletes must still be
    live; a file it adds must not be; every partition keeps one bucket count; and afterwards no
    two files of one level >= 1 of a bucket may overlap in key range.
    """
    live = _fold(base)
    problems = []
    for e in delta:
        ident = e.identifier()
        if e.kind == FileKind.DELETE:
            if ident not in live:
                problems.append(
                    f"file deletion conflicts detected: {e.file.file_name} (level {e.file.level}) "
                    "is no longer live; another commit removed it"
                )
            live.pop(ident, None)
        elif ident in live:
            problems.append(f"file {e.file.file_name} is already live; it cannot be added twice")
        else:
            live[ident] = e
    totals: dict[bytes, set[int]] = defaultdict(set)
    for e in live.values():
        if e.total_buckets > 0:
            totals[e.partition].add(e.total_buckets)
    problems += [
        f"total buckets of a partition changed without overwrite: {sorted(t)}"
        for t in totals.values()
        if len(t) > 1
    ]
    if key_types:
        problems += _lsm_overlaps(live.values(), key_types)
    return problems


def _lsm_overlaps(entries: Iterable[ManifestEntry], key_types: Sequence[DataType]) -> list[str]:
    bounds = KeyBounds(key_types)
    runs: dict[tuple[bytes, int, int], list[DataFileMeta]] = defaultdict(list)
    for e in entries:
        if e.file.level >= 1:
            runs[(e.partition, e.bucket, e.file.level)].append(e.file)
    problems = []
    for (_, bucket, level), files in runs.items():
        ordered = sorted(files, key=lambda f: bounds.key(f.min_key))
        for prev, nxt in itertools.pairwise(ordered):
            if not bounds.key(prev.max_key) < bounds.key(nxt.min_key):
                problems.append(
                    f"LSM conflicts detected: files {prev.file_name} and {nxt.file_name} overlap "
                    f"in level {level} of bucket {bucket}"
                )
    return problems


BucketTops = dict[tuple[bytes, int], int]


def bucket_tops(entries: Iterable[ManifestEntry]) -> BucketTops:
    """The highest sequence number of each (partition, bucket) among ``entries``."""
    tops: BucketTops = {}
    for e in entries:
        key = (e.partition, e.bucket)
        tops[key] = max(tops.get(key, -1), e.file.max_sequence_number)
    return tops


def sequence_problems(tops: BucketTops, delta: Iterable[ManifestEntry]) -> list[str]:
    """New primary-key files must carry sequence numbers above ``tops`` (what other commits gave
    their bucket): commit order is sequence order."""
    problems = []
    for e in delta:
        top = tops.get((e.partition, e.bucket), -1)
        if e.kind == FileKind.ADD and e.file.min_sequence_number <= top:
            problems.append(
                f"bucket {e.bucket}: the new file {e.file.file_name} starts at sequence number "
                f"{e.file.min_sequence_number}, but another commit reached {top} there"
            )
    return problems


DvIndexes = Mapping[tuple[bytes, int], IndexFileMeta]
DvSignature = tuple[str, int, int, int | None]


def _dv_signature(index: IndexFileMeta | None, data_file: str) -> DvSignature | None:
    """Where ``data_file``'s deletion vector is stored (None: it has none)."""
    dv = None if index is None else index.dv_map().get(data_file)
    if index is None or dv is None:
        return None
    return (index.file_name, dv.offset, dv.length, dv.cardinality)


def deletion_vector_problems(
    delta: Iterable[ManifestEntry], read: DvIndexes, latest: DvIndexes, *, read_snapshot: str
) -> list[str]:
    """A compaction rewrites the rows of its input files that their deletion vectors did not delete
    when it read them (``read``: the DV index file of each bucket then). If another commit has since
    given an input file a deletion vector (or changed it), the compaction would bring deleted rows
    back, even though its input files are all still live: Paimon attaches the DV file name to each
    file entry for the same reason."""
    problems = []
    for e in delta:
        if e.kind != FileKind.DELETE:
            continue
        key = (e.partition, e.bucket)
        before = _dv_signature(read.get(key), e.file.file_name)
        if before != _dv_signature(latest.get(key), e.file.file_name):
            problems.append(
                f"the deletion vector of {e.file.file_name} (bucket {e.bucket}) changed after the "
                f"compaction read it from {read_snapshot}: another commit deleted rows in that file, "
                "which the compaction would bring back"
            )
    return problems


def partition_totals(entries: Iterable[ManifestEntry]) -> dict[bytes, int]:
    """The bucket count of each partition the ADD entries of a fixed-bucket commit write (postponed and
    dynamic buckets, whose count is not fixed, left out)."""
    return {e.partition: e.total_buckets for e in entries if e.kind == FileKind.ADD and e.total_buckets > 0}


def bucket_count_problems(mine: Mapping[bytes, int], others: Iterable[ManifestEntry]) -> list[str]:
    """An APPEND's partitions (``mine``: partition -> its files' count) that other commits filled with
    files of another count (``others``: what they added since this writer's base, or the latest live
    files): its rows would sit next to them, a key in two buckets (two live rows) and a compaction
    merging two layouts as one bucket. Paimon's writers refuse such a partition when they open it; the
    count changed after this one opened it (an ALTER TABLE of `bucket` and a rescale meanwhile)."""
    for e in others:
        mine_total = mine.get(e.partition)
        if mine_total is not None and e.total_buckets > 0 and e.total_buckets != mine_total:
            return [
                f"another commit wrote a partition this write writes with {e.total_buckets} buckets "
                f"(a rescale or a write after ALTER TABLE of 'bucket') while this write placed its rows "
                f"by {mine_total} buckets; nothing was published: write the rows again"
            ]
    return []
