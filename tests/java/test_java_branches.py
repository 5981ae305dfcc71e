"""Branches both ways: Java Paimon reads and writes a branch lsmlake created, lsmlake one Java created."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake
from lsmlake.table import Table

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])


def _setup(tmp_path: Path) -> tuple[str, lsmlake.Catalog, Table]:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]}))
    return warehouse, catalog, table


def _ours(catalog: lsmlake.Catalog, ident: str) -> list[dict[str, Any]]:
    return sort_rows(arrow_rows(catalog.get_table(ident).read()), ["id"])


def _java(java: JavaPaimon, warehouse: str, ident: str) -> list[dict[str, Any]]:
    return sort_rows(java_rows(java.read(warehouse, ident)), ["id"])


def test_java_reads_and_writes_a_branch_lsmlake_created(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse, catalog, table = _setup(tmp_path)
    table.create_tag("t1")
    table.write(pa.table({"id": pa.array([4], pa.int32()), "v": ["main-only"]}))
    branch = table.create_branch("dev", tag="t1")
    branch.write(pa.table({"id": pa.array([2, 9], pa.int32()), "v": ["B", "z"]}))
    assert _java(java_paimon, warehouse, "db.t$branch_dev") == _ours(catalog, "db.t$branch_dev")
    java_paimon.write(warehouse, "db.t$branch_dev", [{"id": 10, "v": "java"}])
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}, {"id": 9, "v": "z"}]
    expected = sort_rows([*expected, {"id": 10, "v": "java"}], ["id"])
    assert _ours(catalog, "db.t$branch_dev") == expected
    assert _java(java_paimon, warehouse, "db.t") == _ours(catalog, "db.t")  # main untouched
    assert len(_ours(catalog, "db.t")) == 4
    table.fast_forward("dev")
    assert _java(java_paimon, warehouse, "db.t") == expected
    table.delete_branch("dev")
    assert _java(java_paimon, warehouse, "db.t") == expected


def test_lsmlake_reads_and_writes_a_branch_java_created(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse, catalog, table = _setup(tmp_path)
    java_paimon.create_tag(warehouse, "db.t", "t1")
    java_paimon.branch(warehouse, "db.t", "create", "jb", tag="t1")
    java_paimon.branch(warehouse, "db.t", "create", "empty")
    assert table.list_branches() == ["empty", "jb"]
    java_paimon.write(warehouse, "db.t$branch_jb", [{"id": 5, "v": "j"}])
    assert _ours(catalog, "db.t$branch_jb") == _java(java_paimon, warehouse, "db.t$branch_jb")
    branch = catalog.get_table("db.t$branch_jb")
    assert isinstance(branch, Table)
    branch.write(pa.table({"id": pa.array([1, 6], pa.int32()), "v": ["ours", "six"]}))
    assert _java(java_paimon, warehouse, "db.t$branch_jb") == _ours(catalog, "db.t$branch_jb")
    empty = catalog.get_table("db.t$branch_empty")
    assert isinstance(empty, Table)
    empty.write(pa.table({"id": pa.array([7], pa.int32()), "v": ["e"]}))
    assert _java(java_paimon, warehouse, "db.t$branch_empty") == [{"id": 7, "v": "e"}]
    java_paimon.branch(warehouse, "db.t", "fast_forward", "jb")
    assert _ours(catalog, "db.t") == _java(java_paimon, warehouse, "db.t$branch_jb")
    java_paimon.branch(warehouse, "db.t", "delete", "empty")
    assert table.list_branches() == ["jb"]


def test_partitions_expired_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """The table's partition.expiration-time is honoured by lsmlake's commits and by Java's; each side
    reads the other's result (the dropped partitions are OVERWRITE snapshots Java reads as such)."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema(
        [pa.field("id", pa.int32(), nullable=False), pa.field("dt", pa.string(), nullable=False)]
    )
    options = {
        "bucket": "1",
        "partition.expiration-time": "2 d",
        "partition.expiration-check-interval": "0 s",
        "partition.timestamp-formatter": "yyyyMMdd",
    }
    table = catalog.create_table(
        "db.p", schema=schema, primary_key=["id", "dt"], partition_keys=["dt"], options=options
    )
    today = dt.date.today()
    day = [(today - dt.timedelta(days=n)).strftime("%Y%m%d") for n in range(12)]
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "dt": [day[0], day[1], day[5]]}))
    assert sorted(r["dt"] for r in java_rows(java_paimon.read(warehouse, "db.p"))) == [day[1], day[0]]
    java_paimon.write(warehouse, "db.p", [{"id": 4, "dt": day[9]}, {"id": 5, "dt": day[1]}])
    ours = sorted(r["dt"] for r in arrow_rows(catalog.get_table("db.p").read()))
    assert ours == [day[1], day[1], day[0]]  # Java's commit expired the old partition it wrote
    assert ours == sorted(r["dt"] for r in java_rows(java_paimon.read(warehouse, "db.p")))
    table.drop_partitions({"dt": day[0]})
    assert sorted(r["dt"] for r in java_rows(java_paimon.read(warehouse, "db.p"))) == [day[1], day[1]]
