"""The field aggregator protocol: a vectorized fold over key groups, and the scalar semantics it must equal.

Each aggregator folds one column. ``fold`` does all key groups at once with Arrow/numpy; the scalar
methods (``agg``, ``agg_reversed``, ``retract``) are Paimon's per-record definitions, used for the few
groups ``scalar_groups`` routes around the vectorized path (e.g. an integer sum that may overflow, a
retraction in a product) and by the tests as the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError, LsmlakeError
from lsmlake.expr.literals import INT_BITS
from lsmlake.mergetree.engines.segments import BoolArray, IntArray, Segments

NON_NULL = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
NUMERIC = frozenset({*INT_BITS, "FLOAT", "DOUBLE", "DECIMAL"})
NOT_COMPARABLE = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB", "VECTOR"})


@dataclass(frozen=True)
class Ops:
    """What every row of a merge does to a field's accumulator, for all key groups at once.

    Rows up to ``base`` are superseded: the base row's value *is* the accumulator (a reset by
    ``remove-record-on-delete``; -1 means the fold starts from null). After it, ``add`` rows are
    folded in with ``agg`` and ``retract`` rows with ``retract``. ``before_base`` marks rows that were
    added before the reset: only the first_* aggregators remember them.
    """

    seg: Segments
    add: BoolArray
    retract: BoolArray
    base: IntArray
    before_base: BoolArray

    @staticmethod
    def plain(seg: Segments, retract: BoolArray) -> Ops:
        none = np.full(seg.count, -1, dtype=np.int64)
        return Ops(seg, ~retract, retract, none, np.zeros(seg.n, dtype=bool))

    @property
    def at_base(self) -> BoolArray:
        return self.seg.at(self.base)

    @property
    def contributes(self) -> BoolArray:
        """Rows folded in with ``agg``, counting the base row as the first of them."""
        return self.add | self.at_base

    def without_retract(self) -> Ops:
        return replace(self, retract=np.zeros(self.seg.n, dtype=bool))


class FieldAggregator:
    """One column's aggregate function (Paimon's ``FieldAggregator``)."""

    name: ClassVar[str] = ""
    retractable: ClassVar[bool] = False
    types: ClassVar[frozenset[str] | None] = None  # allowed type roots, None = any
    type_noun: ClassVar[str] = ""

    def __init__(self, field: str, options: dict[str, str]) -> None:
        self.field = field
        self.options = options

    @classmethod
    def check_type(cls, field: str, dtype: DataType) -> None:
        if cls.types is not None and dtype.root not in cls.types:
            raise InvalidOptionError(
                f"aggregate function '{cls.name}' of field '{field}' needs {cls.type_noun}, "
                f"but the field is {dtype}"
            )

    def check_options(self, dtype: DataType) -> None:
        """Validate this field's ``fields.<f>.*`` options against the column's type (raise InvalidOptionError)."""

    def unsupported_retract(self) -> LsmlakeError:
        return LsmlakeError(
            f"aggregate function '{self.name}' of field '{self.field}' does not support retraction "
            f"(UPDATE_BEFORE/DELETE rows); set 'fields.{self.field}.ignore-retract' = 'true' to ignore them"
        )

    # -- vectorized
    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        """The accumulator of every key group after its rows."""
        raise NotImplementedError

    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        """Groups ``fold`` cannot do exactly (they go through the scalar methods); None for none."""
        return None

    # -- scalar, per record (Paimon's definitions)
    def reset(self) -> None:
        """Start a new key."""

    def agg(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        """Fold in a record that sorts before the accumulator (sequence groups)."""
        return self.agg(value, acc)

    def retract(self, acc: Any, value: Any) -> Any:
        raise self.unsupported_retract()


class Typed(FieldAggregator):
    """An aggregator whose scalar arithmetic depends on the column's Arrow type (set on first fold)."""

    arrow_type: pa.DataType = pa.null()

    def bind(self, arrow_type: pa.DataType) -> None:
        self.arrow_type = arrow_type


class IgnoreRetract(FieldAggregator):
    """``fields.<f>.ignore-retract``: retraction leaves the accumulator as it is."""

    retractable = True

    def __init__(self, inner: FieldAggregator) -> None:
        super().__init__(inner.field, inner.options)
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]

    def bind(self, arrow_type: pa.DataType) -> None:
        if isinstance(self.inner, Typed):
            self.inner.bind(arrow_type)

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        return self.inner.fold(values, ops.without_retract())

    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        return self.inner.scalar_groups(values, ops.without_retract())

    def reset(self) -> None:
        self.inner.reset()

    def agg(self, acc: Any, value: Any) -> Any:
        return self.inner.agg(acc, value)

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.inner.agg_reversed(acc, value)

    def retract(self, acc: Any, value: Any) -> Any:
        return acc
