"""Random nested values (structs, lists of structs, maps of structs, nulls at every level) written through
every input kind read back exactly as written; a ROW with a field the table lacks is a lsmlake error that
leaves the table unchanged, whatever the input kind."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.errors import LsmlakeError
from lsmlake.sql import execute

ADDR = pa.struct([("city", pa.string()), ("zip", pa.int64())])
ITEM = pa.struct([("name", pa.string()), ("price", pa.float64())])
POINT = pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.string()))])
DEEP = pa.struct([("inner", pa.struct([("b", pa.string()), ("c", pa.int64())])), ("l", pa.list_(pa.int64()))])
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("addr", ADDR),
        ("items", pa.list_(ITEM)),
        ("m", pa.map_(pa.string(), POINT)),
        ("deep", DEEP),
    ]
)
EXTRA = "extra"  # the field a corrupted addr carries

TEXT = st.text(alphabet="ab'\\ é", max_size=4)
BIGINT = st.integers(-(2**63), 2**63 - 1)
DOUBLE = st.integers(-(2**20), 2**20).map(lambda i: i / 8)  # exact in a SQL literal


def nullable(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | s


ADDRS = nullable(st.fixed_dictionaries({"city": nullable(TEXT), "zip": nullable(BIGINT)}))
ITEMS = nullable(
    st.lists(nullable(st.fixed_dictionaries({"name": nullable(TEXT), "price": nullable(DOUBLE)})), max_size=3)
)
POINTS = nullable(
    st.fixed_dictionaries(
        {
            "x": nullable(st.integers(-(2**31), 2**31 - 1)),
            "tags": nullable(st.lists(nullable(TEXT), max_size=2)),
        }
    )
)
MAPS = nullable(st.dictionaries(TEXT, POINTS, max_size=3).map(lambda d: list(d.items())))
DEEPS = nullable(
    st.fixed_dictionaries(
        {
            "inner": nullable(st.fixed_dictionaries({"b": nullable(TEXT), "c": nullable(BIGINT)})),
            "l": nullable(st.lists(nullable(BIGINT), max_size=3)),
        }
    )
)
ROW = st.fixed_dictionaries({"addr": ADDRS, "items": ITEMS, "m": MAPS, "deep": DEEPS})
BATCH = st.lists(st.tuples(st.integers(0, 30), ROW), min_size=1, max_size=6, unique_by=lambda r: r[0])
BATCHES = st.lists(st.tuples(BATCH, st.booleans(), st.integers(0, 9)), min_size=1, max_size=3)


# --------------------------------------------------------------------------- input kinds


def reversed_struct(t: pa.DataType) -> pa.DataType:
    """The same type with every struct's fields in reverse order (they must be matched by name)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, reversed_struct(f.type)) for f in reversed(list(t))])
    if pa.types.is_map(t):
        return pa.map_(t.key_type, reversed_struct(t.item_type))
    if pa.types.is_list(t):
        return pa.large_list(reversed_struct(t.value_type))
    return t


def arrow_schema(extra: bool) -> pa.Schema:
    if not extra:
        return SCHEMA
    return SCHEMA.set(1, pa.field("addr", pa.struct([*ADDR, pa.field(EXTRA, pa.int64())])))


def as_arrow(rows: list[dict[str, Any]], extra: bool) -> pa.Table:
    exact = pa.Table.from_pylist(rows, schema=arrow_schema(extra))
    cousin = pa.schema([pa.field(f.name, reversed_struct(f.type), f.nullable) for f in exact.schema])
    return exact.cast(cousin)


def as_dicts(rows: list[dict[str, Any]], extra: bool) -> list[dict[str, Any]]:
    return [{**r, "m": None if r["m"] is None else dict(r["m"])} for r in rows]


def as_columns(rows: list[dict[str, Any]], extra: bool) -> dict[str, list[Any]]:
    return {name: [r[name] for r in rows] for name in SCHEMA.names}


