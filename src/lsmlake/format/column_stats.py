"""Column statistics for manifests: min/max/null counts per column, truncated as Paimon truncates."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.binary_row import serialize_row
from lsmlake.core.types import DataType
from lsmlake.metadata.stats import SimpleStats

_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")
KEY_STATS_MODE = "truncate(128)"
"""Paimon collects the stats of key (``_KEY_``) and system columns as truncate(128), whatever the table's mode."""
SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})
KEY_FIELD_PREFIX = "_KEY_"


def column_stats_modes(
    names: Sequence[str],
    mode: str,
    field_mode: Callable[[str], str | None],
    keep_first_n: int,
    *,
    avro: bool = False,
) -> list[str]:
    """Each column's stats mode as Paimon's StatsCollectorFactories decides it: its
    ``fields.<name>.stats-mode`` first; a key or system column truncate(128); else ``mode``, or none for
    the columns after the first ``keep_first_n`` (-1: no limit; system columns are not counted). For an
    Avro file (createStatsFactoriesForAvro) key and system columns get no special mode and count too."""
    modes: list[str] = []
    counted = 0
    for name in names:
        own = field_mode(name)
        if own is not None:
            modes.append(own)
            counted += 1
        elif not avro and (name.startswith(KEY_FIELD_PREFIX) or name in SYSTEM_FIELD_NAMES):
            modes.append(KEY_STATS_MODE)
        else:
            modes.append("none" if 0 <= keep_first_n <= counted else mode)
            counted += 1
    return modes
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

    ``mode`` is one stats mode for every column or one per column (none, counts, full, truncate(N)). A
    column whose bounds are unknown in any table (NaN, INT96) stays unknown; strings are truncated as
    its mode says only at the end, so the bounds stay valid.
    """

    def __init__(
        self,
        names: Sequence[str],
        types: Sequence[DataType],
        *,
        mode: str | Sequence[str],
        per_record: bool = False,
    ) -> None:
        self.names, self.types = list(names), list(types)
        self.modes = [mode] * len(self.names) if isinstance(mode, str) else list(mode)
        if len(self.modes) != len(self.names):
            raise ValueError(f"{len(self.modes)} stats modes for {len(self.names)} columns")
        self.per_record = per_record
        self._bounds: list[tuple[object, object] | None] = [None] * len(self.names)
        self._unknown = [False] * len(self.names)
        self._nulls = [0] * len(self.names)

    def add(self, table: pa.Table) -> None:
        for i, (name, t) in enumerate(zip(self.names, self.types, strict=True)):
            if self.modes[i] == "none":
                continue
            column = table.column(name)
            self._nulls[i] += column.null_count
            if self._unknown[i] or len(column) == column.null_count:
                continue
            bounds = _column_min_max(column, t, self.modes[i], per_record=self.per_record)
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

    def _column(self, i: int) -> tuple[object, object, int | None]:
        """Column ``i``'s (min, max, null count), truncated as its mode says; all None for mode none."""
        mode = self.modes[i]
        if mode == "none":
            return None, None, None
        bounds = None if self._unknown[i] else self._bounds[i]
        lo, hi = bounds if bounds is not None else (None, None)
        truncate = _TRUNCATE.match(mode)
        if truncate and isinstance(lo, (str, bytes)) and isinstance(hi, (str, bytes)):
            n = int(truncate.group(1))
            lo, hi = _truncate_min(lo, n), _truncate_max(hi, n)
            if hi is None:  # no upper bound fits: Paimon's truncate collector keeps neither bound
                lo = None
        return lo, hi, self._nulls[i]

    def result(self) -> SimpleStats:
        """The stats of every column (a column of mode none: null min, max and null count)."""
        return self._stats(range(len(self.names)))

    def dense_result(self) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """Paimon's dense store: the stats of only the columns whose mode is not none, and their names
        (None when that is every column), as Java's SimpleStatsConverter writes ``_VALUE_STATS_COLS``."""
        kept = [i for i, m in enumerate(self.modes) if m != "none"]
        if len(kept) == len(self.names):
            return self._stats(kept), None
        return self._stats(kept), tuple(self.names[i] for i in kept)

    def _stats(self, columns: Sequence[int]) -> SimpleStats:
        values = [self._column(i) for i in columns]
        nullable_types = [self.types[i].copy(nullable=True) for i in columns]
        return SimpleStats(
            serialize_row([v[0] for v in values], nullable_types),
            serialize_row([v[1] for v in values], nullable_types),
            tuple(v[2] for v in values),
        )
