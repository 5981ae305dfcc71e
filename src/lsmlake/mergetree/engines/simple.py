"""The engines that pick a row per key rather than compute one: deduplicate and first-row."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lsmlake.errors import LsmlakeError
from lsmlake.mergetree.engines.segments import BoolArray, Segments
from lsmlake.mergetree.kv_layout import VALUE_KIND, is_retract

FIRST_ROW_DELETE_ERROR = (
    "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records. "
    "You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records."
)


class _Picker:
    """An engine whose result is one of each key's rows: ``pick`` marks them (keys and kinds suffice)."""

    def pick(self, rows: pa.Table, key_names: Sequence[str], *, reduce_singles: bool = True) -> BoolArray:
        raise NotImplementedError

    def merge(self, rows: pa.Table, key_names: Sequence[str], *, reduce_singles: bool = True) -> pa.Table:
        return rows.filter(pa.array(self.pick(rows, key_names, reduce_singles=reduce_singles)))


def _keep(seg: Segments, chosen: np.ndarray, singles: bool) -> BoolArray:
    keep = np.zeros(seg.n, dtype=bool)
    keep[chosen[chosen >= 0]] = True
    if singles:
        keep[seg.starts[seg.sizes == 1]] = True
    return keep


class Deduplicate(_Picker):
    """The newest row of each key wins, deletes included; with ``ignore-delete`` retractions are skipped."""

    def __init__(self, *, ignore_delete: bool = False) -> None:
        self.ignore_delete = ignore_delete

    def pick(self, rows: pa.Table, key_names: Sequence[str], *, reduce_singles: bool = True) -> BoolArray:
        seg = Segments.of(rows, key_names)
        if not self.ignore_delete:
            return _keep(seg, seg.lasts, False)
        retract = is_retract(rows.column(VALUE_KIND).to_numpy())
        return _keep(seg, seg.last_where(~retract), reduce_singles)


class FirstRow(_Picker):
    """The oldest row of each key wins; retractions are an error unless ``ignore-delete`` skips them."""

    def __init__(self, *, ignore_delete: bool = False) -> None:
        self.ignore_delete = ignore_delete

    def pick(self, rows: pa.Table, key_names: Sequence[str], *, reduce_singles: bool = True) -> BoolArray:
        seg = Segments.of(rows, key_names)
        retract = is_retract(rows.column(VALUE_KIND).to_numpy())
        if not retract.any():
            return _keep(seg, seg.starts, False)
        merged = retract & (seg.sizes[seg.ids] > 1) if reduce_singles else retract
        if merged.any() and not self.ignore_delete:
            raise LsmlakeError(FIRST_ROW_DELETE_ERROR)
        return _keep(seg, seg.first_where(~retract), reduce_singles)
