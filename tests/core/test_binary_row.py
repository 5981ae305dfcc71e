"""BinaryRow scalar codec: Java-written byte examples (format.md §5.3) and encode/decode round trips."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsmlake.core.binary_row import (
    EMPTY_ROW,
    Timestamp,
    decode_row,
    deserialize_row,
    encode_row,
    serialize_row,
)
from lsmlake.core.types import MAX_LENGTH, DataType

STRING = DataType("VARCHAR", length=MAX_LENGTH)
BYTES = DataType("VARBINARY", length=MAX_LENGTH)
INT = DataType("INT")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("|", ""))


# --------------------------------------------------------------------------- §5.3 worked examples


def test_empty_row() -> None:
    assert h("00000000 | 00 00 00 00 00 00 00 00") == EMPTY_ROW
    assert len(EMPTY_ROW) == 12
    assert deserialize_row(EMPTY_ROW, []) == []


def test_int_partition() -> None:
    data = serialize_row([10], [INT])
    assert data == h("00000001 | 0000000000000000 | 0a 00 00 00 00 00 00 00")
    assert len(data) == 20
    assert deserialize_row(data, [INT]) == [10]


def test_eight_byte_string_goes_to_var_part() -> None:
    data = serialize_row(["20240725"], [STRING])
    assert data == h("00000001 | 0000000000000000 | 08 00 00 00 10 00 00 00") + b"20240725"
    assert deserialize_row(data, [STRING]) == ["20240725"]


def test_inline_string_and_int_key() -> None:
    types = [STRING, INT]
    data = serialize_row(["Alice", 1], types)
    assert data == h("00000002 | 0000000000000000 | 41 6c 69 63 65 00 00 85 | 01 00 00 00 00 00 00 00")
    assert deserialize_row(data, types) == ["Alice", 1]


def test_long_string_key() -> None:
    text = ("x" * 100) + "abcd"
    types = [STRING, INT]
    data = serialize_row([text, 1], types)
    assert data == h("00000002 | 0000000000000000 | 68000000 18000000 | 01000000 00000000") + text.encode()
    assert len(text) == 104 and len(data) == 4 + 24 + 104
    assert deserialize_row(data, types) == [text, 1]


def test_stats_row_with_null_timestamp_and_bytes() -> None:
    types = [
        INT,
        INT,
        DataType("DATE"),
        DataType("TIMESTAMP", precision=9),
        DataType("DECIMAL", precision=23, scale=5),
        BYTES,
    ]
    values = [10, 1, dt.date(1970, 1, 1), None, Decimal("-123.45"), None]
    data = serialize_row(values, types)
    expected = h(
        "00000006 | 00 28 00 00 00 00 00 00"
        "| 0a00000000000000 | 0100000000000000 | 00000000 00000000 | 00000000 38000000"
        "| 04000000 40000000 | 0000000000000000"
        "| 0000000000000000 | ff43a158 000000000000000000000000"
    )
    assert data == expected
    assert deserialize_row(data, types) == [10, 1, dt.date(1970, 1, 1), None, Decimal("-123.45000"), None]


def test_null_reservations() -> None:
    # Null DECIMAL(p>18) reserves 16 bytes, null TIMESTAMP(p>3) 8 bytes; compact ones reserve nothing.
    types = [DataType("DECIMAL", precision=19, scale=0), DataType("TIMESTAMP_LTZ", precision=6)]
    row = encode_row([None, None], types)
    assert row == h("0003000000000000 | 00000000 18000000 | 00000000 28000000") + bytes(24)
    compact = [DataType("DECIMAL", precision=18, scale=0), DataType("TIMESTAMP", precision=3)]
    assert encode_row([None, None], compact) == h("0003000000000000") + bytes(16)


# --------------------------------------------------------------------------- value conventions


def test_scalar_encodings() -> None:
    assert encode_row([-1], [DataType("TINYINT")])[8:] == h("ff00000000000000")
    assert encode_row([-2], [DataType("SMALLINT")])[8:] == h("feff000000000000")
    assert encode_row([True], [DataType("BOOLEAN")])[8:] == h("0100000000000000")
    assert encode_row([1.0], [DataType("FLOAT")])[8:] == struct.pack("<f", 1.0) + bytes(4)
    time_row = encode_row([dt.time(0, 0, 1, 500_999)], [DataType("TIME", precision=3)])
    assert time_row[8:] == struct.pack("<i", 1500) + bytes(4)
    decimal_row = encode_row([Decimal("1.5")], [DataType("DECIMAL", precision=5, scale=2)])
    assert decimal_row[8:] == struct.pack("<q", 150)
    assert encode_row([b"\x00\x01"], [BYTES])[8:] == h("0001000000000082")


def test_timestamp_inputs_agree() -> None:
    for p in (3, 9):
        t = [DataType("TIMESTAMP", precision=p)]
        naive = dt.datetime(2024, 7, 25, 12, 30, 1, 123456)
        aware = naive.replace(tzinfo=dt.timezone(dt.timedelta(hours=2)))
        nanos = (naive - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1) * 1000
        ts = Timestamp.from_epoch_nanos(nanos)
        assert encode_row([naive], t) == encode_row([nanos], t) == encode_row([ts], t)
        assert encode_row([aware], t) == encode_row([nanos - 2 * 3600 * 10**9], t)
    [decoded] = decode_row(
        encode_row([1_721_910_601_123_456_789], [DataType("TIMESTAMP", precision=9)]),
        [DataType("TIMESTAMP", precision=9)],
    )
    assert decoded == Timestamp(1_721_910_601_123, 456_789)
    assert isinstance(decoded, Timestamp)
    assert decoded.epoch_nanos == 1_721_910_601_123_456_789
    assert decoded.to_datetime() == dt.datetime(2024, 7, 25, 12, 30, 1, 123456)
    assert decoded.to_datetime(utc=True).tzinfo == dt.timezone.utc
    # Compact precision keeps millis only.
    assert decode_row(
        encode_row([1_500_001], [DataType("TIMESTAMP", precision=3)]), [DataType("TIMESTAMP", precision=3)]
    ) == [Timestamp(1)]
    assert Timestamp.from_epoch_nanos(-1) == Timestamp(-1, 999_999)


def test_rejects_bad_values() -> None:
    dec = DataType("DECIMAL", precision=5, scale=2)
    with pytest.raises(ValueError):
        encode_row([Decimal("1.001")], [dec])
    with pytest.raises(ValueError):
        encode_row([Decimal("1000.00")], [dec])
    with pytest.raises(TypeError):
        encode_row(["1"], [INT])
    with pytest.raises(ValueError):
        encode_row([1 << 31], [INT])
    with pytest.raises(TypeError):
        encode_row([b"x"], [STRING])
    with pytest.raises(ValueError):
        encode_row([1, 2], [INT])
    with pytest.raises(ValueError):
        deserialize_row(serialize_row([1], [INT]), [INT, INT])
    with pytest.raises(ValueError):
        encode_row([[1]], [DataType("ARRAY", element=INT)])


def test_wide_row_header() -> None:
    types = [INT] * 60
    values: list[object] = [None if i % 7 == 0 else i for i in range(60)]
    row = encode_row(values, types)
    assert len(row) == 16 + 8 * 60
    assert row[1] == 0b1000_0001  # fields 0 and 7 null: bits 8 and 15
    assert row[8] == 1  # field 56 -> bit 64 -> first byte of the second header word
    assert decode_row(row, types) == values


# --------------------------------------------------------------------------- round trips


def _ts(precision: int, ltz: bool = False) -> tuple[DataType, st.SearchStrategy[object]]:
    millis = st.integers(-(1 << 63), (1 << 63) - 1)
    step = 1_000_000 if precision <= 3 else 10 ** (9 - precision)
    nanos = st.integers(0, 999_999 // step).map(lambda k: k * step)
    root = "TIMESTAMP_LTZ" if ltz else "TIMESTAMP"
    return DataType(root, precision=precision), st.builds(Timestamp, millis, nanos)


def _dec(p: int, s: int) -> tuple[DataType, st.SearchStrategy[object]]:
    bound = 10**p - 1
    return DataType("DECIMAL", precision=p, scale=s), st.integers(-bound, bound).map(
        lambda u: Decimal(f"{u}E-{s}")
    )


def _millis_time(t: dt.time) -> dt.time:
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


COLUMN_KINDS: list[tuple[DataType, st.SearchStrategy[object]]] = [
    (DataType("BOOLEAN"), st.booleans()),
    (DataType("TINYINT"), st.integers(-128, 127)),
    (DataType("SMALLINT"), st.integers(-(1 << 15), (1 << 15) - 1)),
    (INT, st.integers(-(1 << 31), (1 << 31) - 1)),
    (DataType("BIGINT"), st.integers(-(1 << 63), (1 << 63) - 1)),
    (DataType("FLOAT"), st.floats(width=32)),
    (DataType("DOUBLE"), st.floats()),
    (DataType("DATE"), st.dates()),
    (DataType("TIME", precision=3), st.times().map(_millis_time)),
    _dec(5, 2),
    _dec(18, 4),
    _dec(19, 0),
    _dec(30, 20),
    _dec(38, 10),
    _ts(0),
    _ts(3),
    _ts(6),
    _ts(9),
    _ts(3, True),
    _ts(9, True),
    (STRING, st.text(max_size=40)),
    (DataType("CHAR", length=10), st.text(max_size=10)),
    (BYTES, st.binary(max_size=40)),
    (DataType("BINARY", length=16), st.binary(max_size=16)),
]


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    return a == b and type(a) is type(b)


@st.composite
def rows(draw: st.DrawFn) -> tuple[list[DataType], list[object]]:
    kinds = draw(st.lists(st.sampled_from(COLUMN_KINDS), max_size=12))
    values = [draw(st.none() | strategy) for _, strategy in kinds]
    return [t for t, _ in kinds], values


@pytest.mark.parametrize("kind", COLUMN_KINDS, ids=lambda k: str(k[0]))
@given(data=st.data())
def test_round_trip_per_type(kind: tuple[DataType, st.SearchStrategy[object]], data: st.DataObject) -> None:
    t, strategy = kind
    value = data.draw(st.none() | strategy)
    row = encode_row([value], [t])
    assert len(row) % 8 == 0
    [back] = decode_row(row, [t])
    assert _same(value, back), (value, back)
    if isinstance(value, float) and t.root == "FLOAT" and not math.isnan(value):
        assert back == struct.unpack("<f", struct.pack("<f", value))[0]


@given(rows())
def test_round_trip_rows(case: tuple[list[DataType], list[object]]) -> None:
    types, values = case
    data = serialize_row(values, types)
    assert struct.unpack(">i", data[:4])[0] == len(types)
    assert (len(data) - 4) % 8 == 0
    back = deserialize_row(data, types)
    assert all(_same(v, b) for v, b in zip(values, back, strict=True)), (values, back)
    assert encode_row(back, types) == data[4:]
