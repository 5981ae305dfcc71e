"""Re-routing a dynamic-bucket APPEND that lost to another writer of the same partition.

Both writers placed their new keys by the HASH index of the snapshots they restored. When the other
writer got there first, a key hash it placed in bucket ``d`` and this writer placed in bucket ``b``
moves to ``d``: this write's rows of that key (data and input changelog) are rewritten out of ``b``'s
level-0 files into new level-0 files of ``d``. Each bucket's HASH index file becomes the latest one
plus the hashes this write keeps there, so every key hash sits in exactly one bucket's index and all
rows of a key in that bucket -- what the two commits run one after the other would have given. The
sequence numbers are then raised above the buckets' maxima by ``AppendRebase`` as for any rebase.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.commit.rebase import FileRebaser, shift_sequence
from lsmlake.core.bucket import hash_rows
from lsmlake.core.external_paths import IndexFileLocator
from lsmlake.core.path_guard import PathGuard
from lsmlake.mergetree.kv_layout import KEY_PREFIX, SEQUENCE_NUMBER
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.hash_index import Hashes, read_hash_index, write_hash_index
from lsmlake.metadata.index_manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry

BucketId = tuple[bytes, int]
HashView = dict[BucketId, str]  # the HASH index file name of each bucket


def hash_view(entries: Sequence[IndexManifestEntry], partitions: set[bytes]) -> HashView:
    """The HASH index file of each bucket of ``partitions`` among ``entries``."""
    return {
        (e.partition, e.bucket): e.index_file.file_name
        for e in entries
        if e.index_file.index_type == HASH_INDEX and e.partition in partitions
    }


def unique_sorted(values: Hashes) -> Hashes:
    return np.unique(values).astype(np.int32, copy=False)


def bucket_of(index_hashes: Hashes, index_buckets: Hashes, hashes: Hashes) -> Hashes:
    """The bucket ``index`` (sorted ``index_hashes``, aligned buckets) gives each hash; -1 if none."""
    out = np.full(len(hashes), -1, dtype=np.int32)
    if not len(index_hashes):
        return out
    pos = np.minimum(np.searchsorted(index_hashes, hashes), len(index_hashes) - 1)
    hit = index_hashes[pos] == hashes
    out[hit] = index_buckets[pos[hit]]
    return out


@dataclass
class _Moved:
    """Rows of one source file of this write that go to another bucket."""

    source_bucket: int
    meta: DataFileMeta
    rows: pa.Table
    changelog: bool


@dataclass
class DynamicReroute:
    """This write's APPEND messages re-routed onto the latest HASH index (recomputed when it changes).

    ``messages_for`` returns the originals while no other commit changed the HASH index of a partition
    this write re-indexes; otherwise messages whose moved rows and merged HASH files it wrote."""

    rebaser: FileRebaser
    originals: list[CommitMessage]
    current: list[CommitMessage] = field(init=False)
    basis: HashView | None = None  # the latest view ``current`` was computed on (None: the originals)
    written: list[str] = field(default_factory=list)  # files of ``current`` this object wrote
    targets: set[BucketId] = field(default_factory=set)  # buckets that received rows of another bucket
    moved_keys: int = 0  # key hashes that changed bucket in ``current``

    def __post_init__(self) -> None:
        self.current = list(self.originals)
        self.mine: dict[BucketId, IndexFileMeta] = {
            (m.partition, m.bucket): f
            for m in self.originals
            for f in m.new_index_files
            if f.index_type == HASH_INDEX
        }
        self.partitions = {p for p, _ in self.mine}
        schema = self.rebaser.schema
        self.key_names = [KEY_PREFIX + k for k in schema.trimmed_primary_keys]
        self.key_types = [schema.field(k).type for k in schema.trimmed_primary_keys]
        self.guard = PathGuard.of(self.rebaser.io, self.rebaser.paths.root, self.rebaser.options)
        self.index_files = IndexFileLocator(
            self.rebaser.io,
            self.rebaser.paths.index_file,
            self.rebaser.bucket_dir,
            self.rebaser.options,
            self.rebaser.paths.data_root,
        )

    def messages_for(
        self, base: Sequence[IndexManifestEntry] | None, latest: Sequence[IndexManifestEntry]
    ) -> list[CommitMessage]:
        """The messages to publish on top of a snapshot whose index entries are ``latest``; ``base``:
        those of the snapshot this write restored (None: unknown, e.g. expired)."""
        now = hash_view(latest, self.partitions)
        before = None if base is None else hash_view(base, self.partitions)
        changed = {p for p in self.partitions if before is None or _part(now, p) != _part(before, p)}
        if (self.basis == now and changed) or (self.basis is None and not changed):
            return self.current  # as computed before (the originals when nothing changed)
        self.discard()
        self.targets, self.moved_keys = set(), 0
        self.current = self._reroute(changed, latest) if changed else list(self.originals)
        self.basis = now if changed else None
        return self.current

    # -- the re-route itself
    def _reroute(self, partitions: set[bytes], latest: Sequence[IndexManifestEntry]) -> list[CommitMessage]:
        latest_files = {
            (e.partition, e.bucket): e.index_file
            for e in latest
            if e.index_file.index_type == HASH_INDEX and e.partition in partitions
        }
        index: dict[BucketId, IndexFileMeta | None] = {}  # the HASH file to publish (None: none)
        moving: dict[BucketId, tuple[Hashes, Hashes]] = {}  # sorted hashes leaving a bucket, their target
        self.targets, self.moved_keys = set(), 0
        for p in sorted(partitions):
            theirs = {b: self._hashes(meta, q, b) for (q, b), meta in latest_files.items() if q == p}
            all_hashes = np.concatenate([*theirs.values(), np.empty(0, np.int32)])
            all_buckets = np.concatenate(
                [*(np.full(len(h), b, np.int32) for b, h in theirs.items()), np.empty(0, np.int32)]
            )
            order = np.argsort(all_hashes, kind="stable")
            all_hashes, all_buckets = all_hashes[order], all_buckets[order]
            for (q, b), meta in sorted(self.mine.items()):
                if q != p:
                    continue
                mine = unique_sorted(self._hashes(meta, q, b))
                target = bucket_of(all_hashes, all_buckets, mine)
                away = (target >= 0) & (target != b)
                if away.any():
                    moving[(p, b)] = (mine[away], target[away])
                    self.targets |= {(p, int(d)) for d in np.unique(target[away]).tolist()}
                    self.moved_keys += int(away.sum())
                if b not in theirs and not away.any():
                    index[(p, b)] = meta  # nobody else indexed this bucket: this write's file stands
                    continue
                have = unique_sorted(theirs.get(b, np.empty(0, np.int32)))
                merged = np.union1d(have, mine[~away]).astype(np.int32)
                if b in theirs and len(merged) == len(have):
                    index[(p, b)] = None  # the latest file already holds every hash this write keeps
                else:
                    written, path = write_hash_index(
                        self.rebaser.io, self.rebaser.paths, merged, partial(self.index_files.new, p, b)
                    )
                    self.written.append(path)
                    index[(p, b)] = written
        return self._messages(index, moving)

    def _hashes(self, meta: IndexFileMeta, partition: bytes, bucket: int) -> Hashes:
        where = self.index_files.path(partition, bucket, meta.file_name, None)
        return read_hash_index(self.rebaser.io, self.rebaser.paths, meta, self.guard, where)

    def _messages(
        self, index: dict[BucketId, IndexFileMeta | None], moving: dict[BucketId, tuple[Hashes, Hashes]]
    ) -> list[CommitMessage]:
        moved: dict[BucketId, list[_Moved]] = defaultdict(list)
        out: list[CommitMessage] = []
        for m in self.originals:
            key = (m.partition, m.bucket)
            new_files, changelog = m.new_files, m.changelog_files
            if key in moving:
                hashes, targets = moving[key]
                new_files = self._split(m, m.new_files, hashes, targets, moved, changelog=False)
                changelog = self._split(m, m.changelog_files, hashes, targets, moved, changelog=True)
            index_files = m.new_index_files
            if key in index:
                published = index[key]
                others = tuple(f for f in index_files if f.index_type != HASH_INDEX)
                index_files = (*others, published) if published is not None else others
            out.append(
                replace(m, new_files=new_files, changelog_files=changelog, new_index_files=index_files)
            )
        totals = {m.partition: m.total_buckets for m in self.originals}
        for key in sorted(moved):
            files, changelog = self._receive(key, moved[key])
            at = next((i for i, m in enumerate(out) if (m.partition, m.bucket) == key), None)
            if at is None:
                out.append(
                    CommitMessage(key[0], key[1], totals[key[0]], new_files=files, changelog_files=changelog)
                )
            else:
                m = out[at]
                out[at] = replace(
                    m, new_files=(*m.new_files, *files), changelog_files=(*m.changelog_files, *changelog)
                )
        return [m for m in out if not m.is_empty]

    def _split(
        self,
        m: CommitMessage,
        files: Sequence[DataFileMeta],
        hashes: Hashes,
        targets: Hashes,
        moved: dict[BucketId, list[_Moved]],
        *,
        changelog: bool,
    ) -> tuple[DataFileMeta, ...]:
        """``files`` of bucket ``m`` without the rows whose key hash leaves it (those go to ``moved``)."""
        directory = self.rebaser.bucket_dir(m.partition, m.bucket)
        out: list[DataFileMeta] = []
        for f in files:
            rows = self.rebaser.read(directory, f)
            row_hashes = hash_rows([rows.column(k) for k in self.key_names], self.key_types)
            dest = bucket_of(hashes, targets, row_hashes)
            if not (dest >= 0).any():
                out.append(f)
                continue
            for d in np.unique(dest[dest >= 0]).tolist():
                part = rows.filter(pa.array(dest == d))
                moved[(m.partition, int(d))].append(_Moved(m.bucket, f, part, changelog))
            out += self._write(directory, f, rows.filter(pa.array(dest < 0)), changelog=changelog)
        return tuple(out)

    def _receive(
        self, key: BucketId, parts: list[_Moved]
    ) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]:
        """Level-0 files of bucket ``key`` holding rows moved there: the rows of each source bucket keep
        their order and come after this write's own rows of the bucket (the rebase then lifts them all
        above the bucket's maximum)."""
        own = [
            f.max_sequence_number
            for m in self.originals
            if (m.partition, m.bucket) == key
            for f in (*m.new_files, *m.changelog_files)
        ]
        next_free = max(own) + 1 if own else None
        directory = self.rebaser.bucket_dir(*key)
        files: list[DataFileMeta] = []
        changelog: list[DataFileMeta] = []
        for source in sorted({p.source_bucket for p in parts}):
            group = [p for p in parts if p.source_bucket == source]
            seqs = [pc.min_max(p.rows.column(SEQUENCE_NUMBER)).as_py() for p in group]
            low, high = min(s["min"] for s in seqs), max(s["max"] for s in seqs)
            shift = 0 if next_free is None else next_free - low
            for p in group:
                written = self._write(directory, p.meta, shift_sequence(p.rows, shift), changelog=p.changelog)
                (changelog if p.changelog else files).extend(written)
            next_free = high + shift + 1
        return tuple(files), tuple(changelog)

    def _write(
        self, directory: str, like: DataFileMeta, rows: pa.Table, *, changelog: bool
    ) -> list[DataFileMeta]:
        metas = self.rebaser.write_like(directory, like, rows, changelog=changelog) if rows.num_rows else []
        self.written += [self.rebaser.path_of(directory, meta) for meta in metas]
        return metas

    # -- files
    def superseded(self, published: Sequence[CommitMessage]) -> list[str]:
        """Files of the write (its own and this object's) that ``published`` does not reference."""
        names = {f.file_name for m in published for f in (*m.new_files, *m.changelog_files)}
        names |= {f.file_name for m in published for f in m.new_index_files}
        out = [
            self.index_files.path(p, b, meta.file_name, meta.external_path)
            for (p, b), meta in self.mine.items()
            if meta.file_name not in names
        ]
        for m in self.originals:
            directory = self.rebaser.bucket_dir(m.partition, m.bucket)
            out += [
                self.rebaser.path_of(directory, f) for f in (*m.new_files, *m.changelog_files) if f.file_name not in names
            ]
        return out + [p for p in self.written if posixpath.basename(p) not in names]

    def discard(self) -> None:
        """Delete every file this object wrote (the commit did not publish them)."""
        for path in self.written:
            self.rebaser.io.delete_file(path)
        self.written = []


def _part(view: HashView, partition: bytes) -> dict[int, str]:
    return {b: name for (p, b), name in view.items() if p == partition}
