"""Record-level expiry in compaction, as Paimon's RecordLevelExpire: rows whose `record-level.time-field`
is older than now less `record-level.expire-time` are dropped from the files a compaction reads, and a
file whose smallest time has expired is rewritten rather than moved up unchanged."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core import clock
from lsmlake.core.binary_row import Timestamp
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataType
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.stats import stats_from_simple
from lsmlake.schema_change.apply import check_record_level_time_field
from lsmlake.schema_change.stats import StatsEvolution

_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
_MILLIS_THRESHOLD = 1_000_000_000_000
"""A BIGINT time at or above this is milliseconds (Paimon's rule); below it, seconds."""


def _java_seconds(millis: int) -> int:
    """``millis / 1000`` in Java (truncating toward zero)."""
    return int(millis / 1000) if millis < 0 else millis // 1000


def value_seconds(value: object, t: DataType) -> int | None:
    """A time field's value (from statistics) in seconds, as Paimon reads it."""
    if value is None:
        return None
    if t.root in _TIMESTAMPS:
        if isinstance(value, Timestamp):
            return _java_seconds(value.millis)
        if isinstance(value, dt.datetime):
            return _java_seconds(Timestamp.from_datetime(value).millis)
        return None
    if not isinstance(value, int):
        return None
    number = value
    if t.root == "BIGINT" and number >= _MILLIS_THRESHOLD:
        return _java_seconds(number)
    return number


def column_seconds(column: pa.ChunkedArray | pa.Array, t: DataType) -> tuple[np.ndarray, np.ndarray]:
    """A time column in seconds (int64) and its null mask, vectorized."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    nulls = column.is_null().to_numpy(zero_copy_only=False)
    raw = pc.cast(column, pa.int64()).fill_null(0).to_numpy().astype(np.int64)
    if t.root not in _TIMESTAMPS:
        if t.root != "BIGINT":
            return raw, nulls
        return np.where(raw >= _MILLIS_THRESHOLD, raw // 1000, raw), nulls
    unit = column.type.unit
    millis = raw * 1000 if unit == "s" else np.floor_divide(raw, {"ms": 1, "us": 1000, "ns": 1_000_000}[unit])
    return np.where(millis >= 0, millis // 1000, -((-millis) // 1000)), nulls


@dataclass
class RecordExpire:
    """One compaction's view: the field, its type, the expire time and the clock read once."""

    field: str
    type: DataType
    expire_seconds: int
    now_seconds: int
    schema: TableSchema
    evolution: StatsEvolution

    @staticmethod
    def create(
        options: CoreOptions, schema: TableSchema, evolution: StatsEvolution, *, table: str
    ) -> RecordExpire | None:
        expire_ms = options.get(CoreOptions.RECORD_LEVEL_EXPIRE_TIME)
        if expire_ms is None:
            return None
        check_record_level_time_field(schema, options, table=table)
        name = options.get(CoreOptions.RECORD_LEVEL_TIME_FIELD)
        assert name is not None
        return RecordExpire(
            name, schema.field(name).type, expire_ms // 1000, clock.epoch_millis() // 1000, schema, evolution
        )

    def is_expired_file(self, f: DataFileMeta) -> bool:
        """Whether the file's smallest time has expired (unknown statistics: no)."""
        if f.schema_id != self.schema.id:
            try:
                stats = self.evolution.value_stats(f)
            except (ValueError, KeyError, TypeError, IndexError):
                return False
        else:
            names = f.value_stats_cols if f.value_stats_cols is not None else self.schema.field_names
            if self.field not in names or any(n not in self.schema.field_names for n in names):
                return False
            stats = stats_from_simple(f.value_stats, [self.schema.field(n) for n in names], f.row_count)
        column = None if stats is None else stats.get(self.field)
        low = None if column is None else value_seconds(column.min, self.type)
        return low is not None and self.now_seconds - self.expire_seconds > low

    def live_rows(self, rows: pa.Table) -> pa.Table:
        """The rows that have not expired (a null time never expires)."""
        seconds, nulls = column_seconds(rows.column(self.field), self.type)
        keep = nulls | (self.now_seconds <= seconds + self.expire_seconds)
        return rows if keep.all() else rows.filter(pa.array(keep))
