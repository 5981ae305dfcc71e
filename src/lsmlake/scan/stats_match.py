"""Whether a file's or a manifest's statistics admit a predicate, with the decoded statistics memoized."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsmlake.core.caches import MB, ByteLRU
from lsmlake.core.types import DataField
from lsmlake.expr import ColumnStats, Predicate, might_match
from lsmlake.metadata.stats import stats_from_simple

DECODED_STATS_BYTES_PER_COLUMN = 400
"""The weight charged per decoded column (a ColumnStats with its min, max and null count)."""

_decoded: ByteLRU[tuple[Any, tuple[DataField, ...], int, dict[str, ColumnStats]]] = ByteLRU(
    "decoded file statistics", 64 * MB
)


def _decoded_stats(stats: Any, fields: tuple[DataField, ...], row_count: int) -> dict[str, ColumnStats]:
    """Decoded SimpleStats, memoized by the identity of the stats object: manifests are immutable and
    their decoded entries cached, so every read re-plans the same objects (hashing their bytes and
    fields each time cost more than the lookup saves). The entry holds the object, so its id stays
    unique while cached."""
    hit = _decoded.get(id(stats))
    if hit is not None and hit[0] is stats and hit[2] == row_count and hit[1] == fields:
        return hit[3]
    decoded = stats_from_simple(stats, fields, row_count)
    _decoded.put(id(stats), (stats, fields, row_count, decoded), DECODED_STATS_BYTES_PER_COLUMN * len(fields))
    return decoded


def stats_might_match(pred: Predicate, stats: Any, fields: Sequence[DataField], row_count: int) -> bool:
    """``might_match`` over decoded SimpleStats; undecodable stats never prune."""
    try:
        return might_match(pred, _decoded_stats(stats, tuple(fields), row_count), row_count)
    except (ValueError, KeyError, TypeError, IndexError):
        return True
