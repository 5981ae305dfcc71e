"""Parquet data files read through cached footers: row groups chosen by their statistics, then decoded.

Data files are immutable (every name is unique), so a file's footer is read once per process and
kept in a byte-bounded LRU of the cache registry; a local file whose size changed under it is re-read. Row groups are pruned
with the same predicate logic as manifest statistics, without building an Arrow dataset per file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lsmlake.core.caches import MB, ByteLRU
from lsmlake.core.fileio import FileIO
from lsmlake.core.types import is_int64
from lsmlake.expr import ColumnStats, Compare, Predicate, conjuncts, might_match
from lsmlake.expr.literals import is_nan

# Constant columns are filled in from this many row groups on (below, decoding them costs no more).
_FILL_MIN_GROUPS = 4


@dataclass
class _Footer:
    """A cached footer, with per-column row-group statistics as arrays (built on first use)."""

    meta: pq.FileMetaData
    size: int | None
    columns: dict[str, ColumnRanges] = field(default_factory=dict)

    @cached_property
    def schema_arrow(self) -> pa.Schema:
        return self.meta.schema.to_arrow_schema()

    def ranges(self, name: str) -> ColumnRanges:
        if name not in self.columns:
            self.columns[name] = ColumnRanges.of(self.meta, name)
        return self.columns[name]

    @cached_property
    def nonempty(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Whether each row group has rows."""
        return np.diff(self.row_starts) > 0

    @cached_property
    def row_starts(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        """The file position of each row group's first row, and the row count last."""
        counts = [self.meta.row_group(i).num_rows for i in range(self.meta.num_row_groups)]
        return np.cumsum([0, *counts], dtype=np.int64)


@dataclass(frozen=True)
class ColumnRanges:
    """Min, max and null count of one column in every row group (``known`` False where absent)."""

    mins: np.ndarray[Any, Any]
    maxs: np.ndarray[Any, Any]
    known: np.ndarray[Any, np.dtype[np.bool_]]
    all_null: np.ndarray[Any, np.dtype[np.bool_]]
    no_null: np.ndarray[Any, np.dtype[np.bool_]]
    rows: np.ndarray[Any, np.dtype[np.int64]]

    @staticmethod
    def of(meta: pq.FileMetaData, name: str) -> ColumnRanges:
        """The ranges of the top-level column ``name`` (nothing known when the file lacks it)."""
        n = meta.num_row_groups
        mins, maxs = np.empty(n, dtype=object), np.empty(n, dtype=object)
        known, all_null, no_null = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        rows = np.array([meta.row_group(i).num_rows for i in range(n)], dtype=np.int64)
        paths = [meta.schema.column(i).path for i in range(meta.num_columns)]  # leaf paths: nested-safe
        index = paths.index(name) if name in paths else -1
        for i in range(n if index >= 0 else 0):
            column = meta.row_group(i).column(index)
            s = column.statistics if column.is_stats_set else None
            if s is None:
                continue
            all_null[i] = s.has_null_count and s.null_count >= rows[i]
            no_null[i] = s.has_null_count and s.null_count == 0
            if s.has_min_max and not is_nan(s.min) and not is_nan(s.max):
                mins[i], maxs[i], known[i] = s.min, s.max, True
        return ColumnRanges(mins, maxs, known, all_null, no_null, rows)

    @cached_property
    def _single_ints(self) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], np.ndarray[Any, np.dtype[np.int64]]]:
        """Per row group: whether it holds one integer value and no null, and that value (else 0)."""
        single = self.known & self.no_null
        values = np.zeros(len(single), dtype=np.int64)
        for i in np.flatnonzero(single):
            lo, hi = self.mins[i], self.maxs[i]
            single[i] = type(lo) is int and lo == hi and is_int64(lo)
            values[i] = lo if single[i] else 0
        return single, values

    @cached_property
    def typed_bounds(self) -> tuple[type, np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
        """Every row group's min and max as int64 or float64 arrays, with their Python type, when every
        known one is an int in int64's range or every one a float; a group without statistics spans
        the whole type (comparisons then run in numpy over all groups at once)."""
        lo_known, hi_known = self.mins[self.known], self.maxs[self.known]
        kinds = {type(v) for v in (*lo_known, *hi_known)}
        bounds: dict[type, tuple[Any, Any, Any]] = {
            int: (np.int64, np.iinfo(np.int64).min, np.iinfo(np.int64).max),
            float: (np.float64, -np.inf, np.inf),
        }
        if len(kinds) != 1 or (kind := kinds.pop()) not in bounds:
            return None
        dtype, low, high = bounds[kind]
        lo, hi = np.full(len(self.known), low, dtype=dtype), np.full(len(self.known), high, dtype=dtype)
        try:
            lo[self.known], hi[self.known] = list(lo_known), list(hi_known)
        except OverflowError:
            return None
        return kind, lo, hi

    def constant(self, groups: list[int]) -> int | None:
        """The one value an integer column holds in every row of ``groups``, when the statistics
        prove it (min = max everywhere, no nulls); else None."""
        single, values = self._single_ints
        if not groups or not single[groups].all():
            return None
        chosen = values[groups]
        return int(chosen[0]) if (chosen == chosen[0]).all() else None


_footers: ByteLRU[_Footer] = ByteLRU("parquet footers", 64 * MB)
"""Footers by (FileIO, path), weighed by the memory a decoded footer holds (``footer_bytes``)."""

# Memory of one column chunk's decoded metadata: pyarrow 26 holds 550-900 bytes per chunk (measured
# over 3-40 columns, 30-120 row groups, with and without statistics), about 5-8x its serialized
# size; the rest of the KiB covers the statistics arrays ``ColumnRanges`` builds from it.
COLUMN_CHUNK_BYTES = 1024


def footer_bytes(meta: pq.FileMetaData) -> int:
    """What a decoded footer costs in memory: its serialized bytes plus every column chunk's
    decoded metadata. Weighing by the serialized size alone let the 64 MB cache hold ~400 MB of
    footers of files with many row groups (a large write's level-0 files)."""
    return int(meta.serialized_size) + int(meta.num_row_groups) * int(meta.num_columns) * COLUMN_CHUNK_BYTES


def _local_size(io: FileIO, path: str) -> int | None:
    """A local file's size (to notice a file replaced in place); None on object stores."""
    if not io.local:
        return None
    info = io.fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise io.missing(path, "data file")
    return int(info.size or 0)


def _footer(
    io: FileIO, path: str, expected_size: int | None = None, source: pa.NativeFile | None = None
) -> _Footer:
    """The file's cached footer. A local file is checked by its size, which the manifest's
    ``expected_size`` vouches for without a ``stat`` when the cached footer has that size.
    ``source``: the file's bytes already fetched, read instead of opening the file again."""
    key = (io, path)
    hit = _footers.get(key)
    if hit is not None and expected_size is not None and hit.size == expected_size:
        return hit
    size = _local_size(io, path)
    if hit is not None and hit.size == size:
        return hit
    if source is not None:
        entry = _Footer(pq.ParquetFile(source).metadata, size)
        source.seek(0)
    else:
        with io.open_input_file(path, expected_size) as f:
            entry = _Footer(pq.ParquetFile(f).metadata, size)
    _footers.put(key, entry, footer_bytes(entry.meta))
    return entry


def row_group_layout(
    io: FileIO, path: str, file_size: int | None = None
) -> tuple[pq.FileMetaData, np.ndarray[Any, np.dtype[np.int64]]]:
    """A Parquet file's cached footer and the file position of each row group's first row (the row
    count last), for reading rows by position."""
    entry = _footer(io, path, file_size)
    return entry.meta, entry.row_starts


def column_ranges(io: FileIO, path: str, name: str, file_size: int | None = None) -> ColumnRanges:
    """Per-row-group statistics of one column of a Parquet file, from its cached footer."""
    return _footer(io, path, file_size).ranges(name)


_RANGE_OPS = ("=", "<", "<=", ">", ">=")


def _leaf_mask(entry: _Footer, leaf: Predicate) -> np.ndarray[Any, np.dtype[np.bool_]] | None:
    """Row groups that may satisfy a plain comparison, vectorized; None for any other predicate."""
    if not isinstance(leaf, Compare) or leaf.op not in _RANGE_OPS or leaf.literal is None:
        return None
    lit = leaf.literal
    if isinstance(lit, bool) or not isinstance(lit, (int, float, str, bytes, Decimal, dt.date)):
        return None
    if isinstance(lit, dt.datetime) or is_nan(lit):
        return None
    r = entry.ranges(leaf.field)
    typed = r.typed_bounds
    in_int64 = isinstance(lit, float) or (isinstance(lit, int) and is_int64(lit))
    if typed is not None and type(lit) is typed[0] and in_int64:
        return np.asarray(_fits(leaf.op, typed[1], typed[2], lit) & ~r.all_null, dtype=bool)
    lo, hi = r.mins[r.known], r.maxs[r.known]
    try:
        fits = _fits(leaf.op, lo, hi, lit)
    except TypeError:  # statistics of another type than the literal: cannot prune
        return None
    may = np.ones(len(r.known), dtype=bool)
    may[r.known] = np.asarray(fits, dtype=bool)
    return np.asarray(may & ~r.all_null, dtype=bool)


def _fits(op: str, lo: np.ndarray[Any, Any], hi: np.ndarray[Any, Any], lit: Any) -> np.ndarray[Any, Any]:
    """Whether a value ``op lit`` may lie in each [lo, hi]."""
    if op == "=":
        return np.asarray((lo <= lit) & (hi >= lit))
    if op in ("<", "<="):
        return np.asarray((lo < lit) if op == "<" else (lo <= lit))
    return np.asarray((hi > lit) if op == ">" else (hi >= lit))


def matching_row_groups(entry: _Footer, predicate: Predicate | None) -> list[int]:
    """The row groups whose statistics do not rule ``predicate`` out (all of them without one).

    A conjunction of plain comparisons (the usual key-range or point filter) is decided over arrays
    of every row group's min/max at once; any other part is checked row group by row group.
    """
    meta = entry.meta
    may = entry.nonempty.copy()
    if predicate is None:
        return [int(i) for i in np.flatnonzero(may)]
    rest = []
    for part in conjuncts(predicate):
        mask = _leaf_mask(entry, part)
        if mask is None:
            rest.append(part)
        else:
            may &= mask
    if rest:
        names = set().union(*(p.fields() for p in rest))
        for i in np.flatnonzero(may):
            rows = meta.row_group(int(i)).num_rows
            with contextlib.suppress(TypeError, ValueError):  # statistics it cannot compare with: keep
                may[i] = all(might_match(p, _row_group_stats(meta, int(i), names), rows) for p in rest)
    return [int(i) for i in np.flatnonzero(may)]


def _row_group_stats(meta: pq.FileMetaData, index: int, names: set[str]) -> dict[str, ColumnStats]:
    group = meta.row_group(index)
    stats: dict[str, ColumnStats] = {}
    for c in range(group.num_columns):
        column = group.column(c)
        name = column.path_in_schema
        if name not in names or not column.is_stats_set:
            continue
        s = column.statistics
        if s.has_min_max:
            stats[name] = ColumnStats(s.min, s.max, s.null_count if s.has_null_count else None)
        elif s.has_null_count:
            stats[name] = ColumnStats(None, None, s.null_count)
    return stats


_repeated: dict[tuple[pa.DataType, int], pa.Array] = {}


def _repeat(arrow_type: pa.DataType, value: int, rows: int) -> pa.Array:
    """``value`` ``rows`` times: a slice of one array per type and value, grown as needed."""
    key = (arrow_type, value)
    have = _repeated.get(key)
    if have is None or len(have) < rows:
        have = _repeated[key] = pa.array(
            np.full(max(rows, 65_536), value, dtype=arrow_type.to_pandas_dtype())
        )
    return have.slice(0, rows)


def _with_constants(table: pa.Table, entry: _Footer, columns: list[str], filled: dict[str, int]) -> pa.Table:
    """``table`` with the ``filled`` columns added as constants, in ``columns`` order."""
    for name, value in filled.items():
        target = entry.schema_arrow.field(name)
        table = table.append_column(target, _repeat(target.type, value, table.num_rows))
    return table if table.column_names == columns else table.select(columns)


def read_row_groups(
    io: FileIO,
    path: str,
    columns: list[str],
    predicate: Predicate | None,
    *,
    use_threads: bool = True,
    constants: Collection[str] = (),
    positions: bool = True,
    file_size: int | None = None,
) -> tuple[pa.Table, np.ndarray[Any, Any] | None]:
    """``columns`` of the row groups that may match ``predicate`` (rows are not filtered here), and the
    file position of every row read -- None when every row group was read (or ``positions`` is False).

    Integer ``constants`` (such as the row kind, +I in almost every file) whose statistics prove one
    value in every row group read are filled in rather than decoded: each column chunk decoded costs
    a zstd context, a fixed cost that dominates small chunks. ``file_size``: the manifest's size of
    the file, which spares checking a cached footer against the file system.
    """
    chunks = iter_row_groups(
        io,
        path,
        columns,
        predicate,
        use_threads=use_threads,
        constants=constants,
        positions=positions,
        file_size=file_size,
    )
    return next(chunks)


def iter_row_groups(
    io: FileIO,
    path: str,
    columns: list[str],
    predicate: Predicate | None,
    *,
    use_threads: bool = True,
    constants: Collection[str] = (),
    positions: bool = True,
    file_size: int | None = None,
    max_rows: int | None = None,
    dropped: np.ndarray[Any, Any] | None = None,
) -> Iterator[tuple[pa.Table, np.ndarray[Any, Any] | None]]:
    """:func:`read_row_groups` in pieces of consecutive matching row groups of about ``max_rows`` rows
    (a row group is never split; all of them at once without ``max_rows``), the file opened once.
    At least one piece (maybe empty); positions are None only when one piece is every row group.
    ``dropped`` (a boolean per row of the file): row groups whose rows are all dropped are not read."""
    # a small object-store file is fetched whole once, for its footer and its rows
    whole = io.open_input_file(path, file_size) if io.fetches_whole(file_size) else None
    entry = _footer(io, path, file_size, whole)
    meta = entry.meta
    groups = matching_row_groups(entry, predicate)
    if dropped is not None and len(dropped) == entry.row_starts[-1]:
        starts = entry.row_starts
        groups = [g for g in groups if not dropped[starts[g] : starts[g + 1]].all()]
    chunks = _chunks(groups, np.diff(entry.row_starts), max_rows)
    everything = len(groups) == meta.num_row_groups and len(chunks) == 1
    filled = {}
    if len(groups) >= _FILL_MIN_GROUPS:
        filled = {
            c: v for c in constants if c in columns and (v := entry.ranges(c).constant(groups)) is not None
        }
    decoded = [c for c in columns if c not in filled]
    starts = entry.row_starts
    with whole or io.open_input_file(path, file_size) as f:
        reader = pq.ParquetFile(f, metadata=meta, pre_buffer=not io.local)
        if not groups:
            yield (
                reader.schema_arrow.empty_table().select(columns),
                (None if not positions else np.zeros(0, dtype=np.int64)),
            )
            return
        for chunk in chunks:
            table = reader.read_row_groups(chunk, columns=decoded, use_threads=use_threads)
            if filled:
                table = _with_constants(table, entry, columns, filled)
            if everything or not positions:
                yield table, None
            else:
                yield table, np.concatenate([np.arange(starts[i], starts[i + 1]) for i in chunk])


def _chunks(groups: list[int], group_rows: np.ndarray[Any, Any], max_rows: int | None) -> list[list[int]]:
    """``groups`` cut into consecutive runs of about ``max_rows`` rows (each run at least one group)."""
    if max_rows is None or len(groups) <= 1:
        return [groups]
    out: list[list[int]] = [[]]
    rows = 0
    for g in groups:
        if out[-1] and rows + int(group_rows[g]) > max_rows:
            out.append([])
            rows = 0
        out[-1].append(g)
        rows += int(group_rows[g])
    return out
