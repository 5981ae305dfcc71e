"""Vectorized BinaryRow hashing and bucket ids: bit-exact against Java golden files and a scalar reference."""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lsmlake.core.bucket as bucket_module
from lsmlake.core.binary_row import Timestamp, encode_row, hash_row_bytes
from lsmlake.core.bucket import (
    binary_rows,
    bucket_for_hash,
    bucket_ids,
    hash_binary_rows,
    hash_rows,
)
from lsmlake.core.types import MAX_LENGTH, DataType, to_arrow_type

# <repo>/../shared/paimon-fixtures, read in place (read-only); nothing is copied.
FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "paimon-fixtures"
BUCKET_DATA = FIXTURES / "alibaba-paimon-cpp" / "test" / "test_data"
JAVA_BUCKETS = 12345  # numBuckets used by Java to produce the golden files

STRING = DataType("VARCHAR", length=MAX_LENGTH)
BYTES = DataType("VARBINARY", length=MAX_LENGTH)


# --------------------------------------------------------------------------- scalar reference


def reference_hash(row: bytes) -> int:
    """MurmurHash3 x86_32 over 4-byte little-endian words, seed 42 (MurmurHashUtils.hashBytesByWords)."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    h = 42
    for (word,) in struct.iter_unpack("<I", row):
        k = rotl((word * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= len(row)
    for shift, mult in ((16, 0x85EBCA6B), (13, 0xC2B2AE35)):
        h = ((h ^ (h >> shift)) * mult) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def reference_bucket(h: int, n: int) -> int:
    return abs(int(math.fmod(h, n)))  # Java: Math.abs(h % n), truncating remainder


def check_against_reference(
    columns: list[pa.Array], types: list[DataType], py_rows: list[list[object]]
) -> np.ndarray:
    """Vectorized bytes/hashes equal encode_row + reference hash for every row; returns the hashes."""
    expected_rows = [encode_row(values, types) for values in py_rows]
    built = binary_rows(columns, types)
    assert built.num_rows == len(py_rows)
    for i, expected in enumerate(expected_rows):
        assert built.row(i) == expected, f"row {i}: {py_rows[i]!r}"
    expected_hashes = np.array([reference_hash(r) for r in expected_rows], dtype=np.int32)
    assert [hash_row_bytes(r) for r in expected_rows] == expected_hashes.tolist()
    hashes = hash_rows(columns, types)
    assert hashes.dtype == np.int32
    np.testing.assert_array_equal(hashes, expected_hashes)
    np.testing.assert_array_equal(hash_binary_rows(built), expected_hashes)
    for n in (1, 7, 12345):
        expected_buckets = [reference_bucket(int(x), n) for x in expected_hashes]
        np.testing.assert_array_equal(bucket_ids(columns, types, n), expected_buckets)
    return hashes


# --------------------------------------------------------------------------- Java golden files


def load_fixture(name: str) -> list[list[Any]]:
    path = BUCKET_DATA / name
    if not path.exists():
        pytest.skip(f"Java bucket fixture {path} is not present (see paimon-fixtures/README.md)")
    text = path.read_text().rstrip()
    assert text.endswith(",")
    return json.loads("[" + text[:-1] + "]")  # type: ignore[no-any-return]


def _epoch_nanos(iso: str) -> int:
    whole, _, fraction = iso.partition(".")
    delta = dt.datetime.fromisoformat(whole) - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + int((fraction + "0" * 9)[:9])


_UNIT_BY_PRECISION = {0: ("s", 10**9), 3: ("ms", 10**6), 6: ("us", 10**3), 9: ("ns", 1)}


def column_from_json(values: list[Any], t: DataType) -> tuple[pa.Array, list[object]]:
    """(Arrow column in lsmlake's mapping, Python values for encode_row) from a fixture column."""
    root = t.root
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        nanos = [None if v is None else (v if isinstance(v, int) else _epoch_nanos(v)) for v in values]
        unit, per = _UNIT_BY_PRECISION[t.precision or 0]
        assert all(v is None or v % per == 0 for v in nanos)
        arrow = pa.array([None if v is None else v // per for v in nanos], pa.int64())
        return arrow.cast(pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None)), list(nanos)
    if root == "DECIMAL":
        py: list[object] = [None if v is None else Decimal(v) for v in values]
    elif root == "VARBINARY":
        py = [None if v is None else v.encode() for v in values]
    else:
        py = list(values)
    return pa.array(py, to_arrow_type(t)), py


def _base_types(decimals: list[DataType]) -> list[DataType]:
    return [
        DataType("BOOLEAN"),
        DataType("TINYINT"),
        DataType("SMALLINT"),
        DataType("INT"),
        DataType("BIGINT"),
        DataType("FLOAT"),
        DataType("DOUBLE"),
        DataType("DATE"),
        DataType("TIMESTAMP", precision=9),
        *decimals,
        STRING,
        BYTES,
    ]


# The Java `bucket` column is computed over ALL data columns of the row, in order (paimon-cpp's
# bucket_id_calculator_test.cpp feeds the whole struct as the bucket key), so that is the multi-column key.
FIXTURE_CASES = {
    "record_for_bucket_id.data": _base_types([DataType("DECIMAL", precision=30, scale=20)]),
    "record_with_null_for_bucket_id.data": _base_types(
        [DataType("DECIMAL", precision=5, scale=2), DataType("DECIMAL", precision=30, scale=2)]
    ),
    "record_with_timestamp_for_bucket_id.data": [
        *(DataType("TIMESTAMP", precision=p) for p in (0, 3, 6, 9)),
        *(DataType("TIMESTAMP_LTZ", precision=p) for p in (0, 3, 6, 9)),
    ],
}


FixtureTable = tuple[list[DataType], list[pa.Array], list[list[object]], list[int]]


@pytest.fixture(scope="module", params=sorted(FIXTURE_CASES))
def fixture_table(request: pytest.FixtureRequest) -> FixtureTable:
    types = FIXTURE_CASES[request.param]
    records = load_fixture(request.param)
    assert len(records) == 5000 and all(len(r) == len(types) + 1 for r in records)
    columns, py_columns = zip(
        *(column_from_json([r[i] for r in records], t) for i, t in enumerate(types)), strict=True
    )
    py_rows = [list(row) for row in zip(*py_columns, strict=True)]
    return types, list(columns), py_rows, [r[-1] for r in records]


def test_fixture_full_row_matches_java(fixture_table: Any) -> None:
    types, columns, py_rows, java_buckets = fixture_table
    np.testing.assert_array_equal(bucket_ids(columns, types, JAVA_BUCKETS), java_buckets)
    # The scalar path (encode_row + reference hash) agrees with Java too, and with the vectorized bytes.
    hashes = check_against_reference(columns, types, py_rows)
    assert [reference_bucket(int(x), JAVA_BUCKETS) for x in hashes] == java_buckets


def test_fixture_each_column_alone(fixture_table: Any) -> None:
    types, columns, py_rows, _ = fixture_table
    for i, t in enumerate(types):
        check_against_reference([columns[i]], [t], [[row[i]] for row in py_rows])


def test_fixture_chunked_and_sliced(fixture_table: Any) -> None:
    types, columns, _, java_buckets = fixture_table
    chunked = [pa.chunked_array([c.slice(0, 1234), c.slice(1234, 0), c.slice(1234)]) for c in columns]
    np.testing.assert_array_equal(bucket_ids(chunked, types, JAVA_BUCKETS), java_buckets)
    table = pa.table({f"c{i}": c for i, c in enumerate(chunked)})
    sliced = table.slice(777, 1000)
    np.testing.assert_array_equal(bucket_ids(sliced, types, JAVA_BUCKETS), java_buckets[777:1777])


def test_fixture_hashed_on_two_threads_matches_java(fixture_table: Any, monkeypatch: Any) -> None:
    types, columns, _, java_buckets = fixture_table
    monkeypatch.setattr(bucket_module, "PARALLEL_HASH_ROWS", 100)  # the 5000 rows split in halves
    chunked = [pa.chunked_array([c.slice(0, 1234), c.slice(1234)]) for c in columns]
    np.testing.assert_array_equal(bucket_ids(chunked, types, JAVA_BUCKETS), java_buckets)
    table = pa.table({f"c{i}": c for i, c in enumerate(columns)})
    np.testing.assert_array_equal(bucket_ids(table, types, JAVA_BUCKETS), java_buckets)


def test_paimon_cpp_extreme_values() -> None:
    # Rows and Java-computed buckets (n=12345) of paimon-cpp's TestVariantType: type limits, Long.MIN_VALUE
    # nanos, 38-digit decimals in a DECIMAL(30, 20) key, multi-byte UTF-8.
    text = (
        "olá mundo，你好世界。Two roads diverged in a wood, and I took the one less traveled by, "
        "And that has made all the difference."
    )
    rows = [
        [
            True,
            10,
            200,
            65536,
            123456789,
            0.0,
            0.0,
            2000,
            -86399999999500,
            "2134.48690000000000000009",
            text,
            "Alice",
        ],
        [
            False,
            -128,
            -32768,
            -(2**31),
            -(2**63),
            -3.4028235e38,
            -1.7976931348623157e308,
            -719528,
            -(2**63),
            "-999999999999999999.99999999999999999999",
            "Alice",
            text,
        ],
        [
            True,
            127,
            32767,
            2**31 - 1,
            2**63 - 1,
            3.4028235e38,
            1.7976931348623157e308,
            2932896,
            2**63 - 1,
            "999999999999999999.99999999999999999999",
            "Alice",
            text,
        ],
        [True, 0, 0, 0, 0, 1.4e-45, 4.9e-324, 0, 0, "0.00000000000000000000", "Alice", text],
    ]
    types = _base_types([DataType("DECIMAL", precision=30, scale=20)])
    columns = [column_from_json([r[i] for r in rows], t)[0] for i, t in enumerate(types[:9])]
    columns.append(pa.array([Decimal(r[9]) for r in rows], pa.decimal128(38, 20)))
    columns += [pa.array([r[10] for r in rows]), pa.array([r[11].encode() for r in rows])]
    np.testing.assert_array_equal(bucket_ids(columns, types, JAVA_BUCKETS), [11275, 12272, 6549, 11795])


# --------------------------------------------------------------------------- random inputs


Kind = tuple[DataType, st.SearchStrategy[Any], Callable[[list[Any]], pa.Array]]


def _ts_kind(precision: int, ltz: bool) -> Kind:
    unit, per = _UNIT_BY_PRECISION[precision]
    t = DataType("TIMESTAMP_LTZ" if ltz else "TIMESTAMP", precision=precision)
    bound = (2**63 - 1) // 10**9  # keep epoch nanos within int64 for every unit
    values = (
        st.integers(-bound, bound).map(lambda s: s * 10**9)
        if unit == "s"
        else st.integers(-(2**63) // per, (2**63 - 1) // per).map(lambda v: v * per)
    )
    arrow_type = pa.timestamp(unit, tz="UTC" if ltz else None)

    def make(vs: list[Any]) -> pa.Array:
        return pa.array([None if v is None else v // per for v in vs], pa.int64()).cast(arrow_type)

    return t, values, make


def _plain(t: DataType, values: st.SearchStrategy[Any]) -> Kind:
    return t, values, lambda vs: pa.array(vs, to_arrow_type(t))


def _dec_kind(p: int, s: int) -> Kind:
    bound = 10**p - 1
    return _plain(
        DataType("DECIMAL", precision=p, scale=s),
        st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E-{s}")),
    )


KINDS = [
    _plain(DataType("BOOLEAN"), st.booleans()),
    _plain(DataType("TINYINT"), st.integers(-128, 127)),
    _plain(DataType("SMALLINT"), st.integers(-(2**15), 2**15 - 1)),
    _plain(DataType("INT"), st.integers(-(2**31), 2**31 - 1)),
    _plain(DataType("BIGINT"), st.integers(-(2**63), 2**63 - 1)),
    _plain(DataType("FLOAT"), st.floats(width=32, allow_nan=False)),
    _plain(DataType("DOUBLE"), st.floats(allow_nan=False)),
    _plain(DataType("DATE"), st.dates()),
    _plain(
        DataType("TIME", precision=3),
        st.integers(0, 86_399_999).map(
            lambda ms: dt.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
        ),
    ),
    _dec_kind(9, 2),
    _dec_kind(18, 0),
    _dec_kind(19, 3),
    _dec_kind(38, 10),
    _ts_kind(0, False),
    _ts_kind(3, False),
    _ts_kind(6, False),
    _ts_kind(9, False),
    _ts_kind(6, True),
    _plain(STRING, st.text(max_size=30) | st.text(min_size=60, max_size=300)),
    _plain(DataType("CHAR", length=8), st.text(max_size=8)),
    _plain(BYTES, st.binary(max_size=40)),
]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_keys_match_scalar_reference(data: st.DataObject) -> None:
    kinds = data.draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=5))
    n = data.draw(st.integers(0, 25))
    py_columns = [data.draw(st.lists(st.none() | values, min_size=n, max_size=n)) for _, values, _ in kinds]
    types = [t for t, _, _ in kinds]
    columns = [make(vs) for (_, _, make), vs in zip(kinds, py_columns, strict=True)]
    py_rows = [list(r) for r in zip(*py_columns, strict=True)] if n else []
    check_against_reference(columns, types, py_rows)


def test_long_strings_and_nulls_mixed() -> None:
    rng = np.random.default_rng(3)
    values: list[str | None] = []
    for i in range(400):
        size = int(rng.choice([0, 3, 7, 8, 9, 15, 16, 17, 100, 1000, 4097]))
        values.append(None if i % 11 == 0 else "".join(chr(0x61 + int(c)) for c in rng.integers(0, 26, size)))
    keys = [pa.array(values), pa.array(values[::-1], pa.large_string()), pa.array(range(400), pa.int32())]
    types = [STRING, STRING, DataType("INT")]
    py_rows = [[a, b, c] for a, b, c in zip(values, values[::-1], range(400), strict=True)]
    check_against_reference(keys, types, py_rows)
    view = pa.array(values).cast(pa.string_view())
    dictionary = pa.array(values[::-1]).dictionary_encode()
    expected = hash_rows(keys, types)
    np.testing.assert_array_equal(hash_rows([view, dictionary, keys[2]], types), expected)


def test_wide_key_uses_two_header_words() -> None:
    types = [DataType("INT")] * 60
    py_rows = [[None if (i + r) % 5 == 0 else i * r for i in range(60)] for r in range(20)]
    columns = [pa.array([row[i] for row in py_rows], pa.int32()) for i in range(60)]
    check_against_reference(columns, types, py_rows)


def test_input_coercions() -> None:
    # Wider Arrow integer / other timestamp units / null-typed columns are conformed to the Paimon type.
    t = [DataType("INT"), DataType("TIMESTAMP", precision=6), DataType("DECIMAL", precision=10, scale=2)]
    ints = pa.array([1, None, -5], pa.int64())
    stamps = pa.array([1_000_001_000, None, -1_500], pa.int64()).cast(pa.timestamp("ns"))
    decimals = pa.array([Decimal("1.5"), None, Decimal("-2")], pa.decimal128(20, 1))
    py_rows = [[1, 1_000_001_000, Decimal("1.5")], [None, None, None], [-5, -1_500, Decimal("-2")]]
    check_against_reference([ints, stamps, decimals], t, py_rows)
    nulls = [pa.nulls(3) for _ in t]
    check_against_reference(nulls, t, [[None] * 3] * 3)
    with pytest.raises(pa.ArrowInvalid):
        bucket_ids([pa.array([2**40])], [DataType("INT")], 4)


def test_edge_cases() -> None:
    empty = bucket_ids([pa.array([], pa.int64())], [DataType("BIGINT")], 4)
    assert empty.dtype == np.int32 and len(empty) == 0
    with pytest.raises(ValueError):
        bucket_ids([pa.array([1])], [DataType("BIGINT")], 0)
    with pytest.raises(ValueError):
        bucket_ids([pa.array([1]), pa.array([1, 2])], [DataType("BIGINT")] * 2, 4)
    with pytest.raises(ValueError):
        hash_rows([pa.array([[1]])], [DataType("ARRAY", element=DataType("INT"))])
    assert bucket_for_hash(-(2**31), 12345) == reference_bucket(-(2**31), 12345)
    assert bucket_for_hash(-7, 4) == 3
    row = encode_row([Timestamp(5, 7)], [DataType("TIMESTAMP", precision=9)])
    assert hash_row_bytes(row) == reference_hash(row)
