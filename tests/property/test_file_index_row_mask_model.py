"""Random tables with range-bitmap, bitmap and BSI indexes: a filtered read using them (files skipped,
rows masked) equals one without them and a model, with nulls, -0.0, NaN, decimals, NOT / NOT IN / !=,
deletion vectors on and off, deletes after the indexes were written, and aggregating primary-key tables
whose level-0 rows a merge-on-read folds into deeper files."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import lsmlake

DECIMAL = pa.decimal128(10, 2)
SCHEMA = pa.schema(
    [("k", pa.int32()), ("v", pa.int64()), ("s", pa.string()), ("x", pa.float64()), ("d", DECIMAL)]
)
INDEXES = {
    "file-index.range-bitmap.columns": "v,s,x,d",
    "file-index.bitmap.columns": "s,x",
    "file-index.bsi.columns": "v,d",
}
VALUES = st.one_of(st.none(), st.integers(-4, 12))
STRINGS = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "zz", "é"]))
FLOATS = st.one_of(st.none(), st.sampled_from([-2.5, -0.0, 0.0, 1.0, 3.25, float("nan")]))
DECIMALS = st.one_of(st.none(), st.sampled_from(["-1.50", "0.00", "0.01", "2.25", "99.99"]).map(Decimal))
ROWS = st.lists(st.tuples(st.integers(0, 15), VALUES, STRINGS, FLOATS, DECIMALS), min_size=1, max_size=40)
COMPARE = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
COMPARISONS = st.one_of(
    st.tuples(st.just("v"), COMPARE, st.integers(-6, 14)),
    st.tuples(st.just("s"), COMPARE, st.sampled_from(["", "a", "ab", "c", "é"])),
    st.tuples(st.just("x"), COMPARE, st.sampled_from([-0.0, 0.0, 1.0, 2.0, -2.5])),
    st.tuples(st.just("d"), COMPARE, st.sampled_from(["0", "0.01", "2.25", "-3", "0.005"]).map(Decimal)),
)
LEAVES = st.one_of(
    COMPARISONS,
    COMPARISONS.map(lambda leaf: ("NOT", "", leaf)),
    st.tuples(st.sampled_from(["v", "s", "x", "d"]), st.sampled_from(["IS NULL", "IS NOT NULL"]), st.none()),
    st.tuples(
        st.just("v"), st.sampled_from(["IN", "NOT IN"]), st.lists(st.integers(-5, 13), min_size=1, max_size=3)
    ),
    st.tuples(
        st.just("s"),
        st.sampled_from(["IN", "NOT IN"]),
        st.lists(st.sampled_from(["", "b", "zz"]), min_size=1),
    ),
    st.tuples(st.just("v"), st.just("BETWEEN"), st.tuples(st.integers(-5, 13), st.integers(-5, 13))),
)
FILTERS = st.one_of(
    LEAVES.map(lambda leaf: [leaf]),
    st.tuples(LEAVES, LEAVES, st.sampled_from(["AND", "OR"])).map(lambda t: [t[0], t[2], t[1]]),
)


def _literal(column: str, value: Any) -> str:
    return repr(value) if column == "s" else str(value)


def _sql(leaf: tuple[str, str, Any]) -> str:
    column, op, lit = leaf
    if column == "NOT":
        return f"NOT ({_sql(lit)})"
    if op in ("IS NULL", "IS NOT NULL"):
        return f"{column} {op}"
    if op in ("IN", "NOT IN"):
        return f"{column} {op} ({', '.join(_literal(column, v) for v in lit)})"
    if op == "BETWEEN":
        return f"{column} BETWEEN {lit[0]} AND {lit[1]}"
    return f"{column} {op} {_literal(column, lit)}"


def _model(leaf: tuple[str, str, Any]) -> pc.Expression:
    column, op, lit = leaf
    if column == "NOT":
        return ~_model(lit)  # NOT of an unknown comparison (a null) stays unknown: the row is not returned
    f = pc.field(column)
    if column == "d" and isinstance(lit, Decimal):
        lit = pa.scalar(lit, pa.decimal128(12, 3))
    if op == "IS NULL":
        return f.is_null()
    if op == "IS NOT NULL":
        return f.is_valid()
    if op == "IN":
        return f.isin(lit)
    if op == "NOT IN":
        return f.is_valid() & ~f.isin(lit)  # SQL: NULL NOT IN (...) is unknown
    if op == "BETWEEN":
        return (f >= lit[0]) & (f <= lit[1])
    return {"=": f == lit, "!=": f != lit, "<": f < lit, "<=": f <= lit, ">": f > lit, ">=": f >= lit}[op]


def _filter(parts: list[Any]) -> tuple[str, pc.Expression]:
    if len(parts) == 1:
        return _sql(parts[0]), _model(parts[0])
    a, how, b = parts
    text = f"({_sql(a)}) {how} ({_sql(b)})"
    return text, (_model(a) & _model(b)) if how == "AND" else (_model(a) | _model(b))


Row = tuple[int, int | None, str | None, float | None, Decimal | None]


def _table(rows: list[Row]) -> pa.Table:
    return pa.table([list(c) for c in zip(*rows, strict=True)], schema=SCHEMA)


def _sorted(t: pa.Table) -> list[str]:
    # rows as text: None sorts, and -0.0 and 0.0 stay different rows (a read must keep each one's sign)
    return sorted(repr((r["k"], r["v"], r["s"], r["x"], r["d"])) for r in t.to_pylist())


KINDS = {
    "append": {},
    "pk": {"bucket": "1"},
    "pk-dv": {"deletion-vectors.enabled": "true", "bucket": "1"},
    "pk-dv-agg": {
        "deletion-vectors.enabled": "true",
        "bucket": "1",
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
    },
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(
        st.tuples(ROWS, st.sampled_from(["write", "level 0", "compact"])), min_size=1, max_size=4
    ),
    filters=st.lists(FILTERS, min_size=1, max_size=4),
    kind=st.sampled_from(sorted(KINDS)),
    threshold=st.sampled_from(["1 mb", "1 b"]),
    delete_below=st.one_of(st.none(), st.integers(0, 20)),
)
@example(  # a level-0 row summed into a deeper file none of whose own rows passes the filter
    batches=[
        ([(1, 10, "a", 1.0, None), (2, 12, "b", 2.0, None)], "compact"),
        ([(1, 4, None, None, None)], "level 0"),
    ],
    filters=[[("v", "=", 14)], [("v", ">", 13)]],
    kind="pk-dv-agg",
    threshold="1 mb",
    delete_below=None,
)
def test_indexed_reads_equal_unindexed_reads_and_the_model(
    batches: list[tuple[list[Row], str]],
    filters: list[list[Any]],
    kind: str,
    threshold: str,
    delete_below: int | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        catalog = lsmlake.Catalog(tmp)
        catalog.create_database("db")
        options = {**INDEXES, "file-index.in-manifest-threshold": threshold, **KINDS[kind]}
        pk = kind.startswith("pk")
        table = catalog.create_table(
            "db.t", schema=SCHEMA, primary_key=["k"] if pk else None, options=options
        )
        for batch, how in batches:
            # "level 0": the rows stay there (write-only), and a merge-on-read folds them into deeper files
            (table.with_options({"write-only": "true"}) if how == "level 0" else table).write(_table(batch))
            if how == "compact" and pk:
                table.compact(full=True)
        if delete_below is not None and kind in ("pk", "pk-dv"):  # after the indexes were written
            table.delete(f"k < {delete_below}")
        views = [table]
        if kind.startswith("pk-dv"):
            views.append(table.with_options({"deletion-vectors.merge-on-read": "true"}))
        for view in views:
            full = view.read()
            unindexed = view.with_options({"file-index.read.enabled": "false"})
            for parts in filters:
                text, model = _filter(parts)
                expected = _sorted(full.filter(model))
                assert _sorted(view.read(filter=text)) == expected, text
                assert _sorted(unindexed.read(filter=text)) == expected, text
