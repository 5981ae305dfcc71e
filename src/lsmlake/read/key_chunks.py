"""Cut an overlapping section into key ranges of bounded size, from the Parquet row-group statistics."""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import TableSchema
from lsmlake.expr import Compare, Predicate, and_, parse_filter
from lsmlake.format.parquet_files import column_ranges
from lsmlake.metadata.data_file import DataFileMeta

# Roots whose Parquet statistics order like lsmlake's key comparison (nulls aside; keys are NOT NULL).
_CHUNKABLE_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "CHAR", "VARCHAR"})


@dataclass(frozen=True)
class RowGroupRange:
    """Key bounds and row count of one Parquet row group."""

    low: Any
    high: Any
    rows: int


def chunkable_key(schema: TableSchema) -> str | None:
    """The single key column a section can be cut on, if the table has one of a cuttable type."""
    keys = schema.trimmed_primary_keys
    if len(keys) != 1 or schema.field(keys[0]).type.root not in _CHUNKABLE_ROOTS:
        return None
    return keys[0]


def row_group_ranges(io: FileIO, path: str, column: str) -> list[RowGroupRange] | None:
    """Min/max of ``column`` per row group from the file footer; None when a bound is missing."""
    if posixpath.splitext(path)[1].lower() != ".parquet":
        return None
    ranges = column_ranges(io, path, column)
    if not ranges.known.all():
        return None
    return [
        RowGroupRange(low, high, int(rows))
        for low, high, rows in zip(ranges.mins, ranges.maxs, ranges.rows, strict=True)
    ]


def cut_points(ranges: Sequence[RowGroupRange], max_rows: int) -> list[Any]:
    """Ascending keys that cut the section so each piece overlaps about ``max_rows`` rows or fewer.

    A piece [cut_i, cut_i+1) is charged the rows of every row group that starts inside it.
    """
    starts = sorted((r.low, r.rows) for r in ranges)
    cuts: list[Any] = []
    rows = 0
    for low, n in starts:
        if rows and rows + n > max_rows and (not cuts or low > cuts[-1]):
            cuts.append(low)
            rows = 0
        rows += n
    return cuts


def piece_filters(
    key: str, cuts: Sequence[Any], schema: TableSchema, base: Predicate | None
) -> list[Predicate | None]:
    """One predicate per piece: ``key < c1``, ``c1 <= key < c2``, ..., ``key >= cn`` (each AND ``base``)."""
    bounds = [None, *cuts, None]
    out = []
    for lo, hi in itertools.pairwise(bounds):
        parts: list[Predicate | None] = [base]
        if lo is not None:
            parts.append(Compare(key, ">=", lo))
        if hi is not None:
            parts.append(Compare(key, "<", hi))
        out.append(parse_filter(and_(*parts), schema.fields))
    return out


def section_pieces(
    io: FileIO,
    schema: TableSchema,
    paths: Sequence[str],
    files: Sequence[DataFileMeta],
    *,
    base: Predicate | None,
    max_rows: int,
) -> list[Predicate | None] | None:
    """Filters cutting these files into bounded pieces, or None when they are small or cannot be cut."""
    if sum(f.row_count for f in files) <= max_rows:
        return None
    key = chunkable_key(schema)
    if key is None or any(f.schema_id != schema.id for f in files):
        return None
    ranges: list[RowGroupRange] = []
    for path in paths:
        found = row_group_ranges(io, path, key)
        if found is None:
            return None
        ranges.extend(found)
    cuts = cut_points(ranges, max_rows)
    return piece_filters(key, cuts, schema, base) if cuts else None
