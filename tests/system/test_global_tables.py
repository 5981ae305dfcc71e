"""Paimon's global system tables `sys.tables` and `sys.all_table_options`, through the catalog and SQL."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import InvalidIdentifierError, NoSuchTableError
from lsmlake.sql import Session
from lsmlake.system.global_tables import GlobalSystemTable


def test_global_system_tables(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("a")
    cat.create_database("b")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string())])
    cat.create_table("a.pk", schema=schema, primary_key=["id"], options={"bucket": "2", "owner": "ann"})
    cat.create_table("b.log", schema=schema, partition_keys=["dt"])
    tables = cat.get_table("sys.tables")
    assert isinstance(tables, GlobalSystemTable)
    rows = tables.read(
        columns=[
            "database_name",
            "table_name",
            "table_type",
            "partitioned",
            "primary_key",
            "owner",
            "record_count",
        ]
    ).to_pylist()
    assert rows == [
        {
            "database_name": "a",
            "table_name": "pk",
            "table_type": "table",
            "partitioned": False,
            "primary_key": True,
            "owner": "ann",
            "record_count": None,
        },
        {
            "database_name": "b",
            "table_name": "log",
            "table_type": "table",
            "partitioned": True,
            "primary_key": False,
            "owner": None,
            "record_count": None,
        },
    ]
    options = cat.get_table("sys.all_table_options").read().to_pylist()
    pk = {r["key"]: r["value"] for r in options if r["table_name"] == "pk"}
    assert pk["bucket"] == "2" and pk["owner"] == "ann" and pk["path"].endswith("a.db/pk")
    s = Session(cat, database="a")
    (r,) = s.execute("SELECT table_name FROM sys.tables WHERE partitioned")
    assert r.table.to_pylist() == [{"table_name": "log"}]
    (r,) = s.execute(
        "SELECT count(*) AS n FROM sys.all_table_options WHERE database_name = 'a' AND key = 'bucket'"
    )
    assert r.table.to_pylist() == [{"n": 1}]
    with pytest.raises(NoSuchTableError, match=r"sys\.catalog_options"):
        cat.get_table("sys.catalog_options")
    with pytest.raises(InvalidIdentifierError, match="reserved"):
        cat.create_database("sys")


def test_global_partitions_table(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("a")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string()), ("hh", pa.int32())])
    t = cat.create_table("a.p", schema=schema, partition_keys=["dt", "hh"], options={"bucket": "-1"})
    cat.create_table("a.flat", schema=schema, primary_key=["id"])
    before = int(time.time() * 1000) - 1000
    t.write(pa.table({"id": [1, 2, 3], "dt": ["x", "x", "y"], "hh": pa.array([1, 1, 2], pa.int32())}))
    t.write(pa.table({"id": [4], "dt": ["x"], "hh": pa.array([1], pa.int32())}))
    rows = cat.get_table("sys.partitions").read().to_pylist()
    assert [
        (r["table_name"], r["partition_name"], r["record_count"], r["file_count"], r["done"]) for r in rows
    ] == [
        ("p", "dt=x/hh=1", 3, 2, False),
        ("p", "dt=y/hh=2", 1, 1, False),
    ]
    files = cat.get_table("a.p$files").read()
    assert sum(r["file_size_in_bytes"] for r in rows) == sum(files.column("file_size_in_bytes").to_pylist())
    assert files.num_rows == 3
    assert all(before <= r["last_file_creation_time"] <= int(time.time() * 1000) + 1000 for r in rows)
