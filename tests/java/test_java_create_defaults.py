"""CREATE TABLE with column defaults and comments: lsmlake's SQL stores the schema Java Paimon stores when its
Spark catalog creates the same table (Schema.Builder#column(name, type, comment, default text)), and
each side fills the other's defaults on write."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from java_harness import JavaError, JavaPaimon, build_harness, java_rows, sort_rows

import lsmlake
from lsmlake.sql.session import Session

pytestmark = pytest.mark.java

DDL = (
    "CREATE TABLE db.t (id INT NOT NULL, n BIGINT DEFAULT -5 COMMENT 'a number', s STRING DEFAULT 'hi', "
    "b BOOLEAN DEFAULT TRUE, d DECIMAL(6, 2) DEFAULT 1.005, c STRING COMMENT 'no default', "
    "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')"
)
# What Paimon's Spark catalog hands Schema.Builder for DDL: each default as the literal's SQL text.
JAVA_FIELDS = [
    ["id", "INT NOT NULL", None, None],
    ["n", "BIGINT", "a number", "-5"],
    ["s", "STRING", None, "'hi'"],
    ["b", "BOOLEAN", None, "TRUE"],
    ["d", "DECIMAL(6, 2)", None, "1.005"],
    ["c", "STRING", "no default", None],
]
NULLS = {"n": None, "s": None, "b": None, "d": None, "c": None}


def _java_create(tmp_path: Path, warehouse: str) -> None:
    spec = {
        "warehouse": warehouse,
        "table": "db.t",
        "fields": JAVA_FIELDS,
        "primary_key": ["id"],
        "options": {"bucket": "1"},
    }
    spec_file = tmp_path / "create.json"
    spec_file.write_text(json.dumps(spec))
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", build_harness(), "lsmlake.harness.CreateTableCheck", str(spec_file)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise JavaError("CreateTableCheck", f"exit {done.returncode}", done.stderr[-4000:])


def _schema_zero(warehouse: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(Path(warehouse, "db.db", "t", "schema", "schema-0").read_text())
    schema.pop("timeMillis")
    return schema


def test_create_table_defaults_store_javas_schema_and_both_sides_fill_them(
    java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    Session(lsmlake.Catalog(ours)).execute(f"CREATE DATABASE db; {DDL}")
    _java_create(tmp_path, theirs)
    assert _schema_zero(ours) == _schema_zero(theirs)
    assert _schema_zero(ours)["fields"][1] == {
        "id": 1,
        "name": "n",
        "type": "BIGINT",
        "description": "a number",
        "defaultValue": "-5",
    }

    expected = {"n": -5, "s": "hi", "b": True, "d": "1.01", "c": None}  # Java rounds 1.005 half-up
    for warehouse in (ours, theirs):
        session = Session(lsmlake.Catalog(warehouse))
        session.execute("INSERT INTO db.t (id) VALUES (1)")
        java_paimon.write(warehouse, "db.t", [{"_kind": "+I", "id": 2, **NULLS}])
        rows = sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"])
        assert rows == [{"id": 1, **expected}, {"id": 2, **expected}], warehouse
        table = lsmlake.Catalog(warehouse).get_table("db.t")
        assert table.read().sort_by("id").column("n").to_pylist() == [-5, -5]
