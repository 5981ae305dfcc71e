"""Aggregators that keep one value: last_value, last_non_null_value, first_value, first_non_null_value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.mergetree.engines.aggregator import FieldAggregator, Ops
from lsmlake.mergetree.engines.segments import BoolArray, take_or_null, valid


class LastValue(FieldAggregator):
    name = "last_value"
    retractable = True

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        last = ops.seg.last_where(ops.contributes | ops.retract)
        last = np.where((last >= 0) & ops.retract[np.maximum(last, 0)], -1, last)
        return take_or_null(values, last)

    def agg(self, acc: Any, value: Any) -> Any:
        return value

    def retract(self, acc: Any, value: Any) -> Any:
        return None


class LastNonNullValue(FieldAggregator):
    name = "last_non_null_value"
    retractable = True

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        ok = valid(values)
        last = ops.seg.last_where(((ops.add | ops.retract) & ok) | ops.at_base)
        last = np.where((last >= 0) & ops.retract[np.maximum(last, 0)], -1, last)
        return take_or_null(values, last)

    def agg(self, acc: Any, value: Any) -> Any:
        return acc if value is None else value

    def retract(self, acc: Any, value: Any) -> Any:
        return None if value is not None else acc


class FirstValue(FieldAggregator):
    name = "first_value"

    def __init__(self, field: str, options: dict[str, str]) -> None:
        super().__init__(field, options)
        self.initialized = False

    def _starts(self, values: pa.Array) -> BoolArray:
        return np.ones(len(values), dtype=bool)

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        starts = self._starts(values)
        seen_before = ops.seg.any(ops.before_base & starts)
        first = ops.seg.first_where(ops.add & starts)
        pick = np.where((ops.base >= 0) & seen_before, ops.base, np.where(first >= 0, first, ops.base))
        return take_or_null(values, pick)

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized:
            self.initialized = True
            return value
        return acc


class FirstNonNullValue(FirstValue):
    name = "first_non_null_value"

    def _starts(self, values: pa.Array) -> BoolArray:
        return valid(values)

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return acc
