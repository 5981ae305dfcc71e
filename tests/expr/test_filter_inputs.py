"""Filters as pyarrow expressions, DNF lists and nested field paths select exactly what pyarrow selects."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.errors import InvalidFilterError, NoSuchColumnError
from lsmlake.expr import ArrowPredicate, Compare

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("addr", pa.struct([("city", pa.string())])),
    ]
)
ROWS = pa.table(
    {
        "id": list(range(60)),
        "s": [None if i % 7 == 0 else f"s{i % 5}" for i in range(60)],
        "f": [math.nan if i % 11 == 0 else None if i % 6 == 0 else i / 8 for i in range(60)],
        "addr": [None if i % 9 == 0 else {"city": None if i % 4 == 0 else f"c{i % 3}"} for i in range(60)],
    },
    schema=SCHEMA,
)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"write-only": "true"})
    for k in range(3):
        t.write(ROWS.slice(k * 20, 20))
    return t


def _ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


_settings = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def arrow_leaf(draw: st.DrawFn) -> pc.Expression:
    kind = draw(st.sampled_from(["id", "s", "f", "in", "null", "city", "starts"]))
    op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
    cmp = {
        "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }[op]
    if kind == "id":
        return cmp(pc.field("id"), draw(st.integers(-5, 65)))  # type: ignore[no-any-return]
    if kind == "s":
        return cmp(pc.field("s"), draw(st.sampled_from(["s0", "s3", "s"])))  # type: ignore[no-any-return]
    if kind == "f":
        return cmp(pc.field("f"), draw(st.sampled_from([0.5, 3.0, 1.5])))  # type: ignore[no-any-return]
    if kind == "in":
        col = draw(st.sampled_from(["id", "s", "f"]))
        values = {"id": [1, 2, 30, None], "s": ["s1", None, "s4"], "f": [0.5, math.nan, None]}[col]
        chosen = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
        if all(v is None for v in chosen):
            chosen.append(values[0])  # pyarrow cannot type a value set of nulls only
        return pc.field(col).isin(chosen)
    if kind == "null":
        return pc.field(draw(st.sampled_from(["s", "f"]))).is_null()
    if kind == "starts":
        return pc.starts_with(pc.field("s"), "s2")
    return cmp(pc.field("addr", "city"), draw(st.sampled_from(["c0", "c2"])))  # type: ignore[no-any-return]


@st.composite
def arrow_filter(draw: st.DrawFn) -> pc.Expression:
    parts = draw(st.lists(arrow_leaf(), min_size=1, max_size=3))
    e = parts[0]
    for p in parts[1:]:
        e = (e & p) if draw(st.booleans()) else (e | p)
    return ~e if draw(st.booleans()) else e


@_settings
@given(expression=arrow_filter())
def test_a_pyarrow_expression_selects_what_pyarrow_selects(
    table: lsmlake.Table, expression: pc.Expression
) -> None:
    assert _ids(table.read(filter=expression)) == _ids(ROWS.filter(expression))


@st.composite
def dnf(draw: st.DrawFn) -> list[list[tuple[str, str, object]]]:
    def term() -> tuple[str, str, object]:
        col = draw(st.sampled_from(["id", "s", "addr.city"]))
        op = draw(st.sampled_from(["=", "!=", "<", ">=", "in", "not in"]))
        pool = {"id": [3, 17, 40], "s": ["s1", "s3"], "addr.city": ["c1", "c2"]}[col]
        value: object = (
            draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2))
            if "in" in op
            else draw(st.sampled_from(pool))
        )
        return (col, op, value)

    return [[term() for _ in range(draw(st.integers(1, 2)))] for _ in range(draw(st.integers(1, 2)))]


def _pyarrow_dnf(filters: list[list[tuple[str, str, object]]]) -> pc.Expression:
    nested = [[(tuple(c.split(".")) if "." in c else c, op, v) for c, op, v in conj] for conj in filters]
    return pq.filters_to_expression(nested)  # type: ignore[arg-type]


@_settings
@given(filters=dnf())
def test_dnf_selects_what_pyarrow_filters_select(
    table: lsmlake.Table, filters: list[list[tuple[str, str, object]]]
) -> None:
    expected = _ids(ROWS.filter(_pyarrow_dnf(filters)))
    assert _ids(table.read(filter=filters)) == expected
    if len(filters) == 1:
        assert _ids(table.read(filter=filters[0])) == expected  # a flat list is one conjunction


def test_nested_fields_by_sql_dnf_and_expression_agree(table: lsmlake.Table) -> None:
    expected = _ids(ROWS.filter(pc.field("addr", "city") == "c1"))
    assert expected
    for f in (
        "addr.city = 'c1'",
        [("addr.city", "=", "c1")],
        [(("addr", "city"), "==", "c1")],
        pc.field("addr", "city") == "c1",
    ):
        assert _ids(table.read(filter=f)) == expected
    assert _ids(table.read(filter="addr.city IS NULL")) == _ids(
        ROWS.filter(pc.field("addr", "city").is_null())
    )


def test_translated_conjuncts_prune_files(table: lsmlake.Table) -> None:
    scan = table.scan(filter=(pc.field("id") < 10) & (pc.field("addr", "city") == "c1"))
    parts = scan.predicate.children  # type: ignore[union-attr]
    assert parts[0] == Compare("id", "<", 10) and isinstance(parts[1], ArrowPredicate)
    assert scan.plan_summary["files"] < table.scan().plan_summary["files"]
    assert "id < 10" in table.explain(filter=[("id", "<", 10)])


@pytest.mark.parametrize(
    ("bad", "error", "needle"),
    [
        ([("nope", "=", 1)], NoSuchColumnError, "nope"),
        ([("id", "~", 1)], InvalidFilterError, "'~'"),
        ([], InvalidFilterError, "at least one"),
        ([("id", "in", 5)], InvalidFilterError, "list of values"),
        ([("id", "=")], InvalidFilterError, "(column, op, value)"),
        (pc.field("nope") > 1, NoSuchColumnError, "nope"),
        (pc.field("id") + 1, InvalidFilterError, "not a boolean"),
        (pc.field("s") > 1, InvalidFilterError, "s > 1"),
        (12, InvalidFilterError, "int"),
        ("addr.nope = 1", InvalidFilterError, "addr.nope"),
    ],
)
def test_bad_filters_name_the_problem(
    table: lsmlake.Table, bad: object, error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=None) as info:
        table.read(filter=bad)  # type: ignore[arg-type]
    assert needle in str(info.value)


def test_delete_and_update_take_expressions(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    t.write(ROWS)
    t.delete(pc.field("id") >= 50)
    t.update([("addr.city", "=", "c0")], {"s": "zz"})
    got = t.read()
    assert max(got.column("id").to_pylist()) == 49
    zz = ROWS.filter((pc.field("id") < 50) & (pc.field("addr", "city") == "c0"))
    assert _ids(got.filter(pc.field("s") == "zz")) == _ids(zz)
