"""A write's compaction of its own level-0 files, redone after a lost race, drops the buckets where
another commit has compacted those files meanwhile: what is left there belongs to other writers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.commit.compaction import compact_and_publish
from lsmlake.commit.publish import holds_level0
from lsmlake.compact.executors import Compacted, local_executor
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.restore import BucketKey, RestoredState

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string())])


def rows(keys: list[int], value: str) -> pa.Table:
    return pa.table({"k": keys, "a": [value] * len(keys)}, schema=SCHEMA)


@pytest.mark.parametrize("only_own_files", [True, False])
def test_buckets_whose_level_0_files_another_commit_compacted_are_not_redone(
    tmp_path: Path, only_own_files: bool
) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"}
    )
    write_only = t.with_options({"write-only": "true"})
    write_only.write(rows([1, 2, 3], "x"))
    write_only.write(rows([3, 4], "y"))  # this write's level-0 files, still to compact
    restored = RestoredState.load(t.io, t.paths, t.latest_snapshot())
    (bucket,) = restored.buckets()
    ours = {e.file.file_name for e in restored.entries(*bucket) if e.file.level == 0}
    rounds: list[int] = []

    def compact(state: RestoredState, buckets: Sequence[BucketKey]) -> Compacted:
        out = local_executor(t, False)(state, buckets)
        if not rounds:  # meanwhile another writer compacts the bucket, and a third appends to it
            t.compact(full=True)
            write_only.write(rows([9], "z"))
        rounds.append(len(out))
        return out

    sid = compact_and_publish(
        t,
        restored,
        [bucket],
        compact,
        still_needed=(lambda state, b: holds_level0(state, b, ours)) if only_own_files else None,
    )
    latest = t.latest_snapshot()
    assert latest is not None
    level0 = [e.file.file_name for e in live_entries(t.io, t.paths, latest) if e.file.level == 0]
    if only_own_files:
        assert sid is None and rounds == [1]  # nothing of this write's left to compact
        assert len(level0) == 1 and level0[0] not in ours  # the third writer's file, left to it
    else:
        assert sid == latest.id and rounds == [1, 1]  # compacted again: the third writer's file too
        assert level0 == []
    assert {
        r["k"]: r["a"] for r in t.with_options({"deletion-vectors.merge-on-read": "true"}).read().to_pylist()
    } == {1: "x", 2: "x", 3: "y", 4: "y", 9: "z"}
    orphans = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True)
    assert orphans == []  # the first round's files were deleted
