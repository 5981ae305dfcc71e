"""Evaluating a filter against one data file's file indexes: None (any row may match) or candidate row positions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lsmlake.core.types import DataType
from lsmlake.expr.tree import And, Compare, In, IsNotNull, IsNull, Or, Predicate
from lsmlake.format.file_index.bit_slices import roaring
from lsmlake.format.file_index.bitmap import BITMAP, BitmapIndex
from lsmlake.format.file_index.bloom import BLOOM_FILTER, BloomFilter, hash_values
from lsmlake.format.file_index.bsi import BSI, BsiIndex
from lsmlake.format.file_index.container import IndexBlob
from lsmlake.format.file_index.keys import FLOAT_ROOTS, TIMESTAMP_ROOTS, literal_key
from lsmlake.format.file_index.range_bitmap import RANGE_BITMAP, RangeBitmapIndex

Index = BloomFilter | BitmapIndex | BsiIndex | RangeBitmapIndex | None
"""A parsed index; None stands for an empty index (the writer saw no non-null value)."""
_WIDEN = {"<": "<=", ">": ">="}


@dataclass(frozen=True)
class FileIndexes:
    """The parsed indexes of one data file, by column, with the column types and the file's row count."""

    by_column: Mapping[str, Sequence[tuple[str, Index]]]
    types: Mapping[str, DataType]
    row_count: int


def parse_indexes(
    blobs: Sequence[IndexBlob], types: Mapping[str, DataType], row_count: int, *, source: str
) -> FileIndexes:
    """Parse the blobs of the types lsmlake evaluates; unknown index types and columns are left out."""
    out: dict[str, list[tuple[str, Index]]] = {}
    for b in blobs:
        t = types.get(b.column)
        if t is None or b.index_type not in (BLOOM_FILTER, BITMAP, BSI, RANGE_BITMAP):
            continue
        index: Index = None
        if b.data is not None:
            if b.index_type == BLOOM_FILTER:
                index = BloomFilter(b.data, source=source)
            elif b.index_type == BITMAP:
                index = BitmapIndex(b.data, t, source=source)
            elif b.index_type == RANGE_BITMAP:
                index = RangeBitmapIndex(b.data, t, source=source)
            else:
                index = BsiIndex(b.data, source=source)
        out.setdefault(b.column, []).append((b.index_type, index))
    return FileIndexes(out, types, row_count)


def candidate_rows(p: Predicate | None, ix: FileIndexes) -> BitMap | None:
    """Row positions that may satisfy ``p`` (a superset), or None when the indexes cannot tell."""
    if p is None:
        return None
    if isinstance(p, And):
        parts = [r for r in (candidate_rows(c, ix) for c in p.children) if r is not None]
        return BitMap.intersection(*parts) if len(parts) > 1 else (parts[0] if parts else None)
    if isinstance(p, Or):
        ors = [candidate_rows(c, ix) for c in p.children]
        if any(r is None for r in ors):
            return None
        return BitMap.union(*[r for r in ors if r is not None])
    if isinstance(p, (Compare, In, IsNull, IsNotNull)) and p.field in ix.by_column:
        found = [_leaf(p, kind, index, ix) for kind, index in ix.by_column[p.field]]
        known = [r for r in found if r is not None]
        return BitMap.intersection(*known) if len(known) > 1 else (known[0] if known else None)
    return None


def _all(n: int) -> BitMap:
    return BitMap(range(n))


def _leaf(p: Predicate, kind: str, index: Index, ix: FileIndexes) -> BitMap | None:
    t = ix.types[p.field]  # type: ignore[attr-defined]
    if index is None:  # an empty index (no value written): Java skips the file for comparisons
        return BitMap() if _equality(p) or (isinstance(p, Compare) and p.op != "!=") else None
    if isinstance(index, BloomFilter):
        return _bloom(p, index, t)
    if isinstance(index, BitmapIndex):
        return _bitmap(p, index, t, ix.row_count)
    if isinstance(index, RangeBitmapIndex):
        return _range_bitmap(p, index, t)
    return _bsi(p, index, t)


