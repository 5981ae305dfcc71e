"""Aggregators whose accumulator is a whole nested value or an opaque blob, folded record by record per key.

Nested-table updates, keyed map merges and sketch/bitmap unions have no columnar form: each step
rebuilds a value from the previous one. Their ``fold`` converts only the rows of the merged key groups
to Python once and applies Paimon's per-record ``agg``/``retract`` within each group; the sketch
aggregators override it to hand a whole group to their library at once where that is exact.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

import pyarrow as pa

from lsmlake.mergetree.engines.aggregator import FieldAggregator, Ops


def freeze(value: Any) -> Hashable:
    """A hashable stand-in for a Python value from Arrow (lists, maps and rows become tuples)."""
    if isinstance(value, dict):
        return tuple((k, freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, tuple):
        return tuple(freeze(v) for v in value)
    return value  # type: ignore[no-any-return]


def group_steps(ops: Ops) -> Iterator[tuple[int, list[tuple[int, bool]]]]:
    """Per key group: the base row (-1 for none) and the rows folded after it, each as (row, is_retract)."""
    seg = ops.seg
    for g in range(seg.count):
        start, end, base = int(seg.starts[g]), int(seg.ends[g]), int(ops.base[g])
        steps = [(i, bool(ops.retract[i])) for i in range(start, end) if ops.add[i] or ops.retract[i]]
        yield base, [(i, r) for i, r in steps if i != base]


class RecordFold(FieldAggregator):
    """An aggregator whose vectorized fold is its scalar definition applied within each key group."""

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        py = values.to_pylist()
        out: list[Any] = []
        for base, steps in group_steps(ops):
            self.reset()
            acc = py[base] if base >= 0 else None
            for i, retract in steps:
                acc = self.retract(acc, py[i]) if retract else self.agg(acc, py[i])
            out.append(acc)
        return pa.array(out, values.type)
