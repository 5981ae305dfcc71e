"""User data into table rows: nested fields matched exactly, Python data typed by the table, every
conversion or cast failure a SchemaMismatchError naming the (nested) column, the table unchanged."""

from __future__ import annotations

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import SchemaMismatchError
from lsmlake.sql import execute

ADDR = pa.struct([("city", pa.string()), ("zip", pa.int64())])
ITEM = pa.struct([("name", pa.string()), ("price", pa.float64())])
POINT = pa.struct([("x", pa.int32()), ("y", pa.string())])
WIDE_POINT = pa.struct([("x", pa.int64()), ("y", pa.string())])
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("addr", ADDR),
        ("items", pa.list_(ITEM)),
        ("m", pa.map_(pa.string(), POINT)),
        ("n", pa.int32()),
    ]
)
ROW = {
    "id": 1,
    "addr": {"city": "paris", "zip": 75000},
    "items": [{"name": "a", "price": 1.5}, None],
    "m": [("k", {"x": 1, "y": "z"})],
    "n": 7,
}


@pytest.fixture
def table(catalog: lsmlake.Catalog) -> lsmlake.Table:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.Table.from_pylist([ROW], schema=SCHEMA))
    return t


def with_column(name: str, values: pa.Array) -> pa.Table:
    base = pa.Table.from_pylist([{**ROW, "id": 2}], schema=SCHEMA)
    return base.set_column(base.schema.get_field_index(name), name, values)


def assert_refused(t: lsmlake.Table, data: object, *needles: str) -> None:
    before = t.read()
    snapshot = t.latest_snapshot()
    with pytest.raises(SchemaMismatchError) as info:
        t.write(data)
    for needle in ("db.t", *needles):
        assert needle in str(info.value)
    assert t.latest_snapshot() == snapshot
    assert t.read().equals(before)


# --------------------------------------------------------------------------- 1. nested fields


def test_unknown_struct_field_is_refused_not_dropped(table: lsmlake.Table) -> None:
    addr = pa.array([{"town": "x", "zip": 1}])
    assert_refused(table, with_column("addr", addr), "addr.town")


def test_missing_struct_field_is_refused_not_filled_with_null(table: lsmlake.Table) -> None:
    addr = pa.array([{"zip": 1}], pa.struct([("zip", pa.int64())]))
    assert_refused(table, with_column("addr", addr), "addr.city")


def test_nested_field_mismatch_inside_lists_and_maps_names_its_path(table: lsmlake.Table) -> None:
    items = pa.array([[{"name": "a", "cost": 1.0}]])
    assert_refused(table, with_column("items", items), "items[].cost")
    m = pa.array([[("k", {"x": 1})]], pa.map_(pa.string(), pa.struct([("x", pa.int32())])))
    assert_refused(table, with_column("m", m), "m{}.y")


def test_struct_fields_are_matched_by_name_and_null_structs_stay_null(table: lsmlake.Table) -> None:
    swapped = pa.struct([("zip", pa.int32()), ("city", pa.large_string())])
    addr = pa.array([{"zip": 1, "city": "x"}, None], swapped)
    data = pa.Table.from_pylist([{**ROW, "id": 2}, {**ROW, "id": 3}], schema=SCHEMA)
    table.write(data.set_column(1, "addr", addr))
    got = {r["id"]: r["addr"] for r in table.read().to_pylist()}
    assert got == {1: ROW["addr"], 2: {"city": "x", "zip": 1}, 3: None}


def test_struct_of_nulls_and_null_struct_are_told_apart(table: lsmlake.Table) -> None:
    table.write([{**ROW, "id": 2, "addr": None}, {**ROW, "id": 3, "addr": {"city": None, "zip": None}}])
    got = {r["id"]: r["addr"] for r in table.read().to_pylist()}
    assert got[2] is None
    assert got[3] == {"city": None, "zip": None}


def test_dict_keys_are_checked_at_every_depth(table: lsmlake.Table) -> None:
    assert_refused(table, [{**ROW, "id": 2, "addr": {"town": "x", "zip": 1}}], "addr.town")
    assert_refused(table, [{**ROW, "id": 2, "items": [{"name": "a"}]}], "items[].price")
    assert_refused(table, {**{k: [v] for k, v in ROW.items()}, "m": [{"k": {"x": 1, "q": 2}}]}, "m{}.q")


def test_not_null_nested_field_holding_null_is_refused(catalog: lsmlake.Catalog) -> None:
    inner = pa.struct([pa.field("a", pa.int64(), nullable=False)])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", inner)])
    t = catalog.create_table("db.t", schema=schema, primary_key=["id"])
    t.write(pa.table({"id": [1], "s": pa.array([{"a": 1}], inner)}))
    bad = pa.table({"id": [2, 3], "s": pa.array([None, {"a": None}], pa.struct([("a", pa.int64())]))})
    assert_refused(t, bad, "s.a", "NOT NULL")
    t.write(bad.slice(0, 1))  # a null struct is fine: its NOT NULL field is not there at all
    assert t.read().to_pylist() == [{"id": 1, "s": {"a": 1}}, {"id": 2, "s": None}]


