"""Orphan cleaning while a branch is renamed: the branch list it read went stale, so it stops rather
than take the renamed branch's data files for orphans."""

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
