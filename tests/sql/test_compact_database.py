"""CALL sys.compact_database: every matching primary-key table of matching databases is compacted."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import SqlError, UnsupportedError
from lsmlake.sql import Session
from lsmlake.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def _levels(t: Table) -> list[int]:
    return sorted({f.level for s in t.scan().splits() for f in s.files})


def test_compact_database(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    tables = {}
    for db in ("ods", "dwd"):
        cat.create_database(db)
        for name in ("a", "b"):
            t = cat.create_table(
                f"{db}.{name}",
                schema=SCHEMA,
                primary_key=["id"],
                options={"bucket": "1", "write-only": "true"},
            )
            for i in range(2):
                t.write(pa.table({"id": [i], "v": [i]}, schema=SCHEMA))
            tables[f"{db}.{name}"] = t
    cat.create_table("ods.log", schema=SCHEMA, options={"bucket": "-1"})
    assert all(_levels(t) == [0] for t in tables.values())
    s = Session(cat, database="ods")
    (r,) = s.execute("CALL sys.compact_database(including_databases => 'ods', excluding_tables => 'ods\\.b')")
    assert r.table.column("table").to_pylist() == ["ods.a"] and "skipped append table(s) ods.log" in r.message
    assert (
        _levels(tables["ods.a"]) == [5]
        and _levels(tables["ods.b"]) == [0]
        and _levels(tables["dwd.a"]) == [0]
    )
    (r,) = s.execute("CALL sys.compact_database(including_tables => 'dwd\\..*', mode => 'combined')")
    assert sorted(r.table.column("table").to_pylist()) == ["dwd.a", "dwd.b"]
    assert _levels(tables["dwd.b"]) == [5]
    with pytest.raises(SqlError, match="no tables to be compacted"):
        s.execute("CALL sys.compact_database(including_databases => 'nope')")
    with pytest.raises(UnsupportedError, match="partition_idle_time"):
        s.execute("CALL sys.compact_database(partition_idle_time => '1 d')")
