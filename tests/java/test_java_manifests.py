"""Java Paimon reads a table after lsmlake's compact_manifest, at the new snapshot and the one before."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake

pytestmark = pytest.mark.java


def test_java_reads_after_compact_manifest(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])
    t = catalog.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "2"})
    for i in range(5):
        t.write(pa.table({"id": pa.array([i, i + 10], pa.int32()), "v": [f"v{i}", "x"]}))
    java_paimon.write(warehouse, "db.t", [{"id": 1, "v": "java"}])
    assert t.compact_manifests() is not None
    ours = sort_rows(arrow_rows(t.read()), ["id"])
    assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"]) == ours
    java_paimon.write(warehouse, "db.t", [{"id": 2, "v": "after"}])  # Java commits on top of it
    assert sort_rows(arrow_rows(t.read()), ["id"]) == sort_rows(
        java_rows(java_paimon.read(warehouse, "db.t")), ["id"]
    )
