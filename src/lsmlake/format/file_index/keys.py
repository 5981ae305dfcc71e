"""Index keys: a column's Arrow values and a filter literal in the form Paimon's file indexes store them."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.binary_row import Timestamp
from lsmlake.core.types import DataType

INT_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME"})
FLOAT_ROOTS = frozenset({"FLOAT", "DOUBLE"})
TIMESTAMP_ROOTS = frozenset({"TIMESTAMP", "TIMESTAMP_LTZ"})
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


def timestamp_divisor(t: DataType) -> int:
    """Nanoseconds per index unit: milliseconds up to precision 3, else microseconds (Paimon's choice)."""
    return 1_000_000 if (t.precision or 0) <= 3 else 1000


def is_bytes_type(t: DataType) -> bool:
    return t.is_string or t.is_binary


def array_keys(column: pa.ChunkedArray | pa.Array, t: DataType) -> tuple[Any, np.ndarray]:
    """(values, null mask) of a column: an int64/float/bool numpy array, or a binary Arrow array for strings."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    nulls = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if is_bytes_type(t):
        binary = (
            pa.large_binary()
            if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
            else pa.binary()
        )
        return pc.cast(arr, binary), nulls
    if t.root in TIMESTAMP_ROOTS:
        unit = arr.type.unit
        raw = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
        return (raw * _UNIT_NANOS[unit]) // timestamp_divisor(t), nulls
    if t.root in FLOAT_ROOTS:
        return np.asarray(
            arr.fill_null(0).to_numpy(), dtype=np.float32 if t.root == "FLOAT" else np.float64
        ), nulls
    if t.root == "DATE":
        return np.asarray(arr.cast(pa.int32()).fill_null(0).to_numpy(), dtype=np.int64), nulls
    if t.root == "TIME":
        return np.asarray(arr.cast(pa.int32()).fill_null(0).to_numpy(), dtype=np.int64), nulls
    if t.root in INT_ROOTS:
        return np.asarray(arr.fill_null(0).to_numpy(), dtype=np.int64), nulls
    if t.root == "DECIMAL":  # the unscaled value: the low 8 bytes of each little-endian decimal128
        arr = arr.cast(pa.decimal128(38, t.scale or 0)) if arr.type.bit_width != 128 else arr
        words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[2 * arr.offset : 2 * (arr.offset + len(arr))]
        return np.where(nulls, 0, words[::2]), nulls
    if t.root == "BOOLEAN":
        return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool), nulls
    raise TypeError(f"{t.root} columns cannot be indexed")


def distinct_live(values: Any, nulls: np.ndarray) -> Any:
    """The non-null values: distinct bytes for a binary Arrow array (hashed one by one), else a numpy array."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return pc.unique(values.drop_null()).to_pylist()
    return np.asarray(values)[~nulls]


def literal_key(value: Any, t: DataType) -> Any:
    """A filter literal as an index key (int, float, bool or bytes); None when it has no exact key."""
    if value is None:
        return None
    if t.root == "CHAR":
        return None  # CHAR(n) values may be stored padded: no exact key for an unpadded literal
    if is_bytes_type(t):
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None
    if t.root in TIMESTAMP_ROOTS:
        if not isinstance(value, Timestamp):
            return None
        return value.epoch_nanos // timestamp_divisor(t)
    if t.root == "DATE":
        return value.toordinal() - _EPOCH_DAY if isinstance(value, dt.date) else None
    if t.root == "TIME":
        # the index holds milliseconds: a literal between two of them has no key (no pruning with it;
        # truncated, a strict or negated comparison would drop rows that match)
        if not isinstance(value, dt.time) or value.microsecond % 1000:
            return None
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if t.root in FLOAT_ROOTS:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, Decimal))
            or math.isnan(float(value))
        ):
            return None
        if t.root == "FLOAT" and float(np.float32(value)) != float(value):
            return None  # no 32-bit float equals it: rounded, `!=` would drop rows that match
        return float(value)
    if t.root in INT_ROOTS:
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if t.root == "DECIMAL":
        if not isinstance(value, (int, Decimal)):
            return None
        d = Decimal(value).scaleb(t.scale or 0)
        return int(d) if d == d.to_integral_value() else None
    if t.root == "BOOLEAN":
        return value if isinstance(value, bool) else None
    return None
