"""Runs of equal keys in key-sorted rows, and the numpy/Arrow group primitives the engines fold with."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.mergetree.kv_layout import key_group_starts

Array: TypeAlias = "pa.Array | pa.ChunkedArray"
IntArray: TypeAlias = "np.ndarray[Any, np.dtype[np.int64]]"
BoolArray: TypeAlias = "np.ndarray[Any, np.dtype[np.bool_]]"


def as_array(column: Array) -> pa.Array:
    """One contiguous Arrow array (chunked columns combined)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def take_or_null(column: Array, index: np.ndarray) -> pa.Array:
    """``column[index]`` with a null wherever ``index`` is negative."""
    index = np.asarray(index, dtype=np.int64)
    return as_array(column).take(pa.array(index, pa.int64(), mask=index < 0))


_PER_KEY_NULLS = int(pa.__version__.split(".")[0]) >= 25


def sort_nulls_first(table: pa.Table, sort_keys: Sequence[tuple[str, str]]) -> pa.Array:
    """Stable sort indices with nulls first in every key (per-key placement since pyarrow 25)."""
    if _PER_KEY_NULLS:
        return pc.sort_indices(table, sort_keys=[(k, o, "at_start") for k, o in sort_keys])
    return pc.sort_indices(table, sort_keys=list(sort_keys), null_placement="at_start")


@dataclass(frozen=True)
class Segments:
    """The groups of equal keys in ``n`` key-sorted rows, as start offsets (one group per key)."""

    starts: IntArray
    n: int

    @staticmethod
    def of(rows: pa.Table, key_names: Sequence[str]) -> Segments:
        return Segments(np.flatnonzero(key_group_starts(rows, key_names)).astype(np.int64), rows.num_rows)

    @property
    def count(self) -> int:
        return len(self.starts)

    @cached_property
    def ends(self) -> IntArray:
        """Exclusive end of each group."""
        return np.append(self.starts[1:], self.n).astype(np.int64)

    @cached_property
    def lasts(self) -> IntArray:
        return self.ends - 1

    @cached_property
    def sizes(self) -> IntArray:
        return self.ends - self.starts

    @cached_property
    def ids(self) -> IntArray:
        """The group of every row."""
        return np.repeat(np.arange(self.count, dtype=np.int64), self.sizes)

    @cached_property
    def positions(self) -> IntArray:
        return np.arange(self.n, dtype=np.int64)

    def last_where(self, mask: BoolArray) -> IntArray:
        """Per group, the last row where ``mask`` holds, else -1."""
        if self.count == 0:
            return np.zeros(0, dtype=np.int64)
        return np.maximum.reduceat(np.where(mask, self.positions, -1), self.starts)

    def first_where(self, mask: BoolArray) -> IntArray:
        """Per group, the first row where ``mask`` holds, else -1."""
        if self.count == 0:
            return np.zeros(0, dtype=np.int64)
        first = np.minimum.reduceat(np.where(mask, self.positions, self.n), self.starts)
        return np.where(first == self.n, -1, first)

    def count_where(self, mask: BoolArray) -> IntArray:
        if self.count == 0:
            return np.zeros(0, dtype=np.int64)
        return np.add.reduceat(np.asarray(mask, dtype=np.int64), self.starts)

    def any(self, mask: BoolArray) -> BoolArray:
        return self.count_where(mask) > 0

    def after(self, per_group: IntArray) -> BoolArray:
        """Rows strictly after their group's entry in ``per_group`` (all rows where it is -1)."""
        return np.asarray(self.positions > per_group[self.ids], dtype=bool)

    def at(self, per_group: IntArray) -> BoolArray:
        """Rows equal to their group's entry in ``per_group``."""
        return np.asarray(self.positions == per_group[self.ids], dtype=bool)

    def subset(self, groups: BoolArray) -> tuple[BoolArray, Segments]:
        """The rows of the chosen groups (a row mask) and the segments of those rows alone."""
        rows = groups[self.ids]
        sizes = self.sizes[groups]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else sizes
        return rows, Segments(starts, int(sizes.sum()))


_UFUNCS = {"sum": np.add, "product": np.multiply, "min": np.minimum, "max": np.maximum}


def _numpy_reduce(values: pa.Array, mask: BoolArray, seg: Segments, func: str) -> pa.Array:
    """``group_reduce`` of a numeric column with numpy's reduceat (integers widened to int64)."""
    t = values.type
    wide = pa.int64() if pa.types.is_integer(t) else t
    if func in ("sum", "product"):
        identity: float | int = 0 if func == "sum" else 1
    elif pa.types.is_integer(wide):
        identity = np.iinfo(np.int64).max if func == "min" else np.iinfo(np.int64).min
    else:
        identity = np.inf if func == "min" else -np.inf
    counted = mask & valid(values)
    raw = pc.fill_null(values.cast(wide), identity).to_numpy(zero_copy_only=False)
    filled = np.where(counted, raw, np.asarray(identity, dtype=raw.dtype))
    reduced = _UFUNCS[func].reduceat(filled, seg.starts) if seg.count else filled[:0]
    return pa.array(reduced, wide, mask=~seg.any(counted)).cast(t)