def test_duplicate_columns_are_refused(table: lsmlake.Table) -> None:
    base = pa.Table.from_pylist([{**ROW, "id": 2}], schema=SCHEMA)
    assert_refused(table, base.append_column("n", pa.array([1], pa.int32())), "n more than once")


# --------------------------------------------------------------------------- 2. input kinds


def test_pandas_frame_of_the_table_writes_back(table: lsmlake.Table) -> None:
    before = table.read()
    frame = before.to_pandas()
    frame["n"] = [8]
    table.write(frame)
    assert table.read().to_pylist() == [{**before.to_pylist()[0], "n": 8}]


def test_pandas_object_columns_are_typed_by_the_table(table: lsmlake.Table) -> None:
    frame = pd.DataFrame({k: [v] for k, v in {**ROW, "id": 2, "m": {"a": {"x": 2, "y": None}}}.items()})
    table.write(frame)
    assert table.read(filter="id = 2").to_pylist()[0]["m"] == [("a", {"x": 2, "y": None})]


def test_list_of_dicts_and_dict_of_lists_use_the_table_types(table: lsmlake.Table) -> None:
    table.write([{**ROW, "id": 2, "m": {"a": {"x": 1, "y": "b"}}}])
    table.write({k: [v] for k, v in {**ROW, "id": 3, "m": [("c", None)]}.items()})
    got = {r["id"]: r["m"] for r in table.read().to_pylist()}
    assert got == {1: ROW["m"], 2: [("a", {"x": 1, "y": "b"})], 3: [("c", None)]}


def test_arrow_stream_objects_are_accepted(table: lsmlake.Table) -> None:
    table.write(pl.from_arrow(pa.Table.from_pylist([{**ROW, "id": 2}], schema=SCHEMA)))
    relation = duckdb.sql("SELECT 3::BIGINT AS id, {'city': 'x', 'zip': 9} AS addr, NULL AS items")
    table.write(relation.project("id, addr, items, NULL AS m, 5 AS n"))
    reader = pa.RecordBatchReader.from_batches(SCHEMA, [pa.record_batch([[4], *[[None]] * 4], schema=SCHEMA)])
    table.write(reader)
    got = {r["id"]: r for r in table.read().to_pylist()}
    assert got[2] == {**ROW, "id": 2}
    assert got[3] == {"id": 3, "addr": {"city": "x", "zip": 9}, "items": None, "m": None, "n": 5}
    assert got[4]["addr"] is None


def test_polars_frame_with_a_nested_mismatch_is_refused(table: lsmlake.Table) -> None:
    frame = pl.DataFrame(
        {"id": [2], "addr": [{"town": "x", "zip": 1}], "items": [None], "m": [None], "n": [1]}
    )
    assert_refused(table, frame, "addr.town")


def test_unsupported_input_is_a_type_error(table: lsmlake.Table) -> None:
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        table.write(42)


# --------------------------------------------------------------------------- 3. casts name the column


def test_update_with_a_value_that_does_not_fit_names_column_and_table(table: lsmlake.Table) -> None:
    before = table.read()
    with pytest.raises(SchemaMismatchError, match=r"table db\.t: column n") as info:
        table.update("id = 1", {"n": "abc"})
    assert "abc" in str(info.value)
    with pytest.raises(SchemaMismatchError, match=r"addr\.town"):
        table.update("id = 1", {"addr": {"town": "x", "zip": 1}})
    assert table.read().equals(before)
    table.update("id = 1", {"n": 9, "addr": {"city": "lyon", "zip": 69000}, "m": {"q": None}})
    assert table.read().to_pylist() == [
        {**ROW, "n": 9, "addr": {"city": "lyon", "zip": 69000}, "m": [("q", None)]}
    ]


@pytest.mark.parametrize(
    ("column", "values", "needle"),
    [
        ("n", pa.array(["abc"]), "column n"),
        ("n", pa.array([2**40]), "column n"),
        ("addr", pa.array([{"city": "x", "zip": "nope"}]), "column addr.zip"),
        ("items", pa.array([[{"name": 1.5, "price": "x"}]]), "column items[].price"),
        ("m", pa.array([[("k", {"x": 2**40, "y": "z"})]], pa.map_(pa.string(), WIDE_POINT)), "column m{}.x"),
    ],
)
def test_write_cast_failures_name_the_column(
    table: lsmlake.Table, column: str, values: pa.Array, needle: str
) -> None:
    assert_refused(table, with_column(column, values), needle)


