"""Java Paimon and lsmlake share one JDBC catalog (SQLite): each opens what the other created and reads
and writes the same tables (the catalog rows, properties and table files are one layout)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import catalog_check, tools_missing

import lsmlake

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def java_check(tmp_path: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """Run CatalogCheck (its own JVM, the harness's classpath) on ``spec``; its JSON answer."""
    missing = tools_missing()
    if missing:
        pytest.skip(f"Java Paimon harness: {missing}")
    return catalog_check(tmp_path, spec)


def test_java_and_lsmlake_share_a_jdbc_catalog(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    uri = f"jdbc:sqlite:{tmp_path / 'catalog.sqlite'}"
    options = {"metastore": "jdbc", "uri": uri, "catalog-key": "shared"}
    # lsmlake with the lock (its lock table in the catalog database); Java without: Paimon 1.4's JDBC
    # catalog leaves a SQLite read statement open on a catalog it did not create, and its lock's own
    # connection then cannot write (SQLITE_BUSY) -- a Java-side defect, fixed after 1.4
    cat = lsmlake.Catalog(warehouse, options={**options, "lock.enabled": "true"})
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "v": ["B"]}, schema=SCHEMA))
    cat.create_table("db.empty", schema=SCHEMA)
    lsmlake.Catalog(warehouse).create_database("stray")  # a directory only: not in the JDBC catalog

    answer = java_check(
        tmp_path,
        {
            "options": {**options, "warehouse": warehouse},
            "read": ["db.t"],
            "write": [
                {"table": "db.t", "rows": [[3, "c"]]},  # Java commits to lsmlake's table, under the lock
                {"table": "javadb.j", "create": True, "rows": [[10, "x"], [11, "y"]]},
            ],
        },
    )
    assert {db: sorted(ts) for db, ts in answer["tables"].items()} == {"db": ["empty", "t"], "javadb": ["j"]}
    assert sorted(answer["rows"]["db.t"]) == [["1", "a"], ["2", "B"], ["3", "c"]]

    # and back: lsmlake sees Java's database, table and commit through the same catalog
    again = lsmlake.Catalog(warehouse, options={**options, "lock.enabled": "true"})
    assert again.list_databases() == ["db", "javadb"]
    assert again.list_tables("javadb") == ["j"]
    assert sorted(again.open_table("javadb.j").read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 10, "v": "x"},
        {"id": 11, "v": "y"},
    ]
    assert sorted(again.open_table("db.t").read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "B"},
        {"id": 3, "v": "c"},
    ]
    again.rename_table("javadb.j", "db.j")
    with sqlite3.connect(tmp_path / "catalog.sqlite") as conn:
        rows = conn.execute("SELECT catalog_key, database_name, table_name FROM paimon_tables").fetchall()
        props = dict(
            conn.execute(
                "SELECT property_key, property_value FROM paimon_table_properties WHERE table_name = 't'"
            ).fetchall()
        )
    assert sorted(rows) == [("shared", "db", "empty"), ("shared", "db", "j"), ("shared", "db", "t")]
    assert props["primary-key"] == "id" and props["bucket"] == "1"
    renamed = java_check(tmp_path, {"options": {**options, "warehouse": warehouse}, "read": ["db.j"]})
    assert sorted(renamed["rows"]["db.j"]) == [["10", "x"], ["11", "y"]]
    assert (
        sorted(renamed["tables"]["db"]) == ["empty", "j", "t"] and renamed["tables"].get("javadb", []) == []
    )
