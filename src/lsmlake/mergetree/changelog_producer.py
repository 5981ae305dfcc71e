"""Changelog rows produced at compaction, vectorized: Paimon's lookup and full-compaction changelog wrappers.

Both compare, per key, a *before* record with the merged *after* record and emit +I, -D or a -U/+U
pair (behaviour.md §5.2, §6). They differ in which record is *before* and which keys emit at all:

* lookup: only keys with a level-0 record; before = the key's record at the smallest level > 0
  (in the compaction, or found by lookup in a higher level);
* full-compaction: every key; before = the key's record at the max level. A key whose only record
  is at the max level is unchanged.

Changelog rows keep the sequence number of the record they copy. With
``changelog-producer.row-deduplicate`` a -U/+U pair whose values are equal (ignoring
``changelog-producer.row-deduplicate-ignore-fields``) is not emitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.options import CoreOptions
from lsmlake.mergetree.engines.segments import IntArray, Segments, as_array
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, RowKind, is_retract

_GROUP = "__changelog_group"
_MERGED = "__changelog_merged"


@dataclass(frozen=True)
class RowDeduplicate:
    """``changelog-producer.row-deduplicate``: which value columns decide that before equals after."""

    columns: tuple[str, ...]

    @staticmethod
    def of(options: CoreOptions, value_names: Sequence[str]) -> RowDeduplicate | None:
        if not options.get(CoreOptions.CHANGELOG_PRODUCER_ROW_DEDUPLICATE):
            return None
        ignored = options.get(CoreOptions.CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS) or ""
        skip = {s.strip() for s in ignored.split(",") if s.strip()}
        return RowDeduplicate(tuple(n for n in value_names if n not in skip))

    def equal(self, before: pa.Table, after: pa.Table) -> np.ndarray:
        """Row-wise: all compared columns equal (null equals null)."""
        same = np.ones(before.num_rows, dtype=bool)
        for name in self.columns:
            a, b = as_array(before.column(name)), as_array(after.column(name))
            eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
            both_null = np.logical_and(
                a.is_null().to_numpy(zero_copy_only=False), b.is_null().to_numpy(zero_copy_only=False)
            )
            same &= np.logical_or(eq, both_null)
        return same


def _is_add(kinds: np.ndarray) -> np.ndarray:
    return np.asarray(~is_retract(kinds), dtype=bool)


def merged_groups(rows: pa.Table, seg: Segments, merged: pa.Table, key_names: Sequence[str]) -> IntArray:
    """For each key group of ``rows``, the index of its merged row (-1 when the engine gave none)."""
    out = np.full(seg.count, -1, dtype=np.int64)
    if merged.num_rows == seg.count:
        out[:] = np.arange(seg.count)
        return out
    if merged.num_rows == 0:
        return out
    groups = rows.select(list(key_names)).take(pa.array(seg.starts))
    groups = groups.append_column(_GROUP, pa.array(np.arange(seg.count, dtype=np.int64)))
    results = merged.select(list(key_names)).append_column(
        _MERGED, pa.array(np.arange(merged.num_rows, dtype=np.int64))
    )
    joined = results.join(groups, keys=list(key_names), join_type="inner", use_threads=False)
    out[joined.column(_GROUP).to_numpy()] = joined.column(_MERGED).to_numpy()
    return out


def lookup_before(levels: np.ndarray, seg: Segments) -> tuple[np.ndarray, IntArray]:
    """Lookup changelog: which keys emit (those with a level-0 record) and each key's before row
    (its record at the smallest level > 0, or -1)."""
    if seg.count == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    has_level0 = seg.any(levels == 0)
    high = np.where(levels > 0, levels, np.iinfo(np.int32).max)
    lowest = np.minimum.reduceat(high, seg.starts)
    is_before = (levels > 0) & (levels == lowest[seg.ids])
    return has_level0, seg.first_where(is_before)


def full_compaction_before(levels: np.ndarray, seg: Segments, max_level: int) -> tuple[np.ndarray, IntArray]:
    """Full-compaction changelog: which keys emit (all but a lone max-level record) and each key's
    before row (its max-level record, or -1)."""
    if seg.count == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    top = seg.first_where(levels == max_level)
    return ~((seg.sizes == 1) & (top >= 0)), top


def changelog_rows(
    rows: pa.Table,
    merged: pa.Table,
    key_names: Sequence[str],
    value_names: Sequence[str],
    *,
    emit: np.ndarray,
    before: IntArray,
    seg: Segments,
    dedup: RowDeduplicate | None = None,
) -> tuple[pa.Table, np.ndarray] | None:
    """The changelog of one merge: value columns + ``_SEQUENCE_NUMBER`` in key order, and the row kinds.

    ``rows`` are the key-sorted inputs, ``merged`` the engine's result (key order, retracts kept),
    ``emit``/``before`` per key group as :func:`lookup_before` or :func:`full_compaction_before` give.
    """
    if seg.count == 0 or not emit.any():
        return None
    columns = [*value_names, SEQUENCE_NUMBER]
    after = merged_groups(rows, seg, merged, key_names)
    row_kinds = rows.column(VALUE_KIND).to_numpy()
    merged_kinds = merged.column(VALUE_KIND).to_numpy()
    before_add = (before >= 0) & _is_add(row_kinds[np.maximum(before, 0)])
    after_add = np.zeros(seg.count, dtype=bool)
    if merged.num_rows:
        after_add = (after >= 0) & _is_add(merged_kinds[np.maximum(after, 0)])
    insert = emit & ~before_add & after_add
    delete = emit & before_add & ~after_add
    update = emit & before_add & after_add
    if dedup is not None and update.any():
        u = np.flatnonzero(update)
        equal = dedup.equal(
            rows.select(list(dedup.columns)).take(pa.array(before[u])),
            merged.select(list(dedup.columns)).take(pa.array(after[u])),
        )
        update[u[equal]] = False
    before_groups = np.flatnonzero(delete | update)
    after_groups = np.flatnonzero(insert | update)
    if not len(before_groups) and not len(after_groups):
        return None
    parts = pa.concat_tables(
        [
            rows.select(columns).take(pa.array(before[before_groups])),
            merged.select(columns).take(pa.array(after[after_groups])),
        ]
    )
    kinds = np.concatenate(
        [
            np.where(update[before_groups], RowKind.UPDATE_BEFORE, RowKind.DELETE),
            np.where(update[after_groups], RowKind.UPDATE_AFTER, RowKind.INSERT),
        ]
    ).astype(np.int8)
    # per key: the before row (-U / -D) first, then the after row (+U / +I)
    order = np.argsort(np.concatenate([before_groups * 2, after_groups * 2 + 1]), kind="stable")
    return parts.take(pa.array(order)), kinds[order]