def _keys(p: Compare | In, t: DataType) -> list[Any] | None:
    literals = [p.literal] if isinstance(p, Compare) else list(p.literals)
    keys = [literal_key(v, t) for v in literals if v is not None]
    if any(k is None for k in keys):
        return None
    if t.root in FLOAT_ROOTS:
        keys += [-k for k in keys if k == 0]  # SQL's -0.0 = 0.0; the indexes keep them apart
    return keys


def _equality(p: Predicate) -> bool:
    return isinstance(p, In) or (isinstance(p, Compare) and p.op == "=")


def _bloom(p: Predicate, index: BloomFilter, t: DataType) -> BitMap | None:
    if not _equality(p):
        return None
    assert isinstance(p, (Compare, In))
    keys = _keys(p, t)
    if keys is None:
        return None
    if not keys:
        return BitMap()
    return None if index.might_contain(hash_values(keys, t)).any() else BitMap()


def _bitmap(p: Predicate, index: BitmapIndex, t: DataType, n: int) -> BitMap | None:
    if isinstance(p, IsNull):
        return index.rows(None)
    if isinstance(p, IsNotNull):
        return _all(n) - index.rows(None)
    assert isinstance(p, (Compare, In))
    negated = isinstance(p, Compare) and p.op == "!="
    if not _equality(p) and not negated:
        return None
    if negated and t.root in TIMESTAMP_ROOTS:  # keys truncate to the index unit: inequality is not exact
        return None
    keys = _keys(p, t)
    if keys is None:
        return None
    hits = BitMap.union(BitMap(), *(index.rows(k) for k in keys))
    if negated:
        return _all(n) - hits - index.rows(None)
    return hits


def _bsi(p: Predicate, index: BsiIndex, t: DataType) -> BitMap | None:
    if isinstance(p, IsNull):
        return roaring(np.flatnonzero(~index.present))
    if isinstance(p, IsNotNull):
        return roaring(np.flatnonzero(index.present))
    assert isinstance(p, (Compare, In))
    keys = _keys(p, t)
    if keys is None:
        return None
    v = index.values
    if isinstance(p, In):
        mask = np.isin(v, np.asarray(keys, dtype=np.int64))
    else:
        op = _WIDEN.get(p.op, p.op) if t.root in TIMESTAMP_ROOTS else p.op  # index units truncate
        k = keys[0]
        mask = {"=": v == k, "!=": v != k, "<": v < k, "<=": v <= k, ">": v > k, ">=": v >= k}[op]
        if t.root in TIMESTAMP_ROOTS and op == "!=":
            return None
    return roaring(np.flatnonzero(mask & index.present))


_ARROW_OPS = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}
_NUMPY_OPS = {
    "=": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _range_bitmap(p: Predicate, index: RangeBitmapIndex, t: DataType) -> BitMap | None:
    """Rows from the dictionary keys the predicate holds for (compared as SQL does: -0.0 = 0.0)."""
    if isinstance(p, IsNull):
        return index.null_rows()
    if isinstance(p, IsNotNull):
        return index.live_rows()
    assert isinstance(p, (Compare, In))
    keys = _keys(p, t)
    if keys is None:
        return None
    strings = isinstance(index.keys, pa.Array)
    if isinstance(p, In):
        if strings:
            mask = pc.is_in(index.keys, value_set=pa.array(keys, pa.binary())).to_numpy(zero_copy_only=False)
        else:
            mask = np.isin(index.keys, np.asarray(keys))
        return index.rows(mask)
    op = _WIDEN.get(p.op, p.op) if t.root in TIMESTAMP_ROOTS else p.op  # index units truncate
    if t.root in TIMESTAMP_ROOTS and op == "!=":
        return None
    if strings:
        held = _ARROW_OPS[op](index.keys, pa.scalar(keys[0], pa.binary())).to_numpy(zero_copy_only=False)
    else:
        held = _NUMPY_OPS[op](index.keys, keys[0])
    return index.rows(held)
