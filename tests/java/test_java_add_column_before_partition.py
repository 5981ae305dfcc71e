"""add-column-before-partition against live Java Paimon: ALTER ADD COLUMN without a position puts the column
at the same place in both."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_harness import JavaPaimon

import lsmlake
from lsmlake.schema_change import add_column

pytestmark = pytest.mark.java

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("dt", pa.string(), nullable=False),
    ]
)


def _table(catalog: lsmlake.Catalog, name: str) -> lsmlake.Table:
    table = catalog.create_table(
        name,
        schema=SCHEMA,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"add-column-before-partition": "true"},
    )
    table.write(pa.table({"id": pa.array([1], pa.int32()), "v": [1], "dt": ["a"]}, schema=SCHEMA))
    return table


def test_java_adds_the_column_at_the_same_place(tmp_path: Path, java_paimon: JavaPaimon) -> None:
    wh = str(tmp_path / "wh")
    catalog = lsmlake.Catalog(wh)
    catalog.create_database("db")
    ours = _table(catalog, "db.ours").alter(add_column("w", "STRING"))
    _table(catalog, "db.java")
    java_paimon.alter(wh, "db.java", [{"add": "w", "type": "STRING"}])
    lsmlake.clear_caches()
    java = lsmlake.Catalog(wh).get_table("db.java")
    assert java.schema.field_names == ours.schema.field_names == ["id", "v", "w", "dt"]
