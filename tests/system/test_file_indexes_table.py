"""`$file_indexes` lists each live data file's indexes: Java-written fixtures and lsmlake-written tables."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lsmlake
from tests.fixtures import CPP_TEST_DATA, FIXTURES, copy_fixture


def test_java_fixture_indexes_are_listed(tmp_path: Path) -> None:
    copy_fixture((CPP_TEST_DATA / "parquet" / "append_with_bsi.db").relative_to(FIXTURES), tmp_path)
    rows = lsmlake.Catalog(str(tmp_path)).get_table("append_with_bsi.append_with_bsi$file_indexes").read()
    got = [
        (r["column_name"], r["index_type"], r["storage_type"], r["index_size_in_bytes"])
        for r in rows.to_pylist()
    ]
    assert got == [("f1", "bsi", "FILE", 231), ("f2", "bsi", "FILE", 175), ("f4", "bsi", "FILE", 1437)]
    index_path = rows.column("index_file_path")[0].as_py()
    assert (
        index_path.endswith(".parquet.index")
        and rows.column("index_container_size_in_bytes")[0].as_py() == 1930
    )


def test_lsmlake_written_indexes_are_listed(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    t = catalog.create_table("db.t", schema=schema, options={"file-index.bloom-filter.columns": "name,id"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "name": pa.array([None, None], pa.string())}))
    rows = catalog.get_table("db.t$file_indexes").read().to_pylist()
    assert sorted((r["column_name"], r["index_type"], r["storage_type"]) for r in rows) == [
        ("id", "bloom-filter", "FILE"),
        ("name", "bloom-filter", "FILE"),
    ]
    assert all(
        r["index_size_in_bytes"] == 4 + 4792536 // 8 for r in rows
    )  # Paimon's default 1M items, fpp 0.1
    assert catalog.get_table("db.t$file_indexes").read().num_rows == 2
