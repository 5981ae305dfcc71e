"""Column statistics for manifests: min/max/null counts per column, truncated as Paimon truncates."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

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


def _column_min_max(
    column: pa.ChunkedArray | pa.Array, t: DataType, mode: str
) -> tuple[object | None, object | None]:
    if t.root in _NO_MIN_MAX_ROOTS or mode in ("none", "counts"):
        return None, None
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) > 6:
        return None, None  # INT96 in Parquet: Java collects no min/max either
    if len(column) == column.null_count:
        return None, None
    mm = pc.min_max(column)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if isinstance(lo, float) and isinstance(hi, float) and (math.isnan(lo) or math.isnan(hi)):
        return None, None
    m = _TRUNCATE.match(mode)
    if m and isinstance(lo, (str, bytes)) and isinstance(hi, (str, bytes)):
        n = int(m.group(1))
        return _truncate_min(lo, n), _truncate_max(hi, n)
    return lo, hi


def collect_stats(
    table: pa.Table, names: Sequence[str], types: Sequence[DataType], *, mode: str = "truncate(16)"
) -> SimpleStats:
    """SimpleStats over the given columns of ``table`` (one entry per column, in order)."""
    mins: list[object | None] = []
    maxs: list[object | None] = []
    nulls: list[int | None] = []
    for name, t in zip(names, types, strict=True):
        column = table.column(name)
        lo, hi = _column_min_max(column, t, mode)
        mins.append(lo)
        maxs.append(hi)
        nulls.append(None if mode == "none" else column.null_count)
    nullable_types = [t.copy(nullable=True) for t in types]
    return SimpleStats(
        serialize_row(mins, nullable_types), serialize_row(maxs, nullable_types), tuple(nulls)
    )
