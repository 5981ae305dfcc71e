"""pypaimon 2.1.0 opens lsmlake tables whose schema carries column default values and reads the rows
lsmlake wrote with the defaults filled in."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon_env import pypaimon_read

import lsmlake
from lsmlake import schema_change as sc

pytestmark = pytest.mark.interop


def test_pypaimon_reads_a_table_with_defaults(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    catalog = lsmlake.Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("n", pa.int64()), ("s", pa.string())])
    table = catalog.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    table = table.alter(sc.update_column_default_value("n", 7), sc.update_column_default_value("s", "'hi'"))
    table.write(pa.table({"id": pa.array([1, 2], pa.int32()), "n": [None, 3], "s": [None, "x"]}))
    ours = sorted(table.read().to_pylist(), key=lambda r: r["id"])
    assert ours == [{"id": 1, "n": 7, "s": "hi"}, {"id": 2, "n": 3, "s": "x"}]
    assert sorted(pypaimon_read(warehouse, "db.t").to_pylist(), key=lambda r: r["id"]) == ours
