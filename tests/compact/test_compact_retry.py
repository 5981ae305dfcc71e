"""A table compaction that loses a race redoes only the buckets another commit changed, and still
publishes one COMPACT snapshot; out of attempts it publishes nothing and leaves no files."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lsmlake
import lsmlake.commit.compaction as compaction
import lsmlake.compact.executors as executors
from lsmlake.errors import CommitConflictError
from lsmlake.table.compact import compact_table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _table(tmp_path: Path) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "2", "write-only": "true"}
    )
    for tag in "abc":
        t.write(pa.table({"k": list(range(40)), "v": [f"{tag}{k}" for k in range(40)]}, schema=SCHEMA))
    return t


def _no_orphans(t: lsmlake.Table) -> bool:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


def test_only_the_bucket_another_commit_changed_is_compacted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path)
    rival = lsmlake.Catalog(str(tmp_path / "wh")).get_table("db.t").with_options({"write-only": "false"})
    partition = t.scan().splits()[0].partition
    ours = t.with_options({"write-only": "false"})
    runs: list[int] = []
    compact_one, commit = executors._compact_one, compaction.commit_compaction

    def counting(table: Any, restored: Any, part: bytes, bucket: int, *, full: bool) -> Any:
        runs.extend([bucket] if table is ours else [])
        return compact_one(table, restored, part, bucket, full=full)

    def rival_first(table: Any, messages: Any, user: Any, **kw: Any) -> Any:
        if table is ours and len(runs) == 2:  # our first attempt: another process compacts bucket 0 first
            compact_table(rival, full=True, only={(partition, 0)})
        return commit(table, messages, user, **kw)

    monkeypatch.setattr(executors, "_compact_one", counting)
    monkeypatch.setattr(compaction, "commit_compaction", rival_first)
    before = t.latest_snapshot()
    assert before is not None
    sid = ours.compact(full=True)

    assert sorted(runs) == [0, 0, 1]  # bucket 1's first compaction was kept, bucket 0 was redone
    assert sid == before.id + 2  # the rival's snapshot, then ours: one COMPACT for both buckets
    assert t.snapshot(sid).commit_kind == "COMPACT"
    assert all(f.level > 0 for s in t.scan().splits() for f in s.files)
    got = t.read().to_pylist()
    assert sorted((r["k"], r["v"]) for r in got) == [(k, f"c{k}") for k in range(40)]
    assert _no_orphans(t)


def test_out_of_attempts_nothing_is_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    before = t.latest_snapshot()

    def always_conflicts(table: Any, messages: Any, user: Any, **kw: Any) -> Any:
        raise CommitConflictError("simulated: another writer keeps winning")

    monkeypatch.setattr(compaction, "commit_compaction", always_conflicts)
    with pytest.raises(CommitConflictError, match="nothing was published"):
        t.with_options({"write-only": "false"}).compact(full=True)
    assert t.latest_snapshot() == before
    assert _no_orphans(t)
