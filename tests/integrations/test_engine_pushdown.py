"""Polars lazy scans and DuckDB scans give what the engine computes over ``table.read()``, for random
filters and projections, and plan fewer files when the filter prunes."""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import lsmlake
import lsmlake.duckdb
from lsmlake.polars import PolarsSource

COLUMNS = ["id", "p", "n", "f", "b", "addr"]
_settings = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# (SQL for DuckDB, the same condition in Polars)
_OPS = ["=", "!=", "<", "<=", ">", ">="]
_POLARS_OPS = {
    "=": pl.Expr.__eq__,
    "!=": pl.Expr.__ne__,
    "<": pl.Expr.__lt__,
    "<=": pl.Expr.__le__,
    ">": pl.Expr.__gt__,
    ">=": pl.Expr.__ge__,
}


@st.composite
def leaf(draw: st.DrawFn) -> tuple[str, pl.Expr]:
    kind = draw(st.sampled_from(["id", "n", "p", "f", "b", "null", "city"]))
    op = draw(st.sampled_from(_OPS))
    if kind in ("id", "n"):
        v = draw(st.integers(-20, 260))
        return f"{kind} {op} {v}", _POLARS_OPS[op](pl.col(kind), v)
    if kind == "p":
        v = draw(st.sampled_from(["p0", "p1", "p2", "p3", "p"]))
        return f"p {op} '{v}'", _POLARS_OPS[op](pl.col("p"), v)
    if kind == "f":
        v = draw(st.sampled_from([-1.0, 0.0, 0.5, 2.25]))
        return f"f {op} {v}", _POLARS_OPS[op](pl.col("f"), v)
    if kind == "b":
        return "b", pl.col("b")
    if kind == "null":
        c = draw(st.sampled_from(["p", "n", "b"]))
        return f"{c} IS NULL", pl.col(c).is_null()
    v = draw(st.sampled_from(["c0", "c1"]))
    return f"addr.city {op} '{v}'", _POLARS_OPS[op](pl.col("addr").struct.field("city"), v)


@st.composite
def condition(draw: st.DrawFn) -> tuple[str, pl.Expr]:
    parts = draw(st.lists(leaf(), min_size=1, max_size=3))
    sql, expr = parts[0]
    for s, e in parts[1:]:
        if draw(st.booleans()):
            sql, expr = f"({sql}) AND ({s})", expr & e
        else:
            sql, expr = f"({sql}) OR ({s})", expr | e
    if draw(st.booleans()):
        sql, expr = f"NOT ({sql})", ~expr
    return sql, expr


projection = st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=4, unique=True)


@_settings
@given(cond=condition(), cols=projection, limit=st.none() | st.integers(0, 30))
def test_polars_lazy_scan_equals_polars_over_read(
    table: lsmlake.Table, cond: tuple[str, pl.Expr], cols: list[str], limit: int | None
) -> None:
    _, expr = cond
    full = pl.from_arrow(table.read())
    assert isinstance(full, pl.DataFrame)
    expected = full.filter(expr).select(cols)
    got = PolarsSource(table).lazy().filter(expr).select(cols).collect()
    if limit is None:
        assert_frame_equal(got, expected, check_row_order=False)
    else:
        limited = PolarsSource(table).lazy().filter(expr).select(cols).head(limit).collect()
        assert limited.height == min(limit, expected.height)
        assert limited.join(expected, on=cols, how="anti", nulls_equal=True).height == 0 or "f" in cols


@_settings
@given(cond=condition(), cols=projection)
def test_duckdb_scan_equals_duckdb_over_read(
    table: lsmlake.Table, cond: tuple[str, pl.Expr], cols: list[str]
) -> None:
    sql, _ = cond
    con = duckdb.connect()
    rows = table.read()
    con.register("expected_rows", rows)
    table.to_duckdb(con, "t")
    select = ", ".join(cols)
    expected = con.sql(f"SELECT {select} FROM expected_rows WHERE {sql} ORDER BY ALL").to_arrow_table()
    got = con.sql(f"SELECT {select} FROM t WHERE {sql} ORDER BY ALL").to_arrow_table()
    assert got.num_rows == expected.num_rows
    assert_frame_equal(pl.from_arrow(got), pl.from_arrow(expected))  # type: ignore[arg-type]


def _full_files(table: lsmlake.Table) -> int:
    files = table.scan().plan_summary["files"]
    assert files >= 6
    return int(files)


def test_polars_pushes_columns_filter_and_limit_into_planning(table: lsmlake.Table) -> None:
    source = PolarsSource(table)
    got = source.lazy().filter((pl.col("id") < 20) & (pl.col("f") > 0)).select("p").collect()
    scan = source.scans[-1]
    assert str(scan.predicate) == "id < 20"  # the float comparison stays with Polars (its NaN order)
    assert scan.plan_summary["files"] < _full_files(table)
    assert set(scan.context.columns) == {"p", "f", "id"}
    full = pl.from_arrow(table.read())
    assert isinstance(full, pl.DataFrame)
    assert_frame_equal(
        got, full.filter((pl.col("id") < 20) & (pl.col("f") > 0)).select("p"), check_row_order=False
    )
    assert source.lazy().head(3).collect().height == 3
    assert source.scans[-1].limit == 3


def test_duckdb_pushes_columns_and_filters_into_planning(table: lsmlake.Table) -> None:
    con = duckdb.connect()
    d = table.to_duckdb(con, "t")
    n = con.sql("SELECT count(p) FROM t WHERE id >= 200 AND addr.city = 'c1'").fetchall()
    scan = d.scans[-1]
    assert scan.plan_summary["files"] < _full_files(table)
    assert "id >= 200" in str(scan.predicate)
    assert set(scan.context.columns) == {"p"}  # DuckDB asks for the projected columns only
    expected = table.read(filter="id >= 200 AND addr.city = 'c1'", columns=["p"])
    assert n == [(expected.column("p").drop_null().__len__(),)]
    assert lsmlake.duckdb.query(con, table, "SELECT max(id) AS m FROM t WHERE id < 50").to_pylist() == [
        {"m": int(pa.compute.max(table.read(filter="id < 50").column("id")).as_py())}
    ]
