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
from lsmlake.core.field_metadata import field_metadata
from lsmlake.core.types import DataField, DataType, field_from_json, field_to_json, from_arrow_type
from lsmlake.errors import SchemaChangeError, SchemaMismatchError, SqlError, UnsupportedError
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


def test_create_table_sql_takes_spark_defaults_and_comments(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    execute(
        catalog,
        "CREATE DATABASE db; CREATE TABLE db.t (id INT NOT NULL PRIMARY KEY NOT ENFORCED, "
        "n BIGINT DEFAULT -12 NOT NULL COMMENT 'twelve', s STRING COMMENT 'text' DEFAULT 'z', "
        "b BOOLEAN DEFAULT false, x DOUBLE) WITH ('bucket' = '1')",
    )
    table = catalog.get_table("db.t")
    assert [(f["name"], f.get("defaultValue"), f.get("description")) for f in _fields(table)] == [
        ("id", None, None),
        ("n", "-12", "twelve"),
        ("s", "'z'", "text"),
        ("b", "false", None),
        ("x", None, None),
    ]
    assert not table.schema.field("n").type.nullable  # NOT NULL after DEFAULT still applies
    execute(catalog, "INSERT INTO db.t (id, n) VALUES (1, 3); INSERT INTO db.t VALUES (2, 4, NULL, NULL, NULL)")
    assert table.read().sort_by("id").to_pylist() == [
        {"id": 1, "n": 3, "s": "z", "b": False, "x": None},
        {"id": 2, "n": 4, "s": "z", "b": False, "x": None},
    ]


def test_create_table_with_a_bad_default_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    with pytest.raises(SchemaMismatchError, match="column 'n': default value \"'abc'\" is not a INT"):
        execute(catalog, "CREATE TABLE db.t (id INT, n INT DEFAULT 'abc')")
    with pytest.raises(SqlError, match="DEFAULT takes a literal"):
        execute(catalog, "CREATE TABLE db.t (id INT, n INT DEFAULT id + 1)")
    assert catalog.list_tables("db") == []


def test_create_table_reads_comments_and_defaults_from_arrow_field_metadata(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema(
        [
            pa.field("id", pa.int32(), nullable=False),
            pa.field("n", pa.int64(), metadata=field_metadata("a count", "7")),
        ]
    )
    table = catalog.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    assert _fields(table)[1] == {"id": 1, "name": "n", "type": "BIGINT", "description": "a count", "defaultValue": "7"}
    table.write(pa.table({"id": pa.array([1], pa.int32()), "n": pa.array([None], pa.int64())}))
    assert table.read().column("n").to_pylist() == [7]
    bad = pa.schema([pa.field("id", pa.int32()), pa.field("d", pa.date32(), metadata=field_metadata(None, "soon"))])
    with pytest.raises(SchemaMismatchError, match="column 'd'"):
        catalog.create_table("db.u", schema=bad)


def test_flink_procedure_sets_a_default_as_given(table: lsmlake.Table) -> None:
    catalog = lsmlake.Catalog(str(Path(table.root).parents[1]))
    (result,) = execute(catalog, "CALL sys.alter_column_default_value('db.t', 's', 'my_value')")
    assert result.rows == [{"result": "Success"}]
    execute(catalog, "CALL sys.alter_column_default_value(`table` => 'db.t', `column` => 'n', default_value => '5')")
    assert {f["name"]: f.get("defaultValue") for f in _fields(catalog.get_table("db.t"))} == {
        "id": None,
        "n": "5",
        "s": "my_value",
        "r": None,
    }
    with pytest.raises(UnsupportedError, match="nested column"):
        execute(catalog, "CALL sys.alter_column_default_value('db.t', 'r.a', '1')")
    with pytest.raises(SchemaChangeError, match="column 'n'"):
        execute(catalog, "CALL sys.alter_column_default_value('db.t', 'n', 'many')")


def test_insert_fills_the_default_of_a_column_it_leaves_out_even_when_not_null(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    execute(
        catalog,
        "CREATE DATABASE db; CREATE TABLE db.t (id INT PRIMARY KEY NOT ENFORCED, "
        "n INT NOT NULL DEFAULT 3, s STRING DEFAULT 'x'); INSERT INTO db.t (id) VALUES (1)",
    )
    assert catalog.get_table("db.t").read().to_pylist() == [{"id": 1, "n": 3, "s": "x"}]
    # as in Spark and Java: an explicit NULL is checked against NOT NULL before any default is filled
    with pytest.raises(SchemaMismatchError, match="NOT NULL column n"):
        execute(catalog, "INSERT INTO db.t VALUES (2, NULL, NULL)")
