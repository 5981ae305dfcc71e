"""SimpleStats: min/max rows and null counts, their Avro record, and their decoding into column stats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsmlake.core.binary_row import EMPTY_ROW, deserialize_row
from lsmlake.core.types import DataField, DataType
from lsmlake.errors import CorruptFileError
from lsmlake.expr.literals import FLOAT_ROOTS, INT_BITS
from lsmlake.expr.stats import ColumnStats


@dataclass(frozen=True)
class SimpleStats:
    """Min/max BinaryRows (serialized, with BE arity prefix) and per-column null counts."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    def __post_init__(self) -> None:
        if self.null_counts is not None and not isinstance(self.null_counts, tuple):
            object.__setattr__(self, "null_counts", tuple(self.null_counts))


EMPTY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


def stats_avro_schema(name: str) -> dict[str, Any]:
    """The Avro record schema of a SimpleStats field, named like Java's AvroSchemaConverter."""
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {
                "name": "_NULL_COUNTS",
                "type": ["null", {"type": "array", "items": ["null", "long"]}],
                "default": None,
            },
        ],
    }


def stats_to_avro(s: SimpleStats) -> dict[str, Any]:
    return {
        "_MIN_VALUES": s.min_values,
        "_MAX_VALUES": s.max_values,
        "_NULL_COUNTS": None if s.null_counts is None else list(s.null_counts),
    }


def stats_from_avro(rec: Mapping[str, Any] | None) -> SimpleStats:
    """Decode a SimpleStats record; a null record (≤0.9 nullable wrapper) reads as EMPTY_STATS."""
    if rec is None:
        return EMPTY_STATS
    counts = rec.get("_NULL_COUNTS")
    return SimpleStats(
        bytes(rec["_MIN_VALUES"]),
        bytes(rec["_MAX_VALUES"]),
        None if counts is None else tuple(None if c is None else int(c) for c in counts),
    )


def opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def opt_strs(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(str(v) for v in value)


_SCALAR_ROOTS = frozenset(
    {
        *INT_BITS,
        *FLOAT_ROOTS,
        "BOOLEAN",
        "DATE",
        "TIME",
        "DECIMAL",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
        "CHAR",
        "VARCHAR",
        "BINARY",
        "VARBINARY",
        "BLOB",
    }
)


def stats_from_simple(
    simple: SimpleStats, fields: Sequence[DataField], row_count: int, *, name: str = ""
) -> dict[str, ColumnStats]:
    """Decode a SimpleStats (min/max BinaryRows over ``fields``) into ColumnStats by column name."""
    scalar = [f.type.root in _SCALAR_ROOTS for f in fields]
    types = [f.type if ok else DataType("BIGINT") for f, ok in zip(fields, scalar, strict=True)]
    counts = [*(simple.null_counts or ()), *([None] * len(fields))]
    try:
        mins = deserialize_row(simple.min_values, types) if fields else []
        maxs = deserialize_row(simple.max_values, types) if fields else []
    except ValueError as e:
        if simple.min_values[:4] != b"\x00\x00\x00\x00":  # not the empty row of stats mode 'none'
            raise CorruptFileError(f"cannot decode column statistics {name}: {e}".strip()) from e
        mins = maxs = [None] * len(fields)
    out: dict[str, ColumnStats] = {}
    for f, ok, lo, hi, n in zip(fields, scalar, mins, maxs, counts, strict=False):
        count = n if n is not None and 0 <= n <= row_count else None
        out[f.name] = ColumnStats(lo if ok else None, hi if ok else None, count)
    return out
