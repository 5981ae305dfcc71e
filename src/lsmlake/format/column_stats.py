"""Column statistics for manifests: min/max/null counts per column, truncated as Paimon truncates."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.binary_row import serialize_row
from lsmlake.core.types import DataType
from lsmlake.metadata.stats import SimpleStats

_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")
_NO_MIN_MAX_ROOTS = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB"})


def _truncate_min(value: str | bytes, n: int) -> str | bytes:
    return value[:n]


def _truncate_max(value: str | bytes, n: int) -> str | bytes | None:
    """First n characters with the last one incremented, so the result stays an upper bound."""
    if len(value) <= n:
        return value
    if isinstance(value, bytes):
        head = bytearray(value[:n])
        while head:
            if head[-1] < 0xFF:
                head[-1] += 1
                return bytes(head)
            head.pop()
        return None
    head_s = value[:n]
    while head_s:
        last = ord(head_s[-1]) + 1
        if 0xD800 <= last <= 0xDFFF:
            last = 0xE000
        if last <= 0x10FFFF:
            return head_s[:-1] + chr(last)
        head_s = head_s[:-1]
    return None


def java_float_order(value: Any) -> tuple[bool, float, bool]:
    """Sort key of Java's Float/Double.compareTo: -0.0 before 0.0, NaN (any bits) after everything."""
    if math.isnan(value):
        return (True, 0.0, False)
    return (False, value, math.copysign(1.0, value) > 0)


def _java_float_min_max(column: pa.ChunkedArray | pa.Array) -> tuple[object, object]:
    """Min and max of a float column in Java's compareTo order (Paimon's per-record collectors)."""
    values = np.asarray(pc.drop_null(column).to_numpy(zero_copy_only=False), dtype=np.float64)
    nan = np.isnan(values)
    # Java keeps the first NaN it meets (its bits): every NaN compares equal
    first_nan = float(values[nan][0]) if nan.any() else math.nan
    if nan.all():
        return first_nan, first_nan
    finite = values[~nan]
    lo, hi = float(finite.min()), float(finite.max())
    zeros = np.signbit(finite[finite == 0.0])
    if lo == 0.0:
        lo = -0.0 if zeros.any() else 0.0
    if hi == 0.0:
        hi = 0.0 if not zeros.all() else -0.0
    return lo, (first_nan if nan.any() else hi)


def _column_min_max(
    column: pa.ChunkedArray | pa.Array, t: DataType, mode: str, *, per_record: bool = False
) -> tuple[object, object] | None:
    """Exact (untruncated) min and max of a column; None when unknown or not collected.

    ``per_record``: the bounds Java's per-record collectors find (Avro files): no INT96 gap, binary values
    have none (Java's byte[] is not Comparable), floats order as Java's compareTo (NaN is the maximum)."""
    if t.root in _NO_MIN_MAX_ROOTS or mode in ("none", "counts"):
        return None
    if per_record:
        if t.is_binary:
            return None
        if len(column) == column.null_count:
            return None
        if t.root in ("FLOAT", "DOUBLE"):
            return _java_float_min_max(column)
    elif t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) > 6:
        return None  # INT96 in Parquet: Java collects no min/max either
    if len(column) == column.null_count:
        return None
    mm = pc.min_max(column)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if isinstance(lo, float) and isinstance(hi, float) and (math.isnan(lo) or math.isnan(hi)):
        return None
    return lo, hi


class StatsAccumulator:
    """Min/max/null counts of some columns over a stream of tables, as Paimon's SimpleStats.

    A column whose bounds are unknown in any table (NaN, INT96) stays unknown; strings are
    truncated as ``mode`` says only at the end, so the bounds stay valid.
    """

    def __init__(
        self, names: Sequence[str], types: Sequence[DataType], *, mode: str, per_record: bool = False
    ) -> None:
        self.names, self.types, self.mode = list(names), list(types), mode
        self.per_record = per_record
        self._bounds: list[tuple[object, object] | None] = [None] * len(self.names)
        self._unknown = [False] * len(self.names)
        self._nulls = [0] * len(self.names)

    def add(self, table: pa.Table) -> None:
        for i, (name, t) in enumerate(zip(self.names, self.types, strict=True)):
            column = table.column(name)
            self._nulls[i] += column.null_count
            if self._unknown[i] or len(column) == column.null_count:
                continue
            bounds = _column_min_max(column, t, self.mode, per_record=self.per_record)
            if bounds is None:
                self._unknown[i] = True
                continue
            old = self._bounds[i]
            new_lo: Any = bounds[0]
            new_hi: Any = bounds[1]
            if old is None:
                self._bounds[i] = (new_lo, new_hi)
            elif self.per_record and t.root in ("FLOAT", "DOUBLE"):
                self._bounds[i] = (
                    min(old[0], new_lo, key=java_float_order),
                    max(old[1], new_hi, key=java_float_order),
                )
            else:
                self._bounds[i] = (min(old[0], new_lo), max(old[1], new_hi))

    def result(self) -> SimpleStats:
        mins: list[object | None] = []
        maxs: list[object | None] = []
        truncate = _TRUNCATE.match(self.mode)
        for i in range(len(self.names)):
            bounds = None if self._unknown[i] else self._bounds[i]
            lo, hi = bounds if bounds is not None else (None, None)
            if truncate and isinstance(lo, (str, bytes)) and isinstance(hi, (str, bytes)):
                n = int(truncate.group(1))
                lo, hi = _truncate_min(lo, n), _truncate_max(hi, n)
                if hi is None:  # no upper bound fits: Paimon's truncate collector keeps neither bound
                    lo = None
            mins.append(lo)
            maxs.append(hi)
        nulls: tuple[int | None, ...] = tuple(None if self.mode == "none" else n for n in self._nulls)
        nullable_types = [t.copy(nullable=True) for t in self.types]
        return SimpleStats(serialize_row(mins, nullable_types), serialize_row(maxs, nullable_types), nulls)