def group_reduce(
    values: pa.Array,
    mask: BoolArray,
    seg: Segments,
    func: str,
    options: Any = None,
) -> pa.Array:
    """Arrow's hash aggregate ``func`` of the ``mask``-ed rows of each group, in row order; null for none."""
    if func in _UFUNCS and (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        return _numpy_reduce(values, mask, seg, func)
    sel = np.flatnonzero(mask)
    table = pa.table({"g": pa.array(seg.ids[sel], pa.int64()), "v": values.take(pa.array(sel, pa.int64()))})
    result = table.group_by("g", use_threads=False).aggregate([("v", func, options)])
    index = np.full(seg.count, -1, dtype=np.int64)
    index[result.column("g").to_numpy()] = np.arange(result.num_rows, dtype=np.int64)
    return take_or_null(result.column(result.num_columns - 1), index)


def lists_of(values: pa.Array, mask: BoolArray, seg: Segments) -> tuple[pa.Array, IntArray]:
    """The ``mask``-ed values of each group as one list per group (in row order), and each list's length."""
    counts = seg.count_where(mask)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    flat = values.filter(pa.array(mask)) if len(values) else values
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat), counts


def combine_groups(parts: Sequence[tuple[IntArray, pa.Table]], count: int) -> pa.Table:
    """Reassemble per-group results computed on disjoint sets of groups, back in group order."""
    parts = [(g, t) for g, t in parts if len(g)]
    if len(parts) == 1:
        return parts[0][1]
    order = np.empty(count, dtype=np.int64)
    offset = 0
    for groups, table in parts:
        order[groups] = np.arange(offset, offset + table.num_rows, dtype=np.int64)
        offset += table.num_rows
    return pa.concat_tables([t for _, t in parts]).take(pa.array(order))


Fold = Callable[[pa.Table, Segments], pa.Table]


def fold_by_key(rows: pa.Table, seg: Segments, fold: Fold, *, reduce_singles: bool) -> pa.Table:
    """One row per key: ``fold`` over the groups, keys with a single row passed through unchanged
    when ``reduce_singles`` (Paimon's ReducerMergeFunctionWrapper never calls the function for them)."""
    if seg.count == seg.n and reduce_singles:
        return rows
    if not reduce_singles:
        return fold(rows, seg)
    single = seg.sizes == 1
    if not single.any():
        return fold(rows, seg)
    multi_rows, multi_seg = seg.subset(~single)
    merged = fold(rows.filter(pa.array(multi_rows)), multi_seg)
    alone = rows.filter(pa.array(~multi_rows))
    return combine_groups([(np.flatnonzero(single), alone), (np.flatnonzero(~single), merged)], seg.count)


def last_rows(rows: pa.Table, seg: Segments, *, skip: Collection[str] = ()) -> dict[str, pa.Array]:
    """Every column's value (but those in ``skip``) at the last row of each group."""
    index = pa.array(seg.lasts)
    return {name: as_array(rows.column(name)).take(index) for name in rows.column_names if name not in skip}


def valid(column: Array) -> BoolArray:
    return np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=bool)


def build(rows: pa.Table, columns: dict[str, pa.Array]) -> pa.Table:
    """A table of ``rows``' schema from per-group columns (cast back to each column's type)."""
    arrays = []
    for f in rows.schema:
        col = columns[f.name]
        arrays.append(col if col.type == f.type else col.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=rows.schema)


def dense_rank(table: pa.Table) -> IntArray:
    """Each row's rank among the distinct rows of ``table`` (columns compared in order, ascending,
    nulls first, equal rows equal rank)."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    names = table.column_names
    order = sort_nulls_first(table, [(c, "ascending") for c in names])
    ordered = table.take(order)
    differs = np.zeros(n - 1, dtype=bool)
    for name in names:
        col = as_array(ordered.column(name))
        head, tail = col.slice(0, n - 1), col.slice(1)
        eq = np.asarray(pc.fill_null(pc.equal(head, tail), False).to_numpy(zero_copy_only=False), dtype=bool)
        both_null = ~valid(head) & ~valid(tail)
        differs |= ~(eq | both_null)
    ranks = np.empty(n, dtype=np.int64)
    ranks[order.to_numpy()] = np.concatenate([[0], np.cumsum(differs)])
    return ranks


def prefix_max_before(seg: Segments, values: IntArray) -> IntArray:
    """Per row, the max of ``values`` (all >= -1) over the earlier rows of its group; -1 when none."""
    if seg.n == 0:
        return np.zeros(0, dtype=np.int64)
    width = seg.n + 2
    base = seg.ids * width
    running = np.maximum.accumulate(base + values + 1)
    before = np.empty(seg.n, dtype=np.int64)
    before[0] = -1
    before[1:] = running[:-1] - base[1:] - 1
    before[seg.starts] = -1
    return before
