"""Paimon's global system tables `sys.tables` and `sys.all_table_options`, through the catalog and SQL."""

from __future__ import annotations

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
    with pytest.raises(NoSuchTableError, match=r"sys\.partitions"):
        cat.get_table("sys.partitions")
    with pytest.raises(InvalidIdentifierError, match="reserved"):
        cat.create_database("sys")
