"""add-column-before-partition: ALTER ADD COLUMN without a position puts the column before the first partition
column, as Paimon's SchemaManager does (an explicit position, or the option off, keeps lsmlake's order)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lsmlake
from lsmlake.schema_change import add_column, set_option

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("dt", pa.string(), nullable=False),
    ]
)


def _table(tmp_path: Path, options: dict[str, str]) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options=options
    )
    table.write(pa.table({"id": pa.array([1], pa.int32()), "v": [1], "dt": ["a"]}, schema=SCHEMA))
    return table


def test_a_new_column_goes_before_the_partition_columns(tmp_path: Path) -> None:
    table = _table(tmp_path, {"add-column-before-partition": "true"})
    table = table.alter(add_column("w", "STRING"))
    assert table.schema.field_names == ["id", "v", "w", "dt"]
    table = table.alter(add_column("x", "INT", after="dt"))  # an explicit position wins
    assert table.schema.field_names == ["id", "v", "w", "dt", "x"]
    assert table.read().to_pylist() == [{"id": 1, "v": 1, "w": None, "dt": "a", "x": None}]


def test_without_it_a_new_column_goes_last(tmp_path: Path) -> None:
    table = _table(tmp_path, {})
    table = table.alter(add_column("w", "STRING"))
    assert table.schema.field_names == ["id", "v", "dt", "w"]
    # the options before the ALTER decide, as in Paimon
    table = table.alter(set_option("add-column-before-partition", "true"), add_column("x", "INT"))
    assert table.schema.field_names == ["id", "v", "dt", "w", "x"]
