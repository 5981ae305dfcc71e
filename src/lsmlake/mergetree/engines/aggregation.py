"""The ``aggregation`` engine: every value column folded by its aggregate function, all keys at once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lsmlake.mergetree.engines.aggregator import FieldAggregator, Ops
from lsmlake.mergetree.engines.aggregators import bind, create_aggregator
from lsmlake.mergetree.engines.config import EngineConfig
from lsmlake.mergetree.engines.scalar import aggregate_key
from lsmlake.mergetree.engines.segments import (
    Segments,
    as_array,
    build,
    combine_groups,
    fold_by_key,
    last_rows,
)
from lsmlake.mergetree.kv_layout import VALUE_KIND, RowKind, is_retract


class Aggregation:
    """Paimon's AggregateMergeFunction, vectorized: one ordered aggregation per column over key groups."""

    def __init__(self, cfg: EngineConfig) -> None:
        self.cfg = cfg

    def merge(self, rows: pa.Table, key_names: Sequence[str], *, reduce_singles: bool = True) -> pa.Table:
        return fold_by_key(rows, Segments.of(rows, key_names), self._fold, reduce_singles=reduce_singles)

    def _aggregators(self, rows: pa.Table) -> dict[str, FieldAggregator]:
        out = {}
        for name in self.cfg.value_fields:
            if name in rows.column_names:
                a = create_aggregator(self.cfg.functions[name], name, None, dict(self.cfg.options))
                bind(a, rows.schema.field(name).type)
                out[name] = a
        return out

    def _ops(self, kinds: np.ndarray, seg: Segments) -> Ops:
        retract = is_retract(kinds)
        if not self.cfg.remove_record_on_delete:
            return Ops.plain(seg, retract)
        base = seg.last_where(kinds == RowKind.DELETE)
        after = seg.after(base)
        folded = ~retract & after
        return Ops(seg, folded, (kinds == RowKind.UPDATE_BEFORE) & after, base, ~retract & ~after)

    def _fold(self, rows: pa.Table, seg: Segments) -> pa.Table:
        kinds = rows.column(VALUE_KIND).to_numpy()
        ops = self._ops(kinds, seg)
        aggregators = self._aggregators(rows)
        retracting = is_retract(kinds)
        if self.cfg.remove_record_on_delete:
            retracting &= kinds != RowKind.DELETE
        if retracting.any():  # Paimon folds rows before a reset too: their retraction fails all the same
            for a in aggregators.values():
                if not a.retractable:
                    raise a.unsupported_retract()
        values = {name: as_array(rows.column(name)) for name in aggregators}
        scalar = np.zeros(seg.count, dtype=bool)
        for name, a in aggregators.items():
            routed = a.scalar_groups(values[name], ops)
            if routed is not None:
                scalar |= routed
        if not scalar.any():
            return self._vectorized(rows, seg, kinds, ops, aggregators, values)
        fast_rows, fast_seg = seg.subset(~scalar)
        slow_rows, slow_seg = seg.subset(scalar)
        fast = rows.filter(pa.array(fast_rows))
        fast_kinds = kinds[fast_rows]
        fast_values = {name: v.filter(pa.array(fast_rows)) for name, v in values.items()}
        parts = [
            (
                np.flatnonzero(~scalar),
                self._vectorized(
                    fast, fast_seg, fast_kinds, self._ops(fast_kinds, fast_seg), aggregators, fast_values
                ),
            ),
            (np.flatnonzero(scalar), self._scalar(rows.filter(pa.array(slow_rows)), slow_seg, aggregators)),
        ]
        return combine_groups(parts, seg.count)

    def _result_kind(self, kinds: np.ndarray, seg: Segments) -> pa.Array:
        last = kinds[seg.lasts]
        deleted = self.cfg.remove_record_on_delete & (last == RowKind.DELETE)
        return pa.array(np.where(deleted, RowKind.DELETE, RowKind.INSERT).astype(np.int8))

    def _vectorized(
        self,
        rows: pa.Table,
        seg: Segments,
        kinds: np.ndarray,
        ops: Ops,
        aggregators: dict[str, FieldAggregator],
        values: dict[str, pa.Array],
    ) -> pa.Table:
        if seg.count == 0:
            return rows
        columns = last_rows(rows, seg, skip=aggregators)
        for name, a in aggregators.items():
            columns[name] = a.fold(values[name], ops)
        columns[VALUE_KIND] = self._result_kind(kinds, seg)
        return build(rows, columns)

    def _scalar(self, rows: pa.Table, seg: Segments, aggregators: dict[str, FieldAggregator]) -> pa.Table:
        kinds = rows.column(VALUE_KIND).to_numpy()
        records = rows.select(list(aggregators)).to_pylist()
        results: dict[str, list[object]] = {name: [] for name in aggregators}
        out_kinds = []
        for start, end in zip(seg.starts, seg.ends, strict=True):
            group = [(int(kinds[i]), records[i]) for i in range(start, end)]
            row, kind = aggregate_key(group, aggregators, remove_on_delete=self.cfg.remove_record_on_delete)
            for name in aggregators:
                results[name].append(row[name])
            out_kinds.append(kind)
        columns = last_rows(rows, seg, skip=aggregators)
        for name in aggregators:
            columns[name] = pa.array(results[name], rows.schema.field(name).type)
        columns[VALUE_KIND] = pa.array(np.asarray(out_kinds, dtype=np.int8))
        return build(rows, columns)
