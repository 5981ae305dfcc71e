"""Random tables with range-bitmap, bitmap and BSI indexes: a filtered read using them (files skipped,
rows masked) equals one without them and a model, with nulls, -0.0, NaN, deletion vectors on and off."""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.int64()), ("s", pa.string()), ("x", pa.float64())])
INDEXES = {
    "file-index.range-bitmap.columns": "v,s,x",
    "file-index.bitmap.columns": "s",
    "file-index.bsi.columns": "v",
}
VALUES = st.one_of(st.none(), st.integers(-4, 12))
STRINGS = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "zz", "é"]))
FLOATS = st.one_of(st.none(), st.sampled_from([-2.5, -0.0, 0.0, 1.0, 3.25, float("nan")]))
ROWS = st.lists(st.tuples(st.integers(0, 40), VALUES, STRINGS, FLOATS), min_size=1, max_size=40)
LEAVES = st.one_of(
    st.tuples(st.just("v"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.integers(-6, 14)),
    st.tuples(st.just("s"), st.sampled_from(["=", "<", ">=", ">"]), st.sampled_from(["", "a", "ab", "c"])),
    st.tuples(
        st.just("x"), st.sampled_from(["=", "<", "<=", ">", ">="]), st.sampled_from([-0.0, 0.0, 1.0, 2.0])
    ),
    st.tuples(st.sampled_from(["v", "s", "x"]), st.sampled_from(["IS NULL", "IS NOT NULL"]), st.none()),
    st.tuples(st.just("v"), st.just("IN"), st.lists(st.integers(-5, 13), min_size=1, max_size=3)),
    st.tuples(st.just("v"), st.just("BETWEEN"), st.tuples(st.integers(-5, 13), st.integers(-5, 13))),
)
FILTERS = st.one_of(
    LEAVES.map(lambda leaf: [leaf]),
    st.tuples(LEAVES, LEAVES, st.sampled_from(["AND", "OR"])).map(lambda t: [t[0], t[2], t[1]]),
)


def _sql(leaf: tuple[str, str, Any]) -> str:
    column, op, lit = leaf
    if op in ("IS NULL", "IS NOT NULL"):
        return f"{column} {op}"
    if op == "IN":
        return f"{column} IN ({', '.join(map(str, lit))})"
    if op == "BETWEEN":
        return f"{column} BETWEEN {lit[0]} AND {lit[1]}"
    return f"{column} {op} {repr(lit) if column == 's' else lit}"


def _model(leaf: tuple[str, str, Any]) -> pc.Expression:
    column, op, lit = leaf
    f = pc.field(column)
    if op == "IS NULL":
        return f.is_null()
    if op == "IS NOT NULL":
        return f.is_valid()
    if op == "IN":
        return f.isin(lit)
    if op == "BETWEEN":
        return (f >= lit[0]) & (f <= lit[1])
    return {"=": f == lit, "!=": f != lit, "<": f < lit, "<=": f <= lit, ">": f > lit, ">=": f >= lit}[op]


def _filter(parts: list[Any]) -> tuple[str, pc.Expression]:
    if len(parts) == 1:
        return _sql(parts[0]), _model(parts[0])
    a, how, b = parts
    text = f"({_sql(a)}) {how} ({_sql(b)})"
    return text, (_model(a) & _model(b)) if how == "AND" else (_model(a) | _model(b))


def _table(rows: list[tuple[int, int | None, str | None, float | None]]) -> pa.Table:
    return pa.table([list(c) for c in zip(*rows, strict=True)], schema=SCHEMA)


def _sorted(t: pa.Table) -> list[str]:
    # rows as text: None sorts, and -0.0 and 0.0 stay different rows (a read must keep each one's sign)
    return sorted(repr((r["k"], r["v"], r["s"], r["x"])) for r in t.to_pylist())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(ROWS, min_size=1, max_size=4),
    filters=st.lists(FILTERS, min_size=1, max_size=4),
    kind=st.sampled_from(["append", "pk-dv", "pk"]),
    threshold=st.sampled_from(["1 mb", "1 b"]),
    compact=st.booleans(),
)
def test_indexed_reads_equal_unindexed_reads_and_the_model(
    batches: list[list[tuple[int, int | None, str | None, float | None]]],
    filters: list[list[Any]],
    kind: str,
    threshold: str,
    compact: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        catalog = lsmlake.Catalog(tmp)
        catalog.create_database("db")
        options = {**INDEXES, "file-index.in-manifest-threshold": threshold}
        if kind == "pk-dv":
            options |= {"deletion-vectors.enabled": "true", "bucket": "1"}
        elif kind == "pk":
            options |= {"bucket": "1"}
        table = catalog.create_table(
            "db.t", schema=SCHEMA, primary_key=["k"] if kind != "append" else None, options=options
        )
        for batch in batches:
            table.write(_table(batch))
            if compact and kind != "append":
                table.compact()
        full = table.read()
        unindexed = table.with_options({"file-index.read.enabled": "false"})
        for parts in filters:
            text, model = _filter(parts)
            expected = _sorted(full.filter(model))
            assert _sorted(table.read(filter=text)) == expected, text
            assert _sorted(unindexed.read(filter=text)) == expected, text
