"""Filter literals: coercion to a column's Python form, Arrow scalars, and SQL spelling."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.core.binary_row import Timestamp, unscaled_decimal
from lsmlake.core.types import DataType, timestamp_unit, to_arrow_type
from lsmlake.errors import InvalidFilterError

FLOAT_ROOTS = frozenset({"FLOAT", "DOUBLE"})
INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_TS = re.compile(
    r"(\d{4,})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?"
)


def _parse_timestamp(text: str) -> Timestamp:
    m = _TS.fullmatch(text.strip())
    if not m:
        raise ValueError("expected 'YYYY-MM-DD[ HH:MM[:SS[.fraction]]][+HH:MM]'")
    y, mo, d, h, mi, s, frac, tz = m.groups()
    days = dt.date(int(y), int(mo), int(d)).toordinal() - _EPOCH_DAY
    h, mi, s = int(h or 0), int(mi or 0), int(s or 0)
    if h > 23 or mi > 59 or s > 59:
        raise ValueError("time of day out of range")
    nanos = int((frac or "").ljust(9, "0"))
    if tz and tz != "Z":
        digits = tz[1:].replace(":", "")
        mi -= (-1 if tz[0] == "-" else 1) * (int(digits[:2]) * 60 + int(digits[2:]))
    return Timestamp((((days * 24 + h) * 60 + mi) * 60 + s) * 1000 + nanos // 1_000_000, nanos % 1_000_000)


def _number(v: Any) -> Any:
    if isinstance(v, bool):
        raise TypeError("expected a number, got a boolean")
    if isinstance(v, str):
        try:
            return Decimal(v.strip())
        except InvalidOperation:
            raise ValueError("not a number") from None
    if not isinstance(v, (int, float, Decimal)):
        raise TypeError("expected a number")
    return v


def _coerce(v: Any, t: DataType) -> Any:
    r = t.root
    v = v.item() if isinstance(v, np.generic) else v
    if r == "BOOLEAN":
        if isinstance(v, str) and v.strip().lower() in ("true", "false"):
            return v.strip().lower() == "true"
        if not isinstance(v, bool):
            raise TypeError("expected a boolean")
        return v
    if r in INT_BITS:
        n = _number(v)
        if not isinstance(n, int):
            if not math.isfinite(n) or n != int(n):
                raise ValueError("not an integer")
            n = int(n)
        if not -(1 << (INT_BITS[r] - 1)) <= n < 1 << (INT_BITS[r] - 1):
            raise ValueError("out of range")
        return n
    if r in FLOAT_ROOTS:
        return float(v) if isinstance(v, str) else float(_number(v))
    if r == "DECIMAL":
        n = _number(v)
        d = Decimal(repr(n)) if isinstance(n, float) else Decimal(n)
        if not d.is_finite():
            raise ValueError("not a finite number")
        try:  # exact at the column's scale: the column's form; otherwise compared exactly as given
            unscaled = unscaled_decimal(d, t.precision or 10, t.scale or 0)
            return Decimal((int(unscaled < 0), tuple(int(c) for c in str(abs(unscaled))), -(t.scale or 0)))
        except ValueError:
            return d
    if r == "DATE":
        if isinstance(v, dt.datetime):
            if v.tzinfo is None and v.time() == dt.time(0):
                return v.date()
            raise ValueError("a timestamp is not a date")
        if isinstance(v, dt.date):
            return v
        if isinstance(v, str):
            return dt.date.fromisoformat(v.strip())
        raise TypeError("expected a date")
    if r == "TIME":
        v = dt.time.fromisoformat(v.strip()) if isinstance(v, str) else v
        if isinstance(v, dt.time) and v.tzinfo is None:
            return v
        raise TypeError("expected a naive time of day")
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if isinstance(v, Timestamp):
            return v
        if isinstance(v, dt.datetime):
            return Timestamp.from_datetime(v)
        if isinstance(v, dt.date):
            return Timestamp((v.toordinal() - _EPOCH_DAY) * 86_400_000)
        if isinstance(v, str):
            return _parse_timestamp(v)
        raise TypeError("expected a timestamp")
    if t.is_string and isinstance(v, str):
        return v
    if t.is_binary and isinstance(v, (bytes, bytearray, memoryview, str)):
        return v.encode("utf-8") if isinstance(v, str) else bytes(v)
    if t.is_string or t.is_binary:
        raise TypeError(f"expected {'a string' if t.is_string else 'bytes'}")
    raise ValueError(f"filters on {r} columns are not supported")


def coerce_literal(value: Any, dtype: DataType, *, column: str = "?") -> Any:
    """``value`` in binary_row's Python convention for ``dtype``; ValueError naming the column if not."""
    if value is None:
        return None
    try:
        return _coerce(value, dtype)
    except (TypeError, ValueError, ArithmeticError) as e:
        raise InvalidFilterError(
            f"literal {value!r} does not fit column {column!r} of type {dtype}: {e}"
        ) from None


def arrow_scalar(v: Any, t: DataType | None) -> pa.Scalar:
    if isinstance(v, Timestamp):
        unit = "ns" if t is None else timestamp_unit(t.precision or 0)
        per = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}[unit]
        unit, per = (unit, per) if v.epoch_nanos % per == 0 else ("ns", 1)
        tz = "UTC" if t is not None and t.root == "TIMESTAMP_LTZ" else None
        return pa.scalar(v.epoch_nanos // per, pa.timestamp(unit, tz=tz))
    if t is None:
        return pa.scalar(v)
    if t.root in FLOAT_ROOTS:
        return pa.scalar(float(v))
    if t.root == "DECIMAL":
        parts = v.as_tuple()
        if -parts.exponent != t.scale or len(parts.digits) > (t.precision or 10):
            return pa.scalar(v)  # not in the column's form: Arrow widens the comparison
    if t.root == "TIME" and v.microsecond % 1000:
        return pa.scalar(v, pa.time64("us"))
    return pa.scalar(v, to_arrow_type(t))


def sql_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def sql_literal(v: Any) -> str:
    if v is None or isinstance(v, bool):
        return {None: "NULL", True: "TRUE", False: "FALSE"}[v]
    if isinstance(v, float) and not math.isfinite(v):
        return f"CAST('{v}' AS DOUBLE)"
    if isinstance(v, (int, float, Decimal)):
        return format(v, "f") if isinstance(v, Decimal) else repr(v)
    if isinstance(v, Timestamp):
        base = v.to_datetime().replace(microsecond=0).isoformat(" ")
        return f"TIMESTAMP '{base}.{(v.millis % 1000) * 1_000_000 + v.nanos_of_milli:09d}'"
    if isinstance(v, (dt.date, dt.time)):
        kind = "TIMESTAMP" if isinstance(v, dt.datetime) else "DATE" if isinstance(v, dt.date) else "TIME"
        return f"{kind} '{v.isoformat(' ') if isinstance(v, dt.datetime) else v.isoformat()}'"
    text = v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)
    return "'" + text.replace("'", "''") + "'"
