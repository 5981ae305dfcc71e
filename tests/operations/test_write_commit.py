"""A write whose own compaction loses a race stays committed; the dropped compaction leaves no files."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.operations.commit import FileStoreCommit
from lsmlake.operations.commit_message import CommitMessage

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


@pytest.mark.parametrize(
    "extra",
    [{"deletion-vectors.enabled": "true"}, {"full-compaction.delta-commits": "1"}],
    ids=["deletion-vectors", "full-compaction-every-commit"],
)
def test_write_stands_when_its_compaction_loses_a_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: dict[str, str]
) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {"bucket": "1", **extra}
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
    t.write(rows(range(0, 50), "a"))
    t.write(rows(range(25, 75), "b"))
    rival = lsmlake.Catalog(str(tmp_path / "wh")).get_table("db.t")

    original = FileStoreCommit.commit
    raced: list[int] = []

    def commit_then_race(self: FileStoreCommit, messages: Sequence[CommitMessage]) -> list[int]:
        ids = original(self, messages)
        if not raced and any(m.new_files for m in messages):  # right after the APPEND snapshot
            raced.append(1)
            rival.compact(full=True)  # another process rewrites the bucket meanwhile
        return ids

    monkeypatch.setattr(FileStoreCommit, "commit", commit_then_race)
    with pytest.warns(UserWarning, match="compaction lost a race"):
        sid = t.write(rows(range(60, 90), "c"))
    monkeypatch.undo()

    kinds = [s.commit_kind for s in (t.snapshot(i) for i in range(1, t.latest_snapshot().id + 1))]
    assert t.snapshot(sid).commit_kind == "APPEND" and kinds[-1] == "COMPACT"  # the rival's compaction
    expected = (
        {k: "a" for k in range(0, 25)} | {k: "b" for k in range(25, 60)} | {k: "c" for k in range(60, 90)}
    )
    got = t.read().to_pylist()
    assert {r["k"]: r["v"][0] for r in got} == expected and len(got) == len(expected)
    # the dropped compaction's files were deleted: nothing is left for orphan cleaning
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    t.write(rows(range(0, 5), "d"))  # and the next write compacts as usual
    assert {r["k"]: r["v"] for r in t.read(filter="k < 5").to_pylist()} == {k: f"d{k}" for k in range(5)}
