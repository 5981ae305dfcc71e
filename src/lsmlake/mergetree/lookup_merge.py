"""Paimon's LookupMergeFunction: in lookup tables only a key's lowest record above level 0 is merged.

Tables that need lookup (deletion vectors, first-row, `changelog-producer` = lookup, `force-lookup`)
write, at every compaction that brings level 0 up, the merge of the new records with the key's
current value. A key's record at the smallest level > 0 therefore already holds the merge of the
records further up, which merging again would count twice (aggregation) -- so both compaction and
merge-on-read keep, per key, level-0 records plus that one record.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lsmlake.core.options import CoreOptions
from lsmlake.mergetree.engines.segments import Segments

_ROW = "__lookup_row"
_LEVEL = "__lookup_level"


def needs_lookup(options: CoreOptions) -> bool:
    """Paimon's `CoreOptions.needLookup`."""
    return (
        options.deletion_vectors_enabled
        or options.merge_engine == "first-row"
        or options.changelog_producer == "lookup"
        or options.get(CoreOptions.FORCE_LOOKUP)
    )


def merge_skips_shadowed(options: CoreOptions) -> bool:
    """Whether reads must drop shadowed records: lookup tables whose engine is not idempotent on them
    (deduplicate keeps the newest record anyway; first-row keeps keys unique above level 0)."""
    return needs_lookup(options) and options.merge_engine in ("partial-update", "aggregation")


def drop_shadowed(rows: pa.Table, seg: Segments, levels: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    """Key-sorted ``rows`` without the records above a key's lowest non-zero level; and the kept mask."""
    if seg.count == 0:
        return rows, np.ones(rows.num_rows, dtype=bool)
    high = np.where(levels > 0, levels, np.iinfo(np.int32).max)
    lowest = np.minimum.reduceat(high, seg.starts)
    keep = (levels <= 0) | (levels == lowest[seg.ids])
    if keep.all():
        return rows, keep
    return rows.filter(pa.array(keep)), keep


def lookup_merge_rows(rows: pa.Table, key_names: Sequence[str], level_column: str) -> pa.Table:
    """Key-sorted ``rows`` (with a level column) as LookupMergeFunction merges them."""
    kept, _ = drop_shadowed(rows, Segments.of(rows, key_names), rows.column(level_column).to_numpy())
    return kept


def shadowed_mask(keys: pa.Table, levels: np.ndarray) -> np.ndarray:
    """Which rows (in any order; ``keys`` = their key columns) to keep. Order-preserving, no sort."""
    levels = np.asarray(levels, dtype=np.int32)
    keep = np.ones(len(levels), dtype=bool)
    if len(np.unique(levels[levels > 0])) < 2:
        return keep  # at most one non-zero level: nothing can be shadowed
    names = keys.column_names
    rows = keys.append_column(_LEVEL, pa.array(levels)).append_column(
        _ROW, pa.array(np.arange(len(levels), dtype=np.int64))
    )
    high = rows.filter(pa.array(levels > 0))
    lowest = high.group_by(names, use_threads=False).aggregate([(_LEVEL, "min")])
    joined = high.join(lowest, keys=names, join_type="inner", use_threads=False)
    shadowed = joined.column(_LEVEL).to_numpy() != joined.column(f"{_LEVEL}_min").to_numpy()
    keep[joined.column(_ROW).to_numpy()[shadowed]] = False
    return keep
