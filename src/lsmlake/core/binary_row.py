"""Scalar codec for Paimon's BinaryRow (format.md §5): partition values, min/max keys and stats rows.

Python value conventions (encode accepts, decode returns):

* BOOLEAN -> ``bool``; TINYINT/SMALLINT/INT/BIGINT -> ``int``; FLOAT/DOUBLE -> ``float``.
* DATE -> ``datetime.date`` (encode also accepts ``int`` days since 1970-01-01; decoding a day outside
  years 1..9999 raises).
* TIME -> ``datetime.time`` with millisecond resolution (encode also accepts ``int`` millis of day;
  sub-millisecond microseconds are truncated, as Paimon stores TIME as int millis).
* DECIMAL(p, s) -> ``decimal.Decimal`` with exponent ``-s`` (encode accepts ``Decimal`` or ``int``; the value
  must be exactly representable at scale ``s`` and within ``p`` digits, else ``ValueError``).
* TIMESTAMP(p) / TIMESTAMP_LTZ(p) -> always :class:`Timestamp` ``(millis, nanos_of_milli)``, Paimon's own
  internal form, so nanoseconds and years beyond 9999 survive. For TIMESTAMP it is the wall clock read as
  if UTC, for TIMESTAMP_LTZ the UTC instant. Encode also accepts ``datetime.datetime`` (naive = wall clock
  as if UTC; aware = converted to its UTC instant; a pandas ``Timestamp``'s ``nanosecond`` is honoured) and
  ``int`` epoch **nanoseconds**. For p <= 3 only the millis are stored (nanos are dropped, as in Java).
* CHAR/VARCHAR -> ``str`` (UTF-8); BINARY/VARBINARY/BLOB -> ``bytes`` (encode accepts any bytes-like).
* ``None`` is null for every type.

Nested types and VARIANT are not supported (they never appear in partitions, keys or stats). A DECIMAL
without precision is read as DECIMAL(10, 0) and a TIMESTAMP without precision as TIMESTAMP(6)
(Paimon's defaults).
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from lsmlake.core.types import DataType

__all__ = [
    "EMPTY_ROW",
    "Timestamp",
    "decode_row",
    "deserialize_row",
    "encode_row",
    "fixed_part_size",
    "hash_row_bytes",
    "header_size",
    "is_compact_decimal",
    "is_compact_timestamp",
    "serialize_row",
    "unscaled_decimal",
]

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = _EPOCH_DATE.toordinal()
_NANOS_PER_MILLI = 1_000_000
_INT_RANGES = {
    "TINYINT": (-(1 << 7), 1 << 7),
    "SMALLINT": (-(1 << 15), 1 << 15),
    "INT": (-(1 << 31), 1 << 31),
    "DATE": (-(1 << 31), 1 << 31),
    "TIME": (-(1 << 31), 1 << 31),
    "BIGINT": (-(1 << 63), 1 << 63),
}
_STRUCT = {"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "DATE": "<i", "TIME": "<i", "BIGINT": "<q"}
BYTES_ROOTS = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY", "BLOB"})


@dataclass(frozen=True, order=True)
class Timestamp:
    """Paimon's internal timestamp: epoch milliseconds plus nanoseconds within the millisecond (0..999999)."""

    millis: int
    nanos_of_milli: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.nanos_of_milli < _NANOS_PER_MILLI:
            raise ValueError(f"nanos_of_milli out of range: {self.nanos_of_milli}")

    @classmethod
    def from_epoch_nanos(cls, nanos: int) -> Timestamp:
        millis, rest = divmod(int(nanos), _NANOS_PER_MILLI)
        return cls(millis, rest)

    @classmethod
    def from_datetime(cls, value: _dt.datetime) -> Timestamp:
        """Naive datetimes are wall clocks read as UTC; aware ones are converted to their UTC instant."""
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        millis, micro_rest = divmod(micros, 1000)
        return cls(millis, micro_rest * 1000 + int(getattr(value, "nanosecond", 0)))

    @property
    def epoch_nanos(self) -> int:
        return self.millis * _NANOS_PER_MILLI + self.nanos_of_milli

    def to_datetime(self, utc: bool = False) -> _dt.datetime:
        """A datetime (naive, or aware UTC if ``utc``); sub-microsecond nanos are truncated."""
        out = _EPOCH + _dt.timedelta(milliseconds=self.millis, microseconds=self.nanos_of_milli // 1000)
        return out.replace(tzinfo=_dt.timezone.utc) if utc else out


# --------------------------------------------------------------------------- layout helpers


def header_size(arity: int) -> int:
    """Bytes of RowKind + null bits: 8 for arity <= 56, 16 for <= 120, ..."""
    return ((arity + 63 + 8) // 64) * 8


def fixed_part_size(arity: int) -> int:
    return header_size(arity) + 8 * arity


def decimal_precision(t: DataType) -> int:
    return 10 if t.precision is None else t.precision


def timestamp_precision(t: DataType) -> int:
    return 6 if t.precision is None else t.precision


def is_compact_decimal(t: DataType) -> bool:
    return t.root == "DECIMAL" and decimal_precision(t) <= 18


def is_compact_timestamp(t: DataType) -> bool:
    return t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and timestamp_precision(t) <= 3


def _round8(n: int) -> int:
    return (n + 7) & ~7


# --------------------------------------------------------------------------- value normalisation


def unscaled_decimal(value: object, precision: int, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale``; ValueError if inexact or wider than ``precision``."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        raise TypeError(f"DECIMAL value must be Decimal or int, got {type(value).__name__}")
    d = Decimal(value)
    sign, digits, exponent = d.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"DECIMAL value must be finite, got {value!r}")
    n: int = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        n *= 10**shift
    else:
        n, rest = divmod(n, 10**-shift)
        if rest:
            raise ValueError(f"{value!r} is not exact at scale {scale}")
    if n >= 10**precision:
        raise ValueError(f"{value!r} does not fit DECIMAL({precision}, {scale})")
    return -n if sign else n


def _to_decimal(unscaled: int, scale: int) -> Decimal:
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def _to_timestamp(value: object) -> Timestamp:
    if isinstance(value, Timestamp):
        return value
    if isinstance(value, _dt.datetime):
        return Timestamp.from_datetime(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return Timestamp.from_epoch_nanos(value)
    kind = type(value).__name__
    raise TypeError(f"TIMESTAMP value must be Timestamp, datetime or int epoch nanos, got {kind}")


def _to_int(value: object, t: DataType) -> int:
    root = t.root
    if root == "DATE" and isinstance(value, _dt.date):
        if isinstance(value, _dt.datetime):
            raise TypeError("DATE value must be a date, not a datetime")
        return value.toordinal() - _EPOCH_ORDINAL
    if root == "TIME" and isinstance(value, _dt.time):
        if value.tzinfo is not None:
            raise TypeError("TIME value must be a naive time")
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{root} value must be int, got {type(value).__name__}")
    lo, hi = _INT_RANGES[root]
    if not lo <= value < hi:
        raise ValueError(f"{value} out of range for {root}")
    return value


def _to_bytes(value: object, t: DataType) -> bytes:
    if t.is_string:
        if not isinstance(value, str):
            raise TypeError(f"{t.root} value must be str, got {type(value).__name__}")
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{t.root} value must be bytes, got {type(value).__name__}")


# --------------------------------------------------------------------------- encode


def encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """The BinaryRow bytes (RowKind 0, no arity prefix) exactly as Java's BinaryRowWriter writes them."""
    if len(values) != len(types):
        raise ValueError(f"{len(values)} values for {len(types)} types")
    arity = len(types)
    head = header_size(arity)
    buf = bytearray(head + 8 * arity)

    def append_var(data: bytes, reserve: int) -> int:
        offset = len(buf)
        buf.extend(data)
        buf.extend(bytes(reserve - len(data)))
        return offset

    for i, (value, t) in enumerate(zip(values, types, strict=True)):
        slot = head + 8 * i
        root = t.root
        if value is None:
            buf[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            if root == "DECIMAL" and not is_compact_decimal(t):
                struct.pack_into("<q", buf, slot, append_var(b"", 16) << 32)
            elif root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not is_compact_timestamp(t):
                struct.pack_into("<q", buf, slot, append_var(b"", 8) << 32)
            continue
        if root == "BOOLEAN":
            if not isinstance(value, bool):
                raise TypeError(f"BOOLEAN value must be bool, got {type(value).__name__}")
            buf[slot] = 1 if value else 0
        elif root in _STRUCT:
            struct.pack_into(_STRUCT[root], buf, slot, _to_int(value, t))
        elif root in ("FLOAT", "DOUBLE"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{root} value must be float, got {type(value).__name__}")
            struct.pack_into("<f" if root == "FLOAT" else "<d", buf, slot, float(value))
        elif root == "DECIMAL":
            precision, scale = decimal_precision(t), t.scale or 0
            unscaled = unscaled_decimal(value, precision, scale)
            if precision <= 18:
                struct.pack_into("<q", buf, slot, unscaled)
            else:
                width = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
                data = unscaled.to_bytes(width, "big", signed=True)
                struct.pack_into("<q", buf, slot, (append_var(data, 16) << 32) | width)
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            ts = _to_timestamp(value)
            if is_compact_timestamp(t):
                struct.pack_into("<q", buf, slot, ts.millis)
            else:
                offset = append_var(struct.pack("<q", ts.millis), 8)
                struct.pack_into("<q", buf, slot, (offset << 32) | ts.nanos_of_milli)
        elif root in BYTES_ROOTS:
            data = _to_bytes(value, t)
            if len(data) <= 7:
                buf[slot : slot + len(data)] = data
                buf[slot + 7] = 0x80 | len(data)
            else:
                offset = append_var(data, _round8(len(data)))
                struct.pack_into("<q", buf, slot, (offset << 32) | len(data))
        else:
            raise ValueError(f"type {root} is not supported in a BinaryRow scalar codec")
    return bytes(buf)


def serialize_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """``SerializationUtils.serializeBinaryRow``: 4-byte big-endian arity, then the row bytes."""
    return struct.pack(">i", len(types)) + encode_row(values, types)


# --------------------------------------------------------------------------- decode


def decode_row(row_bytes: bytes, types: Sequence[DataType]) -> list[object]:
    """Decode BinaryRow bytes (no arity prefix) into Python values (see the module docstring)."""
    data = memoryview(row_bytes)
    arity = len(types)
    head = header_size(arity)
    if len(data) < head + 8 * arity:
        raise ValueError(f"BinaryRow of {len(data)} bytes is too short for arity {arity}")
    out: list[object] = []
    for i, t in enumerate(types):
        if data[(i + 8) >> 3] & (1 << ((i + 8) & 7)):
            out.append(None)
            continue
        slot = head + 8 * i
        root = t.root
        raw: int = struct.unpack_from("<q", data, slot)[0]
        value: object
        if root == "BOOLEAN":
            value = data[slot] != 0
        elif root in _STRUCT:
            number: int = struct.unpack_from(_STRUCT[root], data, slot)[0]
            if root == "DATE":
                value = _dt.date.fromordinal(number + _EPOCH_ORDINAL)
            elif root == "TIME":
                secs, ms = divmod(number, 1000)
                value = _dt.time(secs // 3600, secs // 60 % 60, secs % 60, ms * 1000)
            else:
                value = number
        elif root == "FLOAT":
            value = struct.unpack_from("<f", data, slot)[0]
        elif root == "DOUBLE":
            value = struct.unpack_from("<d", data, slot)[0]
        elif root == "DECIMAL":
            scale = t.scale or 0
            if is_compact_decimal(t):
                value = _to_decimal(raw, scale)
            else:
                offset, size = raw >> 32, raw & 0xFFFFFFFF
                value = _to_decimal(int.from_bytes(data[offset : offset + size], "big", signed=True), scale)
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            if is_compact_timestamp(t):
                value = Timestamp(raw)
            else:
                offset = raw >> 32
                value = Timestamp(struct.unpack_from("<q", data, offset)[0], raw & 0xFFFFFFFF)
        elif root in BYTES_ROOTS:
            if raw < 0:  # bit 63 set: inline, length in the high byte
                size = (raw >> 56) & 0x7F
                chunk = bytes(data[slot : slot + size])
            else:
                offset, size = raw >> 32, raw & 0xFFFFFFFF
                chunk = bytes(data[offset : offset + size])
            value = chunk.decode("utf-8") if t.is_string else chunk
        else:
            raise ValueError(f"type {root} is not supported in a BinaryRow scalar codec")
        out.append(value)
    return out


def deserialize_row(data: bytes, types: Sequence[DataType]) -> list[object]:
    """Inverse of :func:`serialize_row`; the arity prefix must match ``len(types)``."""
    if len(data) < 4:
        raise ValueError("serialized BinaryRow shorter than its arity prefix")
    arity = struct.unpack_from(">i", data, 0)[0]
    if arity != len(types):
        raise ValueError(f"serialized BinaryRow has arity {arity}, expected {len(types)}")
    return decode_row(data[4:], types)


# --------------------------------------------------------------------------- hash


def hash_row_bytes(row_bytes: bytes) -> int:
    """Java ``BinaryRow.hashCode()``: MurmurHash3 x86_32 over 4-byte LE words, seed 42, as a Java int."""
    if len(row_bytes) % 4:
        raise ValueError("hashBytesByWords needs a length that is a multiple of 4")
    m = 0xFFFFFFFF
    h = 42
    for (w,) in struct.iter_unpack("<I", row_bytes):
        k = (w * 0xCC9E2D51) & m
        k = (((k << 15) | (k >> 17)) * 0x1B873593) & m
        h ^= k
        h = ((((h << 13) | (h >> 19)) & m) * 5 + 0xE6546B64) & m
    h ^= len(row_bytes)
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & m
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & m
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


EMPTY_ROW: bytes = serialize_row([], [])
