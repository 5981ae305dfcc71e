"""Predicates: SQL parsing, Arrow evaluation vs a Python reference, stats pruning, key splitting."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lsmlake.core.binary_row import Timestamp, serialize_row
from lsmlake.core.types import DataField, DataType, parse_sql_type, to_arrow_field
from lsmlake.errors import CorruptFileError, InvalidFilterError, NoSuchColumnError
from lsmlake.expr import (
    And,
    ColumnStats,
    Compare,
    In,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Predicate,
    StartsWith,
    and_,
    between,
    coerce_literal,
    evaluate,
    filter_table,
    might_match,
    or_,
    parse_filter,
    split_by_fields,
)
from lsmlake.metadata.stats import EMPTY_ROW, SimpleStats, stats_from_simple

COLUMNS = {
    "id": "BIGINT",
    "age": "INT",
    "name": "STRING",
    "dt": "DATE",
    "ts": "TIMESTAMP(3)",
    "amount": "DECIMAL(10, 2)",
    "f": "DOUBLE",
    "b": "BOOLEAN",
    "ltz": "TIMESTAMP(6) WITH LOCAL TIME ZONE",
    "bin": "BYTES",
    "tm": "TIME",
    "Mixed Case": "INT",
    "arr": "INT",
}
FIELDS = [DataField(i, n, parse_sql_type(t)) for i, (n, t) in enumerate(COLUMNS.items())]


def P(text: str) -> Predicate | None:
    return parse_filter(text, FIELDS)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("age > 3 AND name = 'x'", And((Compare("age", ">", 3), Compare("name", "=", "x")))),
        ("id BETWEEN 1 AND 5", And((Compare("id", ">=", 1), Compare("id", "<=", 5)))),
        ("age IN (1, 2)", In("age", (1, 2))),
        ("age NOT IN (1, NULL)", Not(In("age", (1, None)))),
        ("name IS NULL", IsNull("name")),
        ("name IS NOT NULL", IsNotNull("name")),
        ("NOT (age = 1)", Not(Compare("age", "=", 1))),
        ("NOT (age = 1 OR age <> 2)", Not(Or((Compare("age", "=", 1), Compare("age", "!=", 2))))),
        ("dt = DATE '2024-01-01'", Compare("dt", "=", dt.date(2024, 1, 1))),
        ("dt >= '2024-02-29'", Compare("dt", ">=", dt.date(2024, 2, 29))),
        ("ts >= TIMESTAMP '2024-01-01 00:00:00'", Compare("ts", ">=", Timestamp(1704067200000))),
        ("ts < '2024-01-01 00:00:00.000000001'", Compare("ts", "<", Timestamp(1704067200000, 1))),
        ("ltz = '1970-01-01 08:00:00+08:00'", Compare("ltz", "=", Timestamp(0))),
        ("amount > 1.5", Compare("amount", ">", Decimal("1.50"))),
        ("amount > 1.555", Compare("amount", ">", Decimal("1.555"))),
        ("amount = 3", Compare("amount", "=", Decimal("3.00"))),
        ("f > 1e3", Compare("f", ">", 1000.0)),
        ("f < -2", Compare("f", "<", -2.0)),
        ("name LIKE 'ab%'", StartsWith("name", "ab")),
        ("name LIKE 'ab%%'", StartsWith("name", "ab")),
        ("name LIKE 'ab'", Compare("name", "=", "ab")),
        ("name NOT LIKE 'ab%'", Not(StartsWith("name", "ab"))),
        ("3 < age", Compare("age", ">", 3)),
        ("-3 >= age", Compare("age", "<=", -3)),
        ("'x' = name", Compare("name", "=", "x")),
        ("age == 1", Compare("age", "=", 1)),
        ("b", Compare("b", "=", True)),
        ("b = FALSE", Compare("b", "=", False)),
        ("b IS TRUE", And((IsNotNull("b"), Compare("b", "=", True)))),
        ("NOT b", Not(Compare("b", "=", True))),
        ("bin = 'abc'", Compare("bin", "=", b"abc")),
        ("tm < TIME '12:30:00'", Compare("tm", "<", dt.time(12, 30))),
        ("AGE = 1", Compare("age", "=", 1)),
        ('"Mixed Case" = 1', Compare("Mixed Case", "=", 1)),
        ("age = CAST('7' AS INT)", Compare("age", "=", 7)),
        ("age = 1 OR age = 2 OR age = 3", Or(tuple(Compare("age", "=", i) for i in (1, 2, 3)))),
        (
            "(age = 1 AND id = 2) AND name = 'a'",
            And((Compare("age", "=", 1), Compare("id", "=", 2), Compare("name", "=", "a"))),
        ),
        ("age = NULL", Compare("age", "=", None)),
        (
            "amount > -123456789012345678901234567890.5",
            Compare("amount", ">", Decimal("-123456789012345678901234567890.5")),
        ),
    ],
)
def test_parse(text: str, expected: Predicate) -> None:
    got = P(text)
    assert got == expected
    assert got is not None and type(got) is type(expected)
    again = P(str(got))  # str() is SQL that parses back to the same tree
    assert again == got


def test_parse_binds_types_and_passes_predicates_through() -> None:
    p = P("amount > 1.5")
    assert isinstance(p, Compare) and p.dtype is not None and p.dtype.root == "DECIMAL"
    bound = parse_filter(And((Compare("AGE", ">", "3"), In("dt", ("2024-01-01",)))), FIELDS)
    assert bound == And((Compare("age", ">", 3), In("dt", (dt.date(2024, 1, 1),))))
    assert parse_filter(None, FIELDS) is None and parse_filter("  ", FIELDS) is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nope = 1", "nope"),
        ("age = 'x'", "age"),
        ("age = 1.5", "age"),
        ("age = 99999999999", "age"),
        ("dt = 5", "dt"),
        ("dt = '2024-13-01'", "dt"),
        ("ts = 'yesterday'", "ts"),
        ("name = 5", "name"),
        ("age + 1 = 2", "age + 1"),
        ("age = id", "id"),
        ("t.age = 1", "t.age"),
        ("age IN (SELECT 1)", "SELECT"),
        ("name LIKE '%a'", "%a"),
        ("name LIKE 'a_c%'", "a_c%"),
        ("age LIKE 'a%'", "age"),
        ("age > 3 AND", "age > 3 AND"),
        ("1 = 1", "1"),
        ("age", "age"),
        ('"AGE" = 1', "AGE"),
        ("SELECT 1", "SELECT"),
        ("(age = ", "at line 1, column 6 near '='"),
        ("age = 1 )", "Unexpected token at line 1, column 9 near ')'"),
        ("age = 1 AND\n name >", "missing for GT at line 2, column 7 near '>'"),
        ("name = 'abc", "Error tokenizing"),
    ],
)
def test_parse_errors_name_the_problem(text: str, needle: str) -> None:
    expected = NoSuchColumnError if text.startswith(("nope", '"AGE"')) else InvalidFilterError
    with pytest.raises(expected) as info:
        P(text)
    message = str(info.value)
    assert needle in message and "\x1b" not in message and "<class" not in message
    assert isinstance(info.value, ValueError)  # `except ValueError` still catches it


def test_coerce_literal_conventions() -> None:
    t = parse_sql_type
    assert coerce_literal("12.5", t("DECIMAL(5, 2)")) == Decimal("12.50")
    assert coerce_literal(2, t("DECIMAL(38, 10)")).as_tuple().exponent == -10
    ts = coerce_literal(dt.datetime(2024, 1, 1, 0, 0, 0, 5), t("TIMESTAMP(6)"))
    assert ts == Timestamp(1704067200000, 5000)
    assert coerce_literal(dt.date(1970, 1, 2), t("TIMESTAMP(3)")) == Timestamp(86_400_000)
    assert coerce_literal("true", t("BOOLEAN")) is True
    assert coerce_literal("nan", t("DOUBLE")) != coerce_literal("nan", t("DOUBLE"))
    assert coerce_literal(None, t("INT")) is None
    with pytest.raises(ValueError, match="'col'"):
        coerce_literal(True, t("INT"), column="col")
    with pytest.raises(ValueError, match="not supported"):
        coerce_literal([1], DataType("ARRAY", element=t("INT")), column="col")


def test_fields_and_combinators() -> None:
    p = P("age > 1 AND (name = 'a' OR NOT dt IS NULL)")
    assert p is not None and p.fields() == {"age", "name", "dt"}
    a, b, c = Compare("a", "=", 1), IsNull("b"), StartsWith("c", "x")
    assert (a & b) & c == And((a, b, c))
    assert (a | b) | c == Or((a, b, c))
    assert ~~a == a and ~a == Not(a)
    assert and_(None, a, None) == a and and_() is None
    assert or_(a) == a
    assert between("a", 1, 2) == And((Compare("a", ">=", 1), Compare("a", "<=", 2)))
    with pytest.raises(ValueError):
        Compare("a", "~", 1)
    with pytest.raises(ValueError):
        And(())
    assert hash(Compare("a", "=", Decimal("1.0"))) == hash(Compare("a", "=", Decimal("1.0")))


# --------------------------------------------------------------------------- Arrow vs Python reference


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    schema = pa.schema([to_arrow_field(f) for f in GEN_FIELDS])
    return pa.Table.from_pylist(rows, schema=schema)


UTC = dt.timezone.utc
GEN = {
    "i": ("INT", st.integers(-3, 3)),
    "f": ("DOUBLE", st.sampled_from([-1.5, -0.0, 0.0, 1.0, 2.5, math.nan, math.inf, -math.inf])),
    "s": ("STRING", st.text("ab\u00e9\U0001f600", max_size=3)),
    "d": ("DECIMAL(6, 2)", st.sampled_from([Decimal(x) for x in ("-1.50", "0.00", "1.55", "1.56", "2.00")])),
    "dt": ("DATE", st.dates(dt.date(2023, 12, 30), dt.date(2024, 1, 2))),
    "ts": ("TIMESTAMP(6)", st.datetimes(dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 5))),
    "z": (
        "TIMESTAMP(3) WITH LOCAL TIME ZONE",
        st.integers(0, 3).map(lambda n: dt.datetime(2024, 1, 1, 0, 0, 0, n * 1000, tzinfo=UTC)),
    ),
    "g": ("FLOAT", st.sampled_from([0.1, -0.0, 0.5, math.nan])),
    "tm": ("TIME", st.integers(0, 3).map(lambda n: dt.time(12, 0, 0, n * 1000))),
    "b": ("BOOLEAN", st.booleans()),
    "bi": ("BYTES", st.binary(max_size=2)),
}
GEN_FIELDS = [DataField(i, n, parse_sql_type(t)) for i, (n, (t, _)) in enumerate(GEN.items())]
EXTRA_LITERALS = {
    "d": st.sampled_from([Decimal("1.555"), Decimal("-1.5"), Decimal("100")]),
    "ts": st.integers(0, 6000).map(lambda n: Timestamp(1704067200000, n)),
    "z": st.integers(0, 4_000_000).map(lambda n: Timestamp(1704067200000 + n // 1_000_000, n % 1_000_000)),
    "f": st.floats(-3, 3),
    "i": st.integers(-5, 5),
    "g": st.sampled_from([0.1, 0.10000000149011612, 0.5]),
    "tm": st.integers(0, 4000).map(lambda n: dt.time(12, 0, 0, n)),
}


def _literal(col: str) -> st.SearchStrategy[Any]:
    base = GEN[col][1]
    return base | EXTRA_LITERALS[col] if col in EXTRA_LITERALS else base


@st.composite
def leaves(draw: st.DrawFn) -> Predicate:
    col = draw(st.sampled_from(list(GEN)))
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "null", "notnull", "like", "nulllit"]))
    if kind == "cmp":
        return Compare(col, draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="])), draw(_literal(col)))
    if kind == "in":
        return In(col, tuple(draw(st.lists(_literal(col) | st.none(), min_size=1, max_size=4))))
    if kind == "like" and col == "s":
        return StartsWith("s", draw(st.text("ab\u00e9\U0001f600", max_size=2)))
    if kind == "nulllit":
        return Compare(col, "<", None)
    return IsNull(col) if kind == "null" else IsNotNull(col)


predicates = st.recursive(
    leaves(),
    lambda kids: st.one_of(
        st.lists(kids, min_size=1, max_size=3).map(lambda cs: And(tuple(cs))),
        st.lists(kids, min_size=1, max_size=3).map(lambda cs: Or(tuple(cs))),
        kids.map(Not),
    ),
    max_leaves=6,
)


def _rows(min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[list[dict[str, Any]]]:
    row = st.fixed_dictionaries({n: st.none() | s for n, (_, s) in GEN.items()})
    return st.lists(row, min_size=min_size, max_size=max_size)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(), pred=predicates)
def test_arrow_filters_match_python_reference(rows: list[dict[str, Any]], pred: Predicate) -> None:
    """The Acero expression (``to_arrow``) and the eager mask (``filter_table``) agree with the
    row-by-row reference, in two chunks so chunked masks are exercised."""
    bound = parse_filter(pred, GEN_FIELDS)
    assert bound is not None
    one = _table(rows).append_column("__row", pa.array(range(len(rows)), pa.int64()))
    table = pa.concat_tables([one.slice(0, len(rows) // 2), one.slice(len(rows) // 2)])
    as_read = one.drop_columns(["__row"]).to_pylist()  # the values exactly as Arrow holds them
    expected = [i for i, r in enumerate(as_read) if evaluate(bound, r) is True]
    # SQL: NOT p holds exactly where p is false (never where it is unknown)
    expected_not = [i for i, r in enumerate(as_read) if evaluate(bound, r) is False]
    for p, want in ((bound, expected), (~bound, expected_not)):
        assert table.filter(p.to_arrow()).column("__row").to_pylist() == want
        assert filter_table(table, p).column("__row").to_pylist() == want


def test_decimal_literals_outside_the_column_type() -> None:
    fields = [DataField(0, "a", parse_sql_type("DECIMAL(10, 2)"))]
    table = pa.table({"a": pa.array([Decimal("1.00"), Decimal("99999999.99")], pa.decimal128(10, 2))})
    for text, expected in [
        ("a > 123456789012", 0),
        ("a < 123456789012.00", 2),
        ("a < 1e40", 2),
        ("a IN (1, 123456789012.00, 1.001)", 1),
        ("a > 1.001", 1),
        ("a >= -1e30", 2),
    ]:
        p = parse_filter(text, fields)
        assert p is not None
        assert table.filter(p.to_arrow()).num_rows == expected, text
        assert filter_table(table, p).num_rows == expected, text


def test_null_semantics_on_arrow() -> None:
    table = pa.table({"age": pa.array([1, None, 3], pa.int32())})
    fields = [DataField(0, "age", parse_sql_type("INT"))]

    def rows(text: str) -> list[Any]:
        p = parse_filter(text, fields)
        assert p is not None
        assert (
            filter_table(table, p).column("age").to_pylist()
            == table.filter(p.to_arrow()).column("age").to_pylist()
        )
        return filter_table(table, p).column("age").to_pylist()

    assert rows("age != 1") == [3]
    assert rows("NOT (age = 1)") == [3]
    assert rows("age NOT IN (1)") == [3]
    assert rows("age NOT IN (1, NULL)") == []
    assert rows("age IN (1, NULL)") == [1]
    assert rows("age = NULL") == [] and rows("NOT (age = NULL)") == []
    assert rows("age IS NULL OR age > 2") == [None, 3]
    assert rows("NOT (age IS NULL)") == [1, 3]


# --------------------------------------------------------------------------- stats pruning


def _truncate_max(s: str, k: int) -> str | None:
    if len(s) <= k:
        return s
    head = s[:k]
    while head:
        c = ord(head[-1]) + 1
        if c <= 0x10FFFF:
            return head[:-1] + chr(0xE000 if c == 0xD800 else c)
        head = head[:-1]
    return None


def _stats(values: list[Any], mode: str, k: int) -> ColumnStats:
    nulls = sum(v is None for v in values)
    present = [
        Timestamp.from_datetime(v) if isinstance(v, dt.datetime) else v for v in values if v is not None
    ]
    nan_free = [v for v in present if not (isinstance(v, float) and math.isnan(v))]
    if mode == "unknown":
        return ColumnStats(None, None, None)
    if mode == "nan_largest" and present:  # Java Double.compare order: NaN above +inf
        key = lambda v: (isinstance(v, float) and math.isnan(v), v)  # noqa: E731
        return ColumnStats(min(present, key=key), max(present, key=key), nulls)
    if not nan_free:
        return ColumnStats(None, None, nulls)
    lo, hi = min(nan_free), max(nan_free)
    if mode == "truncated" and isinstance(lo, str):
        lo, hi = lo[:k], _truncate_max(hi, k)
    return ColumnStats(lo, hi, nulls)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=_rows(min_size=1),
    pred=predicates,
    mode=st.sampled_from(["exact", "truncated", "nan_largest", "unknown"]),
    k=st.integers(0, 2),
)
def test_might_match_never_prunes_a_matching_file(
    rows: list[dict[str, Any]], pred: Predicate, mode: str, k: int
) -> None:
    bound = parse_filter(pred, GEN_FIELDS)
    assert bound is not None
    stats = {c: _stats([r[c] for r in rows], mode, k) for c in GEN}
    if any(evaluate(bound, r) is True for r in rows):
        assert might_match(bound, stats, len(rows))
    if any(evaluate(Not(bound), r) is True for r in rows):
        assert might_match(Not(bound), stats, len(rows))


def test_might_match_prunes() -> None:
    stats = {
        "age": ColumnStats(10, 20, 0),
        "name": ColumnStats("b", "d", 2),
        "f": ColumnStats(1.0, 2.0, 0),
        "id": ColumnStats(None, None, 5),
        "dt": ColumnStats(dt.date(2024, 1, 1), dt.date(2024, 1, 31), 0),
    }

    def mm(text: str) -> bool:
        return might_match(P(text), stats, 5)

    for text in [
        "age > 20",
        "age < 10",
        "age = 21",
        "age IN (1, 2, 30)",
        "age BETWEEN 21 AND 30",
        "name LIKE 'e%'",
        "name LIKE 'a%'",
        "name < 'b'",
        "id = 3",
        "id IS NOT NULL",
        "age IS NULL",
        "dt > '2024-01-31'",
        "age NOT IN (5, NULL)",
        "NOT (age <= 20)",
        "age > 20 OR name = 'z'",
        "age = 15 AND name > 'e'",
        "NOT (age >= 10 OR name IS NULL)",
        "f > 2",
    ]:
        assert not mm(text), text
    for text in [
        "age > 19",
        "age = 10",
        "age IN (1, 20)",
        "name LIKE 'b%'",
        "name LIKE 'c'",
        "name IS NULL",
        "id IS NULL",
        "age != 15",
        "NOT (f > 1.5)",
        "f != 1.0",
        "name >= 'd'",
        "unknown_col = 1",
        "NOT (name LIKE 'c%')",
        "age NOT IN (10)",
    ]:
        p = P(text) if "unknown" not in text else Compare("unknown_col", "=", 1)
        assert might_match(p, stats, 5), text
    assert not might_match(None, stats, 0) and might_match(None, stats, 1)
    assert not might_match(P("age = 15"), {"age": ColumnStats(15, 15, 0)}, 0)
    assert might_match(Compare("age", "=", "x"), {"age": ColumnStats(1, 2, 0)}, 3)  # type mismatch: keep
    # != prunes only when every non-null value equals the literal (never for strings: bounds may be truncated)
    assert not might_match(P("age != 7"), {"age": ColumnStats(7, 7, 1)}, 3)
    assert might_match(P("name != 'a'"), {"name": ColumnStats("a", "a", 0)}, 3)
    # NaN bounds are unknown bounds
    assert might_match(P("f > 5"), {"f": ColumnStats(1.0, math.nan, 0)}, 3)


def test_stats_from_simple() -> None:
    spelled = {"a": "INT", "s": "STRING", "d": "DECIMAL(20, 3)", "ts": "TIMESTAMP(9)"}
    fields = [DataField(i, n, parse_sql_type(t)) for i, (n, t) in enumerate(spelled.items())]
    types = [f.type for f in fields]
    ts = Timestamp(5, 7)
    simple = SimpleStats(
        serialize_row([1, "abc", Decimal("1.500"), ts], types),
        serialize_row([9, None, Decimal("2.000"), ts], types),
        (0, 3, None, 1),
    )
    got = stats_from_simple(simple, fields, 4)
    assert got == {
        "a": ColumnStats(1, 9, 0),
        "s": ColumnStats("abc", None, 3),
        "d": ColumnStats(Decimal("1.500"), Decimal("2.000"), None),
        "ts": ColumnStats(ts, ts, 1),
    }
    assert stats_from_simple(SimpleStats(EMPTY_ROW, EMPTY_ROW, (1, 0, 0, 0)), fields, 4)["a"] == ColumnStats(
        None, None, 1
    )
    assert stats_from_simple(SimpleStats(EMPTY_ROW, EMPTY_ROW, ()), [], 4) == {}
    with pytest.raises(CorruptFileError, match=r"f\.parquet"):
        stats_from_simple(SimpleStats(b"\x00\x00\x00\x02junk", EMPTY_ROW, None), fields, 4, name="f.parquet")
    # null count larger than the row count is not trusted
    assert stats_from_simple(simple, fields, 2)["s"].null_count is None


# --------------------------------------------------------------------------- evaluate


def test_evaluate_three_valued() -> None:
    row = {"age": None, "name": "abc", "ts": dt.datetime(2024, 1, 1), "f": math.nan}
    assert evaluate(P("age = 1"), row) is None
    assert evaluate(P("age = 1 OR name = 'abc'"), row) is True
    assert evaluate(P("age = 1 AND name = 'x'"), row) is False
    assert evaluate(P("NOT (age = 1)"), row) is None
    assert evaluate(P("age IS NULL"), row) is True
    assert evaluate(P("name LIKE 'ab%'"), row) is True
    assert evaluate(P("name IN ('x', NULL)"), row) is None
    assert evaluate(P("ts = TIMESTAMP '2024-01-01 00:00:00'"), row) is True
    assert evaluate(P("ts = TIMESTAMP '2024-01-01 00:00:00'"), {"ts": Timestamp(1704067200000)}) is True
    assert evaluate(P("f = CAST('NaN' AS DOUBLE)"), row) is False and evaluate(P("f != 1"), row) is True
    assert evaluate(None, row) is True
    with pytest.raises(ValueError, match="dt"):
        evaluate(P("dt = '2024-01-01'"), row)


# --------------------------------------------------------------------------- split_by_fields


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id = 1 AND age > 3", "id = 1"),
        ("id = 1 AND age > 3 AND id < 5", "id = 1 AND id < 5"),
        ("age > 3", None),
        ("id = 1 OR age > 3", None),
        ("(id = 1 AND age > 3) OR id = 7", "id = 1 OR id = 7"),
        ("(id = 1 AND age > 3) OR (id = 2 AND name = 'x')", "id = 1 OR id = 2"),
        ("id = 1 OR id = 2", "id = 1 OR id = 2"),
        ("NOT (id = 1 OR age > 3)", "NOT (id = 1)"),
        ("NOT (id = 1 AND age > 3)", None),
        ("NOT (NOT (id = 1 AND age > 3))", "id = 1"),
        ("dt = '2024-01-01' AND id IN (1, 2) AND name LIKE 'a%'", "dt = DATE '2024-01-01' AND id IN (1, 2)"),
    ],
)
def test_split_by_fields(text: str, expected: str | None) -> None:
    got = split_by_fields(P(text), {"id", "dt"})
    assert got == (P(expected) if expected else None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(min_size=1), pred=predicates, allowed=st.sets(st.sampled_from(list(GEN))))
def test_split_is_implied(rows: list[dict[str, Any]], pred: Predicate, allowed: set[str]) -> None:
    bound = parse_filter(pred, GEN_FIELDS)
    part = split_by_fields(bound, allowed)
    assume(part is not None)
    assert part is not None and part.fields() <= allowed
    for r in rows:
        if evaluate(bound, r) is True:
            assert evaluate(part, r) is True
