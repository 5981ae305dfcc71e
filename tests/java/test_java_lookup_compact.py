"""lookup-compact on a deletion-vector table, Java Paimon and lsmlake writing the same batches: radical
compacts level 0 up in every write, gentle leaves it until universal compaction picks it (a batch writer
never reaches max-interval), and both sides then read the same rows (level 0 unseen)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _batch(g: int) -> pa.Table:
    ids = list(range(g * 3, g * 3 + 10))
    return pa.table({"id": pa.array(ids, pa.int32()), "v": pa.array([g * 100 + i for i in ids], pa.int64())})


@pytest.mark.parametrize("mode", ["radical", "gentle"])
def test_lookup_compact_mode_leaves_the_same_levels(
    mode: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    options = {
        "bucket": "1",
        "deletion-vectors.enabled": "true",
        "lookup-compact": mode,
        "num-sorted-run.compaction-trigger": "3",
    }
    ours = catalog.create_table("db.ours", schema=SCHEMA, primary_key=["id"], options=options)
    catalog.create_table("db.java", schema=SCHEMA, primary_key=["id"], options=options)
    level0_seen = False
    for g in range(5):
        ours.write(_batch(g))
        java_paimon.write(warehouse, "db.java", [{"_kind": "+I", **r} for r in arrow_rows(_batch(g))])
        our_levels = sorted(r["level"] for r in catalog.get_table("db.ours$files").read().to_pylist())
        java_levels = sorted(int(r["level"]) for r in java_paimon.files(warehouse, "db.java"))
        assert our_levels == java_levels, f"{mode}, write {g}"
        level0_seen |= 0 in our_levels
        rows = sort_rows(arrow_rows(ours.read()), ["id"])
        assert sort_rows(java_rows(java_paimon.read(warehouse, "db.java")), ["id"]) == rows
        assert sort_rows(java_rows(java_paimon.read(warehouse, "db.ours")), ["id"]) == rows
    assert level0_seen == (mode == "gentle")  # radical never leaves level 0; gentle does here
