"""`data-file.path-directory`: writers, compactions, readers and maintenance agree on where data lives."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("v", pa.int64()),
    ]
)


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_data_files_live_under_the_data_directory(tmp_path: Path, bucket: str) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {"bucket": bucket, "deletion-vectors.enabled": "true", "data-file.path-directory": "data"}
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "k"], partition_keys=["dt"], options=options
    )
    model: dict[tuple[int, str], int] = {}
    for step in range(3):
        rows = [(step * 5 + i, "d1" if i % 2 == 0 else "d2", step) for i in range(20)]
        t.write(
            pa.table(
                {"k": [r[0] for r in rows], "dt": [r[1] for r in rows], "v": [r[2] for r in rows]},
                schema=SCHEMA,
            )
        )
        model.update({(k, dt): v for k, dt, v in rows})
    t.compact(full=True)

    root = Path(t.root)
    tops = {p.relative_to(root).parts[0] for p in root.rglob("*.parquet")}
    assert tops == {"data"}  # no data file outside the data directory
    assert {(r["k"], r["dt"]): r["v"] for r in t.read().to_pylist()} == model
    listed = cat.get_table("db.t$files").read().column("file_path").to_pylist()
    assert listed and all("/data/dt=" in p for p in listed)
    t.expire_snapshots(retain_min=1, older_than_ms=2**62)
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    assert {(r["k"], r["dt"]): r["v"] for r in t.read().to_pylist()} == model
