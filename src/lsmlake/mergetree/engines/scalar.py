"""Record-at-a-time folds of one key, exactly as Paimon's merge functions define them.

The engines route here only the few key groups their vectorized path cannot do exactly (e.g. a
``remove-record-on-sequence-group`` delete, an order-dependent aggregator inside a sequence group);
the tests use these folds as the reference the vectorized path must equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lsmlake.errors import LsmlakeError
from lsmlake.mergetree.engines.aggregator import FieldAggregator
from lsmlake.mergetree.engines.config import EngineConfig, SequenceGroup
from lsmlake.mergetree.kv_layout import RowKind

Record = tuple[int, Mapping[str, Any]]  # (row kind, column -> value)

PARTIAL_UPDATE_DELETE_ERROR = (
    "By default, Partial update can not accept delete records, you can choose one of the following "
    "solutions: 1. Configure 'ignore-delete' to ignore delete records. "
    "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when receiving delete "
    "records. "
    "3. Configure 'sequence-group's to retract partial columns. Also configure "
    "'partial-update.remove-record-on-sequence-group' to remove the whole row when receiving deleted records "
    "of `specified sequence group`."
)


def is_retract_kind(kind: int) -> bool:
    return kind in (RowKind.UPDATE_BEFORE, RowKind.DELETE)


def aggregate_key(
    records: Sequence[Record], aggregators: Mapping[str, FieldAggregator], *, remove_on_delete: bool
) -> tuple[dict[str, Any], int]:
    """Paimon's AggregateMergeFunction over one key's records (oldest first)."""
    row: dict[str, Any] = dict.fromkeys(aggregators)
    for a in aggregators.values():
        a.reset()
    deleted = False
    for kind, values in records:
        deleted = remove_on_delete and kind == RowKind.DELETE
        if deleted:
            row = {f: values[f] for f in aggregators}
            continue
        retract = is_retract_kind(kind)
        for f, a in aggregators.items():
            row[f] = a.retract(row[f], values[f]) if retract else a.agg(row[f], values[f])
    return row, int(RowKind.DELETE if deleted else RowKind.INSERT)


def _compare(a: Mapping[str, Any], b: Mapping[str, Any], fields: Sequence[str]) -> int:
    """Compare sequence fields in order, ascending, nulls first."""
    for f in fields:
        x, y = a[f], b[f]
        if x is None and y is None:
            continue
        if x is None:
            return -1
        if y is None:
            return 1
        if x != y:
            return -1 if x < y else 1
    return 0


class PartialUpdateKey:
    """Paimon's PartialUpdateMergeFunction over one key's records, restricted to the columns present."""

    def __init__(self, cfg: EngineConfig, columns: Sequence[str], aggregators: Mapping[str, FieldAggregator]):
        self.cfg = cfg
        self.fields = [f for f in cfg.fields if f in columns]
        self.aggregators = aggregators
        self.group: dict[str, SequenceGroup] = {}
        for g in cfg.groups:
            for f in (*g.protected, *g.sequence_fields):
                if f in columns:
                    self.group[f] = g

    def fold(self, records: Sequence[Record]) -> tuple[dict[str, Any], int]:
        cfg = self.cfg
        row: dict[str, Any] = dict.fromkeys(self.fields)
        for a in self.aggregators.values():
            a.reset()
        meet_insert = filled = False
        self.deleted = False
        for kind, values in records:
            self.deleted = False
            if is_retract_kind(kind):
                if not filled:
                    row = {f: values[f] for f in self.fields}
                    filled = True
                if cfg.ignore_delete:
                    continue
                if cfg.groups:
                    row = self._retract(row, kind, values)
                    continue
                if cfg.remove_record_on_delete:
                    if kind == RowKind.DELETE:
                        self.deleted = True
                        row = {f: values[f] for f in self.fields}
                    continue
                raise LsmlakeError(PARTIAL_UPDATE_DELETE_ERROR)
            if cfg.groups:
                self._update(row, values)
            else:
                for f in self.fields:
                    if values[f] is not None:
                        row[f] = values[f]
            meet_insert = filled = True
        return row, int(RowKind.DELETE if self.deleted or not meet_insert else RowKind.INSERT)

    def _empty(self, values: Mapping[str, Any], g: SequenceGroup, processed: set[str]) -> bool:
        if any(values[s] is not None for s in g.sequence_fields):
            return False
        processed.update(g.sequence_fields)
        return True

    def _update(self, row: dict[str, Any], values: Mapping[str, Any]) -> None:
        processed: set[str] = set()
        for f in self.fields:
            g, a = self.group.get(f), self.aggregators.get(f)
            if g is None:
                if a is not None:
                    row[f] = a.agg(row[f], values[f])
                elif values[f] is not None:
                    row[f] = values[f]
                continue
            if f in processed or self._empty(values, g, processed):
                continue
            if _compare(values, row, g.sequence_fields) >= 0:
                if f in g.sequence_fields:
                    for s in g.sequence_fields:
                        row[s] = values[s]
                        processed.add(s)
                    continue
                row[f] = values[f] if a is None else a.agg(row[f], values[f])
            elif a is not None:
                row[f] = a.agg_reversed(row[f], values[f])

    def _retract(self, row: dict[str, Any], kind: int, values: Mapping[str, Any]) -> dict[str, Any]:
        processed: set[str] = set()
        updated: set[str] = set()
        for f in self.fields:
            g, a = self.group.get(f), self.aggregators.get(f)
            if g is None or f in processed or self._empty(values, g, processed):
                continue
            if _compare(values, row, g.sequence_fields) >= 0:
                if f in g.sequence_fields:
                    for s in g.sequence_fields:
                        if s not in updated:
                            if kind == RowKind.DELETE and s in self.cfg.remove_on_sequence_group:
                                self.deleted = True
                                return {c: values[c] for c in self.fields}
                            row[s] = values[s]
                            updated.add(s)
                        processed.add(s)
                else:
                    row[f] = None if a is None else a.retract(row[f], values[f])
            elif a is not None:
                row[f] = a.retract(row[f], values[f])
        return row