def test_python_conversion_failures_name_the_column(table: lsmlake.Table) -> None:
    assert_refused(table, [{**ROW, "id": 2, "n": [1, 2]}], "column n")
    assert_refused(table, pd.DataFrame({**{k: [v] for k, v in ROW.items()}, "addr": [5]}), "column addr")
    table.write([{**ROW, "id": 2, "n": "12"}])  # a numeric string parses, as an Arrow string column does
    assert table.read(filter="id = 2").column("n").to_pylist() == [12]


def test_python_values_are_never_truncated(table: lsmlake.Table) -> None:
    """Arrow's typed conversion turns 1.7 into 1 for an integer column; the safe cast refuses it."""
    assert_refused(table, [{**ROW, "id": 2, "n": 1.7}], "column n")
    assert_refused(table, [{**ROW, "id": 2, "addr": {"city": "x", "zip": 2.5}}], "column addr.zip")
    assert_refused(table, [{**ROW, "id": 2, "m": {"k": {"x": 0.5, "y": None}}}], "column m{}.x")
    table.write([{**ROW, "id": 2, "n": 2.0}])
    assert table.read(filter="id = 2").column("n").to_pylist() == [2]


def test_timestamps_and_decimals_keep_every_digit(catalog: lsmlake.Catalog) -> None:
    import datetime as dt
    from decimal import Decimal

    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("ts", pa.struct([("at", pa.timestamp("ms"))])),
            ("big", pa.decimal128(38, 0)),
        ]
    )
    t = catalog.create_table("db.t", schema=schema, primary_key=["id"])
    fine = dt.datetime(2024, 1, 1, 0, 0, 0, 123000)
    t.write([{"id": 1, "ts": {"at": fine}, "big": 2**70}])  # beyond int64: Arrow's typed conversion
    assert t.read().to_pylist() == [{"id": 1, "ts": {"at": fine}, "big": Decimal(2**70)}]
    assert_refused(t, [{"id": 2, "ts": {"at": fine.replace(microsecond=123456)}, "big": 1}], "ts.at")


@pytest.mark.parametrize(
    ("arrow_type", "column", "value", "message"),
    [
        (pa.float32(), pa.array([1e300]), 1.0, "overflows type float"),
        (pa.float64(), pa.array(["1e400"]), 1.0, "overflows type double"),
        (pa.bool_(), pa.array([5]), True, "not a BOOLEAN"),
    ],
)
def test_casts_that_would_change_a_value_are_refused(
    catalog: lsmlake.Catalog, arrow_type: pa.DataType, column: pa.Array, value: object, message: str
) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", arrow_type)])
    t = catalog.create_table("db.lossy", schema=schema, primary_key=["id"], options={"bucket": "1"})
    with pytest.raises(SchemaMismatchError, match=f"column v: .*{message}"):
        t.write(pa.table({"id": [1], "v": column}))
    assert t.latest_snapshot() is None
    t.write(pa.table({"id": [1], "v": pa.array([value], arrow_type)}))  # a value that fits still does
    assert t.read()["v"].to_pylist() == [value]


def test_zoned_timestamps_into_a_timestamp_without_zone(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us"))])
    t = catalog.create_table("db.ts", schema=schema, primary_key=["id"], options={"bucket": "1"})
    tokyo = pa.array([1_700_000_000_000_000], pa.timestamp("us", tz="Asia/Tokyo"))
    with pytest.raises(SchemaMismatchError, match=r"column ts: .*time zone Asia/Tokyo"):
        t.write(pa.table({"id": [1], "ts": tokyo}))
    utc = pa.array([1_700_000_000_000_000], pa.timestamp("us", tz="UTC"))
    t.write(pa.table({"id": [1], "ts": utc}))  # UTC has one wall-clock reading: stored as it is
    assert t.read()["ts"].cast(pa.int64()).to_pylist() == [1_700_000_000_000_000]


def test_lists_of_nulls_inside_map_values_keep_their_length(catalog: lsmlake.Catalog) -> None:
    # a list column whose values are all null comes in as list<null>; pyarrow's flatten() of it (inside a
    # map value's struct) returned too few values, and the write failed with a raw ArrowInvalid
    point = pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.string()))])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("m", pa.map_(pa.string(), point))])
    t = catalog.create_table("db.nullists", schema=schema, primary_key=["id"], options={"bucket": "1"})
    execute(catalog, "INSERT INTO nullists VALUES (0, MAP['', ROW(NULL, ARRAY[NULL, NULL])])", database="db")
    t.write([{"id": 1, "m": {"k": {"x": None, "tags": [None, None, None]}}}])
    assert t.read().sort_by("id").to_pylist() == [
        {"id": 0, "m": [("", {"x": None, "tags": [None, None]})]},
        {"id": 1, "m": [("k", {"x": None, "tags": [None, None, None]})]},
    ]
