"""Values rendered as Java Paimon's system tables render them: CAST(... AS STRING) and Object.toString()."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from decimal import Decimal

import numpy as np

from lsmlake.core.binary_row import Timestamp, deserialize_row
from lsmlake.core.types import ATOMIC_ROOTS, DataType

_EPOCH_DATE = dt.date(1970, 1, 1)
# every atomic type but VARIANT has a BinaryRow form lsmlake decodes
_DECODABLE = ATOMIC_ROOTS - {"VARIANT"}
_PLACEHOLDER = DataType("BIGINT")


def decode_stats_row(data: bytes, types: Sequence[DataType]) -> list[object]:
    """Decode a serialized BinaryRow whose nested/variant slots are always null (stats, keys)."""
    safe = [t if t.root in _DECODABLE else _PLACEHOLDER for t in types]
    values = deserialize_row(data, safe)
    return [None if t.root not in _DECODABLE else v for v, t in zip(values, types, strict=True)]


# --------------------------------------------------------------------------- numbers


def _java_scientific(text: str) -> str:
    d = Decimal(text)
    sign, digits, _ = d.normalize().as_tuple()
    mantissa = "".join(map(str, digits)) or "0"
    body = mantissa[0] + "." + (mantissa[1:] or "0")
    return ("-" if sign else "") + f"{body}E{d.adjusted()}"


def java_double(value: float, *, single: bool = False) -> str:
    """``Double.toString`` / ``Float.toString``: plain in [1e-3, 1e7), else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = str(np.float32(value)) if single else repr(float(value))
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        plain = format(Decimal(text), "f")
        return plain if "." in plain else plain + ".0"
    return _java_scientific(text)


def _days(value: dt.date) -> int:
    return (value - _EPOCH_DATE).days


def _millis_of_day(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def _fraction(nanos: int, min_digits: int) -> str:
    frac = f"{nanos:09d}"
    while len(frac) > min_digits and frac.endswith("0"):
        frac = frac[:-1]
    return frac


def _wall_clock(ts: Timestamp, t: DataType) -> tuple[dt.datetime, int]:
    """The wall-clock datetime (seconds resolution) and nanos of second Java would format."""
    millis = ts.millis
    if t.root == "TIMESTAMP_LTZ":
        millis = utc_to_local_millis(millis)
    seconds, ms = divmod(millis, 1000)
    return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds), ms * 1_000_000 + ts.nanos_of_milli


def utc_to_local_millis(millis: int) -> int:
    """An epoch instant as this machine's local wall clock, encoded as if UTC (Java's LocalDateTime)."""
    offset = dt.datetime.fromtimestamp(millis / 1000, dt.timezone.utc).astimezone().utcoffset()
    return millis + (int(offset.total_seconds() * 1000) if offset else 0)


# --------------------------------------------------------------------------- CAST(x AS STRING)


def cast_to_string(value: object, t: DataType) -> str:
    """Paimon's CastExecutors to STRING (used for partitions in `$files`, `$buckets`, ...)."""
    root = t.root
    if isinstance(value, bool):
        return "true" if value else "false"
    if root in ("FLOAT", "DOUBLE") and isinstance(value, float):
        return java_double(value, single=root == "FLOAT")
    if isinstance(value, Decimal):
        return format(value, "f")
    if root == "DATE" and isinstance(value, dt.date):
        return value.isoformat()
    if root == "TIME" and isinstance(value, dt.time):
        precision = 0 if t.precision is None else t.precision
        text = value.strftime("%H:%M:%S")
        if precision > 0:
            ms = value.microsecond // 1000
            digits = ""
            while precision > 0:
                digits += str(ms // 100)
                ms = ms % 100 * 10
                if ms == 0:
                    break
                precision -= 1
            text += "." + digits
        return text
    if isinstance(value, Timestamp):
        precision = 6 if t.precision is None else t.precision
        wall, nanos = _wall_clock(value, t)
        frac = _fraction(nanos, precision)
        return wall.strftime("%Y-%m-%d %H:%M:%S") + ("." + frac if frac else "")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def row_to_string(values: Sequence[object], types: Sequence[DataType]) -> str:
    """A ROW cast to STRING: ``{v1, v2}`` with ``null`` for nulls (``{}`` for an empty row)."""
    parts = ["null" if v is None else cast_to_string(v, t) for v, t in zip(values, types, strict=True)]
    return "{" + ", ".join(parts) + "}"


# --------------------------------------------------------------------------- Object.toString()


def _local_datetime_string(ts: Timestamp) -> str:
    """``LocalDateTime.toString()`` of Paimon's Timestamp (ISO, seconds/fraction only when non-zero)."""
    seconds, ms = divmod(ts.millis, 1000)
    wall = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
    nanos = ms * 1_000_000 + ts.nanos_of_milli
    text = wall.strftime("%Y-%m-%dT%H:%M")
    if wall.second or nanos:
        text += f":{wall.second:02d}"
    if nanos:
        if nanos % 1_000_000 == 0:
            text += f".{nanos // 1_000_000:03d}"
        elif nanos % 1000 == 0:
            text += f".{nanos // 1000:06d}"
        else:
            text += f".{nanos:09d}"
    return text


def internal_string(value: object, t: DataType) -> str:
    """``toString()`` of Paimon's internal value (DATE as days, TIME as millis, BinaryString, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value, single=t.root == "FLOAT")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.date):
        return str(_days(value))
    if isinstance(value, dt.time):
        return str(_millis_of_day(value))
    if isinstance(value, Timestamp):
        return _local_datetime_string(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def key_string(values: Sequence[object], types: Sequence[DataType]) -> str:
    """``Arrays.toString`` of a key: ``[1, a]``."""
    return "[" + ", ".join(internal_string(v, t) for v, t in zip(values, types, strict=True)) + "]"


def map_string(entries: Sequence[tuple[str, str]]) -> str:
    """A Java TreeMap's ``toString``: ``{a=1, b=null}``, sorted by key."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(entries)) + "}"


def duration_string(ms: int) -> str:
    """``java.time.Duration.toString()`` (``PT24H``, ``PT1H30M``, ``PT0.5S``)."""
    if ms == 0:
        return "PT0S"
    sign = "-" if ms < 0 else ""
    total_seconds, millis = divmod(abs(ms), 1000)
    hours, rest = divmod(total_seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    out = "PT"
    if hours:
        out += f"{sign}{hours}H"
    if minutes:
        out += f"{sign}{minutes}M"
    if seconds or millis:
        frac = f".{millis:03d}".rstrip("0") if millis else ""
        out += f"{sign}{seconds}{frac}S"
    return out
