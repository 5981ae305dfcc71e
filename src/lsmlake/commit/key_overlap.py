"""Which keys of a cross-partition upsert another writer wrote since the upsert's base snapshot.

A cross-partition upsert places each key by where the key lived in its base snapshot (the global
index). Another writer's commit since then leaves every key it did not write where it was, so the
upsert can be rebased like any other when the two wrote disjoint keys; a key both wrote may have been
moved to, or created in, another partition by the other writer, and then the upsert is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NoReturn

import pyarrow as pa
import pyarrow.parquet as pq

from lsmlake.commit.rebase import FileRebaser, read_whole_file
from lsmlake.errors import CommitConflictError
from lsmlake.mergetree.kv_layout import KEY_PREFIX
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.manifest import FileKind, read_manifest
from lsmlake.metadata.manifest_list import read_manifest_list
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager

Located = Iterable[tuple[bytes, int, DataFileMeta]]  # (partition, bucket, file)


class KeyReader:
    """Reads the distinct primary keys (``_KEY_*`` columns) of data files of one table."""

    def __init__(self, rebaser: FileRebaser) -> None:
        self.rebaser = rebaser
        self.names = [KEY_PREFIX + k for k in rebaser.schema.trimmed_primary_keys]

    def distinct(self, files: Located) -> pa.Table | None:
        """The distinct keys of ``files`` (None when there are none)."""
        parts = []
        for partition, bucket, meta in files:
            path = self.rebaser.path_of(self.rebaser.bucket_dir(partition, bucket), meta)
            if meta.file_name.endswith(".parquet"):
                with self.rebaser.io.open_input_file(path) as source:
                    parts.append(pq.read_table(source, columns=self.names))
            else:
                parts.append(read_whole_file(self.rebaser.io, path).select(self.names))
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return None
        schema = parts[0].schema
        return pa.concat_tables([p.cast(schema) for p in parts]).group_by(self.names).aggregate([])


def shared_keys(mine: pa.Table | None, theirs: pa.Table | None) -> pa.Table | None:
    """The keys of ``mine`` that ``theirs`` also holds (None when there are none)."""
    if mine is None or theirs is None:
        return None
    names = mine.column_names
    shared = mine.join(theirs.select(names).cast(mine.schema), names, join_type="left semi")
    return shared if shared.num_rows else None


class KeysSinceBase:
    """The keys of a cross-partition upsert that another commit since its base snapshot also wrote."""

    def __init__(
        self,
        reader: KeyReader,
        snapshots: SnapshotManager,
        table_name: str,
        *,
        unplaced: pa.Table | None = None,
    ) -> None:
        """``unplaced``: keys the upsert deleted although no partition held them (no file has them)."""
        self.reader, self.snapshots, self.table_name = reader, snapshots, table_name
        self.unplaced = unplaced
        self._added: dict[int, pa.Table | None] = {}  # the keys each snapshot wrote
        self._buckets: dict[int, set[tuple[bytes, int]]] = {}  # ... and the buckets it added files to
        self._mine: tuple[pa.Table | None] | None = None
        self.touched_since_base: set[tuple[bytes, int]] = set()  # as of the last ``shared`` call

    def shared(
        self, latest: Snapshot, base: int | None, messages: Sequence[CommitMessage]
    ) -> tuple[pa.Table | None, tuple[int, ...]]:
        """The messages' keys that a snapshot after ``base`` up to ``latest`` wrote (None: none), and
        which snapshots wrote data; raises CommitConflictError if one overwrote data or has expired
        (which keys it wrote is then unknown)."""
        first = base + 1 if base is not None else latest.id + 1
        for sid in range(first, latest.id + 1):
            self._load(sid, base)
        writers = [sid for sid in range(first, latest.id + 1) if sid in self._buckets]  # not compactions
        self.touched_since_base = set().union(*(self._buckets[sid] for sid in writers))
        theirs = [k for sid in writers if (k := self._added[sid]) is not None]
        if not theirs:
            return None, tuple(writers)
        if self._mine is None:
            mine = self.reader.distinct((m.partition, m.bucket, f) for m in messages for f in m.new_files)
            if self.unplaced is not None and self.unplaced.num_rows:
                extra = self.unplaced.select(self.reader.names)
                both = [extra] if mine is None else [mine, extra.cast(mine.schema)]
                mine = pa.concat_tables(both).group_by(self.reader.names).aggregate([])
            self._mine = (mine,)
        schema = theirs[0].schema
        return shared_keys(self._mine[0], pa.concat_tables([t.cast(schema) for t in theirs])), tuple(writers)

    def refuse(self, shared: pa.Table, base: int | None) -> NoReturn:
        sample = ", ".join(str(tuple(r.values())) for r in shared.slice(0, 3).to_pylist())
        raise CommitConflictError(
            f"table {self.table_name}: {shared.num_rows} key(s) of this cross-partition upsert "
            f"(e.g. {sample}) were also written by another commit after this writer's base snapshot "
            f"{base}: the upsert placed them by where they lived in the base, and with this merge engine "
            "(or a sequence field) lsmlake cannot move its rows to where the other writer put them, so one "
            "key could be live in two partitions. Nothing was published: run the write again (it places "
            "its keys by the latest snapshot); concurrent writers of disjoint keys are not refused, nor "
            "deduplicate upserts of the same keys"
        )

    def _load(self, sid: int, base: int | None) -> None:
        """The distinct keys snapshot ``sid`` wrote and the buckets it added files to (none for a
        compaction, which moves no key)."""
        if sid not in self._added:
            if not self.snapshots.snapshot_exists(sid):
                raise CommitConflictError(
                    f"table {self.table_name}: snapshot {sid}, committed after this cross-partition "
                    f"upsert's base snapshot {base}, has expired, so which keys it wrote is unknown - retry"
                )
            snapshot = self.snapshots.snapshot(sid)
            if snapshot.commit_kind == "OVERWRITE":
                raise CommitConflictError(
                    f"table {self.table_name}: snapshot {sid} overwrote data after this cross-partition "
                    f"upsert's base snapshot {base}; the upsert placed its keys by the base's key index - "
                    "retry"
                )
            keys = None
            if snapshot.commit_kind != "COMPACT":
                io, paths = self.reader.rebaser.io, self.reader.rebaser.paths
                metas = read_manifest_list(io, paths.manifest(snapshot.delta_manifest_list))
                added = [
                    e
                    for m in metas
                    for e in read_manifest(io, paths.manifest(m.file_name))
                    if e.kind == FileKind.ADD
                ]
                keys = self.reader.distinct((e.partition, e.bucket, e.file) for e in added)
                self._buckets[sid] = {(e.partition, e.bucket) for e in added}
            self._added[sid] = keys
