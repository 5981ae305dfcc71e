"""Orphan cleaning and snapshot expiry while a branch is renamed: the branch list they read went stale,
so they stop, deleting nothing, rather than take the renamed branch's files for unused ones."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import LsmlakeError
from lsmlake.maintenance import orphans, protect

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_a_branch_renamed_during_orphan_cleaning_keeps_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["main"]}, schema=SCHEMA))
    t.create_branch("b")
    cat.get_table("db.t$branch_b").write(pa.table({"id": [2], "v": ["only on the branch"]}, schema=SCHEMA))
    real = protect.branch_roots
    renamed = []

    def listed_then_renamed(io: object, root: str) -> list[str]:
        roots = real(io, root)  # type: ignore[arg-type]
        if not renamed:  # the rename lands right after the cleaner listed the branches
            renamed.append(True)
            t.rename_branch("b", "c")
        return roots

    monkeypatch.setattr(orphans, "branch_roots", listed_then_renamed)
    with pytest.raises(LsmlakeError, match="branches changed"):
        t.remove_orphan_files(older_than_ms=2**62)
    assert cat.get_table("db.t$branch_c").read().column("v").to_pylist() == ["only on the branch"]
    assert t.remove_orphan_files(older_than_ms=2**62) == []  # run again: the branch is seen as c


def test_a_branch_renamed_during_snapshot_expiry_keeps_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files of an expiring main snapshot that only a branch still uses survive a rename of that
    branch in the middle of the expiry."""
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["id"],
        options={"bucket": "1", "snapshot.num-retained.min": "1", "write-only": "true"},
    )
    t.write(pa.table({"id": [1], "v": ["kept by the branch"]}, schema=SCHEMA))
    t.create_tag("base")
    t.create_branch("b", tag="base")
    t.delete_tag("base")
    t.write(pa.table({"id": [1], "v": ["replaced on main"]}, schema=SCHEMA))
    t.compact(full=True)  # main no longer uses snapshot 1's data file; branch b does
    real = protect.branch_roots
    renamed = []

    def listed_then_renamed(io: object, root: str) -> list[str]:
        roots = real(io, root)  # type: ignore[arg-type]
        if not renamed:
            renamed.append(True)
            t.rename_branch("b", "c")
        return roots

    monkeypatch.setattr(protect, "branch_roots", listed_then_renamed)
    with pytest.raises(LsmlakeError, match="branches changed"):
        t.expire_snapshots(retain_max=1, older_than_ms=2**62)
    monkeypatch.setattr(protect, "branch_roots", real)
    assert cat.get_table("db.t$branch_c").read().column("v").to_pylist() == ["kept by the branch"]
    t.expire_snapshots(retain_max=1, older_than_ms=2**62)  # again, with the branch seen as c
    assert cat.get_table("db.t$branch_c").read().column("v").to_pylist() == ["kept by the branch"]
    assert t.read().column("v").to_pylist() == ["replaced on main"]
