"""A write whose own compaction loses a race stays committed: a fresh compaction takes its place, and
the dropped one leaves no files."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.commit.committer import FileStoreCommit
from lsmlake.errors import CommitConflictError
from lsmlake.metadata.commit_message import CommitMessage

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def no_orphans(t: lsmlake.Table) -> bool:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


@pytest.mark.parametrize(
    "extra",
    [{"deletion-vectors.enabled": "true"}, {"full-compaction.delta-commits": "1"}],
    ids=["deletion-vectors", "full-compaction-every-commit"],
)
def test_write_stands_when_its_compaction_loses_a_race(tmp_path: Path, extra: dict[str, str]) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", **extra})
    t.write(rows(range(0, 50), "a"))
    t.write(rows(range(25, 75), "b"))
    rival = lsmlake.Catalog(str(tmp_path / "wh")).get_table("db.t")

    writer = t.writer()
    writer.write(rows(range(60, 90), "c"))  # restores the bucket as it is now
    rival.compact(full=True)  # another process rewrites those files before the writer commits
    sid = writer.commit()  # APPEND lands; its compaction conflicts, a fresh compaction replaces it

    assert sid is not None and writer.snapshot_ids[0] < sid
    assert t.snapshot(writer.snapshot_ids[0]).commit_kind == "APPEND"
    assert t.snapshot(sid).commit_kind == "COMPACT"
    assert all(f.level > 0 for s in t.scan().splits() for f in s.files)  # the new rows left level 0
    expected = (
        {k: "a" for k in range(0, 25)} | {k: "b" for k in range(25, 60)} | {k: "c" for k in range(60, 90)}
    )
    got = t.read().to_pylist()
    assert {r["k"]: r["v"][0] for r in got} == expected and len(got) == len(expected)
    assert no_orphans(t)  # the dropped compaction's files were deleted


def test_write_stands_with_a_warning_when_every_compaction_loses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {"bucket": "1", "deletion-vectors.enabled": "true"}
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
    t.write(rows(range(0, 10), "a"))
    original = FileStoreCommit.commit

    def compactions_conflict(self: FileStoreCommit, messages: Sequence[CommitMessage]) -> list[int]:
        if any(m.compact_before or m.compact_after for m in messages):
            raise CommitConflictError("simulated: another writer rewrote the bucket")
        return original(self, messages)

    monkeypatch.setattr(FileStoreCommit, "commit", compactions_conflict)
    with pytest.warns(UserWarning, match="compaction lost a race"):
        sid = t.write(rows(range(5, 15), "b"))
    monkeypatch.undo()
    assert sid is not None and t.snapshot(sid).commit_kind == "APPEND"
    assert no_orphans(t)
    t.compact()  # a later compaction takes the level-0 file up: the rows become visible
    assert {r["k"]: r["v"][0] for r in t.read().to_pylist()} == {k: "a" if k < 5 else "b" for k in range(15)}
