"""Column default values: kept in the schema JSON through every column change, filled in on write where
a column is null or missing, set and dropped through the Python API and ALTER TABLE."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.core.default_values import default_scalar
from lsmlake.core.types import DataField, DataType, field_from_json, field_to_json, from_arrow_type
from lsmlake.errors import SchemaChangeError, SchemaMismatchError
from lsmlake.sql.session import execute

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("n", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("r", pa.struct([pa.field("a", pa.int32())])),
    ]
)


@pytest.fixture
def table(tmp_path: Path) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})


def _fields(table: lsmlake.Table) -> list[dict[str, object]]:
    schema_dir = Path(table.root) / "schema"
    latest = max(schema_dir.iterdir(), key=lambda p: int(p.name.split("-")[1]))
    return list(json.loads(latest.read_text())["fields"])


def test_field_json_round_trip() -> None:
    f = DataField(3, "n", DataType("BIGINT"), "a comment", "7")
    assert field_to_json(f) == {
        "id": 3,
        "name": "n",
        "type": "BIGINT",
        "description": "a comment",
        "defaultValue": "7",
    }
    assert field_from_json(field_to_json(f)) == f
    assert "defaultValue" not in field_to_json(DataField(3, "n", DataType("BIGINT")))
    # Jackson's asText of a non-string JSON value
    assert field_from_json({"id": 1, "name": "x", "type": "INT", "defaultValue": 5}).default_value == "5"


def test_defaults_survive_every_column_change(table: lsmlake.Table) -> None:
    table = table.alter(sc.update_column_default_value("n", 7), sc.update_column_default_value("s", "'x'"))
    table = table.alter(
        sc.rename_column("s", "label"),
        sc.update_column_type("n", "DECIMAL(20, 0)"),
        sc.update_column_comment("n", "count"),
        sc.add_column("extra", "INT", first=True),
        sc.update_column_position("label", first=True),
        sc.update_column_nullability("n", True),
    )
    defaults = {f.name: f.default_value for f in table.schema.fields}
    assert defaults == {"label": "'x'", "extra": None, "id": None, "n": "7", "r": None}
    fields = {f["name"]: f for f in _fields(table)}
    assert fields["n"]["defaultValue"] == "7" and fields["n"]["description"] == "count"
    assert fields["label"]["defaultValue"] == "'x'"
    table = table.alter(sc.update_column_default_value("n", None))
    assert "defaultValue" not in {f["name"]: f for f in _fields(table)}["n"]


def test_write_fills_nulls_and_missing_columns(table: lsmlake.Table) -> None:
    table = table.alter(
        sc.update_column_default_value("n", -3), sc.update_column_default_value("s", "'it''s'")
    )
    table.write(
        pa.table({"id": pa.array([1, 2], pa.int32()), "n": [None, 5], "s": [None, "y"], "r": [None, None]})
    )
    rows = {r["id"]: (r["n"], r["s"]) for r in table.read().to_pylist()}
    assert rows == {1: (-3, "it''s"), 2: (5, "y")}  # one pair of enclosing quotes goes, as in Paimon
    execute(lsmlake.Catalog(str(Path(table.root).parents[1])), "INSERT INTO db.t (id) VALUES (3)")
    assert {r["id"]: r["n"] for r in table.read().to_pylist()}[3] == -3


def test_not_null_is_checked_before_the_default(table: lsmlake.Table) -> None:
    table = table.alter(sc.update_column_default_value("id", 1))
    with pytest.raises(SchemaMismatchError, match="null"):
        table.write(pa.table({"id": pa.array([None], pa.int32()), "n": [1], "s": ["a"], "r": [None]}))


def test_sql_set_and_drop_default(table: lsmlake.Table) -> None:
    catalog = lsmlake.Catalog(str(Path(table.root).parents[1]))
    execute(
        catalog,
        "ALTER TABLE db.t ALTER COLUMN n SET DEFAULT -12; ALTER TABLE db.t ALTER COLUMN s SET DEFAULT 'z'",
    )
    fields = {f.name: f.default_value for f in catalog.get_table("db.t").schema.fields}
    assert (fields["n"], fields["s"]) == ("-12", "'z'")
    execute(catalog, "ALTER TABLE db.t ALTER COLUMN n DROP DEFAULT")
    assert catalog.get_table("db.t").schema.fields[1].default_value is None


@pytest.mark.parametrize(
    ("arrow", "text", "value"),
    [
        (pa.bool_(), "Yes", True),
        (pa.bool_(), "0", False),
        (pa.int8(), " 12 ", 12),
        (pa.float64(), "2.5", 2.5),
        (pa.decimal128(5, 2), "'3.145'", Decimal("3.15")),
        (pa.string(), "'a b'", "a b"),
        (pa.binary(), "ab", b"ab"),
        (pa.date32(), "2024-02-29", dt.date(2024, 2, 29)),
        (pa.timestamp("us"), "2024-02-29 10:11:12", dt.datetime(2024, 2, 29, 10, 11, 12)),
        (pa.time64("us"), "10:11:12", dt.time(10, 11, 12)),
    ],
)
def test_default_text_casts_to_the_type(arrow: pa.DataType, text: str, value: object) -> None:
    assert default_scalar(from_arrow_type(arrow, True), text).as_py() == value


@pytest.mark.parametrize(
    ("arrow", "text"),
    [
        (pa.int64(), "abc"),
        (pa.int8(), "300"),
        (pa.bool_(), "maybe"),
        (pa.decimal128(3, 2), "12.5"),
        (pa.date32(), "2024-13-01"),
        (pa.list_(pa.int32()), "[1]"),
    ],
)
def test_a_default_that_does_not_fit_is_refused(table: lsmlake.Table, arrow: pa.DataType, text: str) -> None:
    with pytest.raises(ValueError):
        default_scalar(from_arrow_type(arrow, True), text)
    table = table.alter(sc.add_column("c", arrow))
    with pytest.raises(SchemaChangeError, match="column 'c'"):
        table.alter(sc.update_column_default_value("c", text))


def test_a_key_only_delete_does_not_invent_values(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("n", pa.int64())])
    options = {"bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"}
    table = catalog.create_table("db.t", schema=schema, primary_key=["id"], options=options)
    table = table.alter(sc.update_column_default_value("n", 100))
    table.write(pa.table({"id": pa.array([1, 1], pa.int32()), "n": [5, None]}))  # the null becomes 100
    table.delete(pa.table({"id": pa.array([1], pa.int32())}))  # retracts null, not the default
    assert table.read().to_pylist() == [{"id": 1, "n": 105}]
