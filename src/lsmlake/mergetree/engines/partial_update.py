"""The ``partial-update`` engine: non-null fields overwrite, sequence groups guard their columns, vectorized.

Without sequence groups a column's result is its last non-null value after the last reset (a
``remove-record-on-delete`` delete, or a leading retraction that initialised the row). With sequence
groups a row is *accepted* by a group when its sequence values are at least the largest seen so far
for that key; protected columns take the last accepted row, aggregated ones fold every row of the
group. Key groups the vectorized rules cannot express exactly (a delete under
``remove-record-on-sequence-group``, an order-dependent aggregator inside a group) go through the
record-at-a-time fold in ``scalar``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lsmlake.errors import LsmlakeError
from lsmlake.mergetree.engines.aggregator import FieldAggregator, IgnoreRetract, Ops
from lsmlake.mergetree.engines.aggregators import bind, create_aggregator
from lsmlake.mergetree.engines.config import EngineConfig, SequenceGroup
from lsmlake.mergetree.engines.containers import Collect
from lsmlake.mergetree.engines.numeric import Bool, Extreme, Product, Sum
from lsmlake.mergetree.engines.picks import FirstNonNullValue, FirstValue, LastNonNullValue, LastValue
from lsmlake.mergetree.engines.scalar import PARTIAL_UPDATE_DELETE_ERROR, PartialUpdateKey
from lsmlake.mergetree.engines.segments import (
    BoolArray,
    IntArray,
    Segments,
    as_array,
    build,
    combine_groups,
    dense_rank,
    fold_by_key,
    last_rows,
    prefix_max_before,
    take_or_null,
    valid,
)
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, RowKind, is_retract

ORDER_FREE = (Sum, Product, Extreme, Bool, Collect)  # agg(a, b) folds like agg(b, a) in a sequence group


def _inner(a: FieldAggregator) -> FieldAggregator:
    return a.inner if isinstance(a, IgnoreRetract) else a


class PartialUpdate:
    """Paimon's PartialUpdateMergeFunction over all keys at once."""

    def __init__(self, cfg: EngineConfig) -> None:
        self.cfg = cfg

    def read_columns(self, names: Sequence[str]) -> list[str]:
        """The columns a merge of ``names`` needs: the sequence fields of every group they touch."""
        wanted = set(names)
        for g in self.cfg.groups:
            if wanted & set(g.protected) or wanted & set(g.sequence_fields):
                wanted |= set(g.sequence_fields)
        return [f for f in self.cfg.fields if f in wanted]

    def merge(self, rows: pa.Table, key_names: Sequence[str], *, reduce_singles: bool = True) -> pa.Table:
        return fold_by_key(rows, Segments.of(rows, key_names), self._fold, reduce_singles=reduce_singles)

    # ------------------------------------------------------------------ dispatch

    def _fold(self, rows: pa.Table, seg: Segments) -> pa.Table:
        kinds = rows.column(VALUE_KIND).to_numpy()
        retract = is_retract(kinds)
        if self.cfg.ignore_delete and retract.any():
            # only a leading retraction matters (it initialises the row); the others are skipped
            drop = retract & (seg.positions != seg.starts[seg.ids])
            if drop.any():
                sizes = seg.sizes - seg.count_where(drop)
                rows = rows.filter(pa.array(~drop))
                seg = Segments(np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64), rows.num_rows)
                kinds = kinds[~drop]
        aggregators = self._aggregators(rows)
        if not self.cfg.groups:
            return self._without_groups(rows, seg, kinds)
        scalar = self._scalar_groups(rows, seg, kinds, aggregators)
        if not scalar.any():
            return self._with_groups(rows, seg, kinds, aggregators)
        fast_rows, fast_seg = seg.subset(~scalar)
        slow_rows, slow_seg = seg.subset(scalar)
        parts = [
            (
                np.flatnonzero(~scalar),
                self._with_groups(rows.filter(pa.array(fast_rows)), fast_seg, kinds[fast_rows], aggregators),
            ),
            (np.flatnonzero(scalar), self._scalar(rows.filter(pa.array(slow_rows)), slow_seg, aggregators)),
        ]
        return combine_groups(parts, seg.count)

    def _aggregators(self, rows: pa.Table) -> dict[str, FieldAggregator]:
        out = {}
        for name, func in self.cfg.functions.items():
            if name in rows.column_names:
                a = create_aggregator(func, name, None, dict(self.cfg.options))
                bind(a, rows.schema.field(name).type)
                out[name] = a
        return out

    def _present(self, rows: pa.Table) -> list[str]:
        return [f for f in self.cfg.value_fields if f in rows.column_names]

    def _finish(
        self, rows: pa.Table, seg: Segments, kinds: np.ndarray, columns: dict[str, pa.Array]
    ) -> pa.Table:
        inserted = ~is_retract(kinds)
        deleted = ~seg.any(inserted)
        if self.cfg.remove_record_on_delete:
            deleted |= kinds[seg.lasts] == RowKind.DELETE
        columns[VALUE_KIND] = pa.array(np.where(deleted, RowKind.DELETE, RowKind.INSERT).astype(np.int8))
        if self.cfg.ignore_delete and SEQUENCE_NUMBER in columns:
            last_insert = seg.last_where(inserted)
            columns[SEQUENCE_NUMBER] = take_or_null(
                rows.column(SEQUENCE_NUMBER), np.where(last_insert >= 0, last_insert, seg.lasts)
            )
        return build(rows, columns)

    # ------------------------------------------------------------------ no sequence groups

    def _without_groups(self, rows: pa.Table, seg: Segments, kinds: np.ndarray) -> pa.Table:
        retract = is_retract(kinds)
        if retract.any() and not (self.cfg.ignore_delete or self.cfg.remove_record_on_delete):
            raise LsmlakeError(PARTIAL_UPDATE_DELETE_ERROR)
        base = np.where(retract[seg.starts], seg.starts, -1) if seg.count else seg.starts
        if self.cfg.remove_record_on_delete:
            last_delete = seg.last_where(kinds == RowKind.DELETE)
            base = np.where(last_delete >= 0, last_delete, base)
        counted = (~retract & seg.after(base)) | seg.at(base)
        columns = last_rows(rows, seg, skip=self._present(rows))
        for name in self._present(rows):
            column = as_array(rows.column(name))
            columns[name] = take_or_null(column, seg.last_where(counted & valid(column)))
        return self._finish(rows, seg, kinds, columns)

    # ------------------------------------------------------------------ sequence groups

    def _events(
        self, rows: pa.Table, seg: Segments, kinds: np.ndarray, g: SequenceGroup
    ) -> tuple[BoolArray, BoolArray]:
        """The rows a sequence group sees: inserts and (unless ignored) retractions, with a sequence value."""
        has = np.zeros(seg.n, dtype=bool)
        for s in g.sequence_fields:
            if s in rows.column_names:
                has |= valid(rows.column(s))
        retract = is_retract(kinds)
        return has & ~retract, has & retract & (not self.cfg.ignore_delete)

    def _scalar_groups(
        self, rows: pa.Table, seg: Segments, kinds: np.ndarray, aggregators: dict[str, FieldAggregator]
    ) -> BoolArray:
        route = np.zeros(seg.count, dtype=bool)
        if self.cfg.remove_on_sequence_group:
            route |= seg.any(kinds == RowKind.DELETE)
        retract = is_retract(kinds)
        base = np.where(retract[seg.starts], seg.starts, -1) if seg.count else seg.starts
        for name, a in aggregators.items():
            g = self.cfg.group_of(name)
            if g is None:
                continue
            inner = _inner(a)
            if isinstance(inner, FirstNonNullValue) or not isinstance(
                inner, (*ORDER_FREE, LastValue, LastNonNullValue, FirstValue)
            ):
                route |= seg.sizes > 0
            elif isinstance(inner, ORDER_FREE):
                inserts, retracts = self._events(rows, seg, kinds, g)
                ops = Ops(seg, inserts, retracts, base, np.zeros(seg.n, dtype=bool))
                routed = a.scalar_groups(as_array(rows.column(name)), ops)
                if routed is not None:
                    route |= routed
        return route

    def _accepted(
        self, rows: pa.Table, seg: Segments, g: SequenceGroup, events: BoolArray, base: IntArray
    ) -> BoolArray:
        """Event rows whose sequence values are >= every earlier one of their key (and the base row's)."""
        ranks = dense_rank(rows.select(list(g.sequence_fields)))
        counted = events | seg.at(base)
        before = prefix_max_before(seg, np.where(counted, ranks, -1))
        return events & (ranks >= before)

    def _with_groups(
        self, rows: pa.Table, seg: Segments, kinds: np.ndarray, aggregators: dict[str, FieldAggregator]
    ) -> pa.Table:
        if seg.count == 0:
            return rows
        retract = is_retract(kinds)
        insert = ~retract
        base = np.where(retract[seg.starts], seg.starts, -1)
        at_base = seg.at(base)
        columns = last_rows(rows, seg, skip=self._present(rows))
        done: set[str] = set()
        names = rows.column_names
        for g in self.cfg.groups:
            seq = [s for s in g.sequence_fields if s in names]
            protected = [p for p in g.protected if p in names]
            if not seq:
                continue
            inserts, retracts = self._events(rows, seg, kinds, g)
            events = inserts | retracts
            accepted = self._accepted(rows, seg, g, events, base)
            last = seg.last_where(accepted)
            seq_index = np.where(last >= 0, last, base)
            for s in seq:
                columns[s] = take_or_null(rows.column(s), seq_index)
            plain_index = np.where(last >= 0, np.where(retract[np.maximum(last, 0)], -1, last), base)
            for p in protected:
                a = aggregators.get(p)
                if a is None:
                    columns[p] = take_or_null(rows.column(p), plain_index)
                else:
                    columns[p] = self._grouped_aggregate(
                        a, as_array(rows.column(p)), seg, inserts, retracts, accepted, base
                    )
            done |= set(seq) | set(protected)
        for name in self._present(rows):
            if name not in done:
                column = as_array(rows.column(name))
                columns[name] = take_or_null(column, seg.last_where((insert & valid(column)) | at_base))
        return self._finish(rows, seg, kinds, columns)

    def _grouped_aggregate(
        self,
        a: FieldAggregator,
        values: pa.Array,
        seg: Segments,
        inserts: BoolArray,
        retracts: BoolArray,
        accepted: BoolArray,
        base: IntArray,
    ) -> pa.Array:
        inner = _inner(a)
        if isinstance(a, IgnoreRetract):
            retracts = np.zeros(seg.n, dtype=bool)
        none = np.zeros(seg.n, dtype=bool)
        if retracts.any() and not a.retractable:
            raise a.unsupported_retract()
        if isinstance(inner, ORDER_FREE):
            return a.fold(values, Ops(seg, inserts, retracts, base, none))
        if isinstance(inner, LastValue):
            return inner.fold(values, Ops(seg, inserts & accepted, retracts, base, none))
        rejected = inserts & ~accepted
        if isinstance(inner, LastNonNullValue):
            ok = valid(values)
            last = seg.last_where((inserts & accepted & ok) | (retracts & ok) | seg.at(base))
            current = np.where((last >= 0) & retracts[np.maximum(last, 0)], -1, last)
            filler = seg.first_where(rejected & ok & seg.after(last))
            missing = (current < 0) | ~ok[np.maximum(current, 0)]
            return take_or_null(values, np.where(missing & (filler >= 0), filler, current))
        # first_value: the first fold initialises it (an accepted row sets it); then a rejected row, being
        # older than the accumulator, replaces it
        first = seg.first_where(inserts)
        start = np.where((first >= 0) & accepted[np.maximum(first, 0)], first, base)
        later = seg.last_where(rejected & seg.after(first) & (first >= 0)[seg.ids])
        return take_or_null(values, np.where(later >= 0, later, start))

    # ------------------------------------------------------------------ record at a time

    def _scalar(self, rows: pa.Table, seg: Segments, aggregators: dict[str, FieldAggregator]) -> pa.Table:
        present = [f for f in self.cfg.fields if f in rows.column_names]
        kinds = rows.column(VALUE_KIND).to_numpy()
        records = rows.select(present).to_pylist()
        folder = PartialUpdateKey(self.cfg, present, aggregators)
        results: dict[str, list[object]] = {name: [] for name in present}
        out_kinds = []
        for start, end in zip(seg.starts, seg.ends, strict=True):
            row, kind = folder.fold([(int(kinds[i]), records[i]) for i in range(start, end)])
            for name in present:
                results[name].append(row[name])
            out_kinds.append(kind)
        columns = last_rows(rows, seg, skip=self._present(rows))
        for name in self._present(rows):
            columns[name] = pa.array(results[name], rows.schema.field(name).type)
        columns[VALUE_KIND] = pa.array(np.asarray(out_kinds, dtype=np.int8))
        return build(rows, columns)
