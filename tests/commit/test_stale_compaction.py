"""A compaction computed before another writer deleted rows by deletion vector, on files that are still
live, must not publish: it rewrote rows that are now deleted. It is refused and redone from the latest."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.commit.compaction import commit_compaction
from lsmlake.compact.executors import (
    BucketCompactor,
    Compacted,
    delete_unpublished,
    local_executor,
    register_executor,
)
from lsmlake.errors import CommitConflictError
from lsmlake.metadata.restore import BucketKey, RestoredState
from lsmlake.metadata.table_handle import TableHandle

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string())])
KEYS = pa.schema([pa.field("k", pa.int64(), nullable=False)])


def dv_table(root: Path) -> lsmlake.Table:
    """One bucket, deletion vectors: keys 1-4 on the max level, 5-6 on the level below (no DV yet)."""
    cat = lsmlake.Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"}
    )
    t.write(pa.table({"k": [1, 2, 3, 4], "a": ["x"] * 4}, schema=SCHEMA))
    t.write(pa.table({"k": [5, 6], "a": ["y"] * 2}, schema=SCHEMA))
    latest = t.latest_snapshot()
    assert latest is not None
    assert not RestoredState.load(t.io, t.paths, latest).dv_index  # the stale compaction sees no DV
    return t


def keys(t: lsmlake.Table) -> list[int]:
    return sorted(int(r["k"]) for r in t.read().to_pylist())


def delete_during_first_compaction(other: lsmlake.Table, name: str) -> list[int]:
    """An executor that lets another writer delete key 1 (by deletion vector) after its first
    compaction was computed and before it is committed; returns the list of compaction rounds."""
    rounds: list[int] = []

    def executor(table: TableHandle, full: bool) -> BucketCompactor:
        local = local_executor(table, full)

        def compact(restored: RestoredState, buckets: Sequence[BucketKey]) -> Compacted:
            out = local(restored, buckets)
            if not rounds:
                other.delete(pa.table({"k": [1]}, schema=KEYS))
            rounds.append(len(out))
            return out

        return compact

    register_executor(name, executor)
    return rounds


def test_a_stale_table_compaction_does_not_bring_back_a_row_deleted_by_deletion_vector(
    tmp_path: Path,
) -> None:
    t = dv_table(tmp_path)
    other = lsmlake.Catalog(str(tmp_path)).get_table("db.t")  # another writer of the same bucket
    assert isinstance(other, lsmlake.Table)
    rounds = delete_during_first_compaction(other, "delete-during-first-compaction")
    sid = t.compact(full=True, executor="delete-during-first-compaction")
    assert keys(t) == [2, 3, 4, 5, 6]
    assert len(rounds) == 2  # the first compaction was refused and computed again from the latest
    assert sid is not None and t.snapshot(sid).commit_kind == "COMPACT"
    live = RestoredState.load(t.io, t.paths, t.latest_snapshot())
    named = {ie.data_file_name for ix in live.dv_index.values() for ie in ix.dv_ranges or ()}
    assert named <= {e.file.file_name for es in live.files.values() for e in es}  # no DV of a dead file


def test_the_commit_of_a_stale_compaction_names_the_deletion_vector(tmp_path: Path) -> None:
    t = dv_table(tmp_path)
    base = RestoredState.load(t.io, t.paths, t.latest_snapshot())
    stale = local_executor(t, True)(base, base.buckets())
    t.delete(pa.table({"k": [1]}, schema=KEYS))  # another writer: a DV on a file the compaction read
    read = (base.dv_index, f"snapshot {base.snapshot.id if base.snapshot else 0}")
    with pytest.raises(CommitConflictError, match=r"deletion vector of .* changed after the compaction read"):
        commit_compaction(t, [m for m, _ in stale.values()], read_dvs=read)
    for _, files in stale.values():
        delete_unpublished(t, files)
    assert keys(t) == [2, 3, 4, 5, 6]
