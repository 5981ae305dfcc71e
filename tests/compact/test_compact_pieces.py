"""Compaction in bounded key-range pieces gives the same table as merging everything at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lsmlake
from lsmlake.compact import bucket_compactor as compact_module
from lsmlake.metadata.live_files import live_entries

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


@pytest.mark.parametrize(("dv", "external"), [("false", False), ("true", False), ("false", True)])
def test_piecewise_compaction_equals_the_model(
    catalog: lsmlake.Catalog, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dv: str, external: bool
) -> None:
    monkeypatch.setattr(compact_module, "MERGE_PIECE_ROWS", 20_000)
    pieces: list[int] = []
    original = compact_module.section_pieces
    monkeypatch.setattr(
        compact_module, "section_pieces", lambda *a, **k: pieces.append(1) or original(*a, **k)
    )
    options = {"bucket": "1", "deletion-vectors.enabled": dv, "target-file-size": "256 kb"}
    if external:  # files under an external root are cut into pieces alike
        options |= {
            "data-file.external-paths": f"file://{tmp_path / 'ext'}",
            "data-file.external-paths.strategy": "round-robin",
        }
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
    rng = np.random.default_rng(5)
    model: dict[int, int] = {}
    for commit in range(4):
        keys = rng.choice(200_000, 60_000, replace=False)
        t.write(pa.table({"k": keys, "v": np.full(len(keys), commit), "s": keys.astype(str)}, schema=SCHEMA))
        model.update(dict.fromkeys(keys.tolist(), commit))
        gone = rng.choice(200_000, 500, replace=False)
        t.delete(pa.table({"k": gone}, schema=pa.schema([("k", pa.int64())])))
        for k in gone.tolist():
            model.pop(k, None)
    t.compact(full=True)
    got = t.read(columns=["k", "v"])
    assert dict(zip(got.column("k").to_pylist(), got.column("v").to_pylist(), strict=True)) == model
    files = [e.file for e in live_entries(t.io, t.paths, t.latest_snapshot())]
    assert len(files) > 1 and all(f.level == 5 and f.delete_row_count == 0 for f in files)
    if dv == "false":  # with deletion vectors, files moved up unchanged keep their masked rows
        assert sum(f.row_count for f in files) == len(model)
    assert pieces and all(bool(f.external_path) == external for f in files)


def test_piecewise_merge_on_read_equals_whole(
    catalog: lsmlake.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsmlake.read import split_read as read_module

    t = catalog.create_table(
        "db.m", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "write-only": "true"}
    )
    rng = np.random.default_rng(9)
    for commit in range(3):
        keys = rng.choice(100_000, 40_000, replace=False)
        t.write(pa.table({"k": keys, "v": np.full(len(keys), commit), "s": keys.astype(str)}, schema=SCHEMA))
    whole = t.read().sort_by("k")
    monkeypatch.setattr(read_module, "MERGE_PIECE_ROWS", 10_000)
    assert t.read().sort_by("k").equals(whole)
    flt = "v = 1 AND k < 50000"
    assert (
        t.read(filter=flt)
        .sort_by("k")
        .equals(whole.filter((pa.compute.field("v") == 1) & (pa.compute.field("k") < 50000)))
    )
