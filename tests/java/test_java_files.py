"""Java Paimon's $files system table lists the same files, levels and counts as lsmlake's, on both sides' writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows

import lsmlake

pytestmark = pytest.mark.java

COLUMNS = ("bucket", "level", "record_count", "min_sequence_number", "max_sequence_number", "file_format")


def _files(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((Path(r["file_path"]).name, *(r[c] for c in COLUMNS)) for r in rows)


def test_files_agree_after_writes_and_compactions(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])
    table = catalog.create_table(
        "db.t", schema=schema, primary_key=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"}
    )
    table.write(pa.table({"id": pa.array(range(40), pa.int32()), "v": [f"a{i}" for i in range(40)]}))
    table.write(pa.table({"id": pa.array(range(0, 40, 3), pa.int32()), "v": ["b"] * 14}))
    table.compact(full=True)
    ours = arrow_rows(catalog.get_table("db.t$files").read())
    assert _files(java_paimon.files(warehouse, "db.t")) == _files(ours)

    java_paimon.write(warehouse, "db.t", [{"_kind": "+U", "id": i, "v": "j"} for i in range(0, 40, 5)])
    java_paimon.compact(warehouse, "db.t")
    java_paimon.write(warehouse, "db.t", [{"_kind": "-D", "id": i, "v": None} for i in range(1, 40, 7)])
    ours = arrow_rows(catalog.get_table("db.t$files").read())
    assert _files(java_paimon.files(warehouse, "db.t")) == _files(ours)