def as_pandas(rows: list[dict[str, Any]], extra: bool) -> pd.DataFrame:
    # integer_object_nulls: without it pandas holds [None, 2**53 + 1] as floats, losing digits itself
    return pa.Table.from_pylist(rows, schema=arrow_schema(extra)).to_pandas(integer_object_nulls=True)


def as_polars(rows: list[dict[str, Any]], extra: bool) -> pl.DataFrame:
    return pl.from_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(extra)))


def sql_literal(value: Any, t: pa.DataType) -> str:
    """A value as Flink SQL spells it: ROW(...), ARRAY[...], MAP[k, v, ...], quoted strings."""
    if value is None:
        return "NULL"
    if pa.types.is_struct(t):
        return "ROW(" + ", ".join(sql_literal(value[f.name], f.type) for f in t) + ")"
    if pa.types.is_map(t):
        pairs = (f"{sql_literal(k, t.key_type)}, {sql_literal(v, t.item_type)}" for k, v in value)
        return "MAP[" + ", ".join(pairs) + "]"
    if pa.types.is_list(t):
        return "ARRAY[" + ", ".join(sql_literal(v, t.value_type) for v in value) + "]"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def as_sql(rows: list[dict[str, Any]], extra: bool) -> str:
    schema = arrow_schema(extra)
    tuples = ("(" + ", ".join(sql_literal(r.get(f.name), f.type) for f in schema) + ")" for r in rows)
    return "INSERT INTO t VALUES " + ", ".join(tuples)


KINDS: dict[str, Callable[[list[dict[str, Any]], bool], Any]] = {
    "arrow": as_arrow,
    "dicts": as_dicts,
    "columns": as_columns,
    "pandas": as_pandas,
    "polars": as_polars,
    "sql": as_sql,
}
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
_names = itertools.count()


def rows_of(batch: list[tuple[int, dict[str, Any]]], extra: bool, seed: int) -> list[dict[str, Any]]:
    rows = [{"id": key, **row} for key, row in batch]
    if extra:
        for r in rows:
            if r["addr"] is not None:
                r["addr"] = {**r["addr"], EXTRA: seed}
    return rows


@pytest.mark.parametrize("kind", list(KINDS))
@SETTINGS
@given(batches=BATCHES)
def test_nested_values_round_trip_through_every_input_kind(
    kind: str, batches: list[tuple[list[tuple[int, dict[str, Any]]], bool, int]]
) -> None:
    with tempfile.TemporaryDirectory(prefix="lsmlake-nested-") as warehouse:
        _round_trip(kind, lsmlake.Catalog(warehouse), batches)


def _round_trip(
    kind: str, catalog: lsmlake.Catalog, batches: list[tuple[list[tuple[int, dict[str, Any]]], bool, int]]
) -> None:
    catalog.create_database("db", exist_ok=True)
    name = f"t{next(_names)}"
    table = catalog.create_table(f"db.{name}", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    model: dict[int, dict[str, Any]] = {}
    for batch, corrupt, seed in batches:
        extra = corrupt and any(row["addr"] is not None for _, row in batch)
        rows = rows_of(batch, extra, seed)
        data = KINDS[kind](rows, extra)
        try:
            if kind == "sql":
                execute(catalog, data.replace("INTO t ", f"INTO {name} "), database="db")
            else:
                table.write(data)
        except LsmlakeError as e:
            assert extra, f"{kind}: refused a good batch: {e}"
            assert f"addr.{EXTRA}" in str(e) or "addr: ROW value has 3 field(s)" in str(e)
            event("refused")
        else:
            assert not extra, f"{kind}: accepted an addr with a field the table lacks"
            model.update({r["id"]: r for r in rows})
            event("written")
        got = sorted(table.read().to_pylist(), key=lambda r: r["id"])
        assert got == [model[k] for k in sorted(model)]
