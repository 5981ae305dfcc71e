"""Numeric and boolean aggregators: sum, product, max, min, bool_and, bool_or."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError, LsmlakeError
from lsmlake.mergetree.engines.aggregator import (
    NON_NULL,
    NOT_COMPARABLE,
    NUMERIC,
    FieldAggregator,
    Ops,
    Typed,
)
from lsmlake.mergetree.engines.segments import BoolArray, Segments, group_reduce


def _is_int(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t))


def _int_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _check_int(value: int, t: pa.DataType, what: str) -> int:
    lo, hi = _int_range(t)
    if not lo <= value <= hi:
        raise LsmlakeError(f"{t} overflow in {what}: {value}")
    return value


def _decimal_fits(value: Decimal, t: pa.Decimal128Type) -> Decimal | None:
    """Paimon's Decimal.fromBigDecimal: rounded half-up to the scale; null when the precision overflows."""
    with localcontext() as ctx:
        ctx.prec = 80
        rounded = value.quantize(Decimal(1).scaleb(-t.scale), rounding=ROUND_HALF_UP)
    return rounded if rounded.adjusted() < t.precision - t.scale else None


def _float(t: pa.DataType, value: float) -> Any:
    return float(np.float32(value)) if pa.types.is_float32(t) else float(value)


def _abs_total(values: pa.Array, mask: BoolArray, seg: Segments) -> np.ndarray:
    """Per group, the sum of |value| over the masked rows, as float64 (an upper bound of every prefix sum)."""
    as_float = pc.fill_null(pc.abs(values) if pa.types.is_decimal(values.type) else values, 0)
    floats = as_float.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    mags = np.abs(np.asarray(floats, dtype=np.float64))
    mags = np.where(mask, mags, 0.0)
    return np.add.reduceat(mags, seg.starts) if seg.count else mags


class Sum(Typed):
    name = "sum"
    retractable = True
    types = NUMERIC
    type_noun = "a numeric type"

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        signed = values
        if ops.retract.any():
            try:
                signed = pc.if_else(pa.array(ops.retract), pc.negate_checked(values), values)
            except pa.ArrowInvalid as e:
                raise LsmlakeError(f"sum of field '{self.field}': {e}") from None
            # a reset row that is also retracted contributes v - v
            both = ops.retract & ops.at_base
            if both.any():
                signed = pc.if_else(pa.array(both), pc.subtract(values, values), signed)
        total = group_reduce(signed, ops.contributes | ops.retract, ops.seg, "sum", NON_NULL)
        return total.cast(values.type)

    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        t = values.type
        if pa.types.is_floating(t):
            return None
        total = _abs_total(values, ops.contributes | ops.retract, ops.seg)
        limit = (
            float(_int_range(t)[1]) * (1 - 1e-09)
            if _is_int(t)
            else float(10 ** (t.precision - t.scale)) * (1 - 1e-09)
        )
        return np.asarray(total >= limit, dtype=bool)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return self._add(acc, value, "sum")

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return self._negate(value) if acc is None else acc
        return self._add(acc, self._negate(value), "sum retraction")

    def _negate(self, value: Any) -> Any:
        if value is None:
            return None
        if _is_int(self.arrow_type):
            return _check_int(-value, self.arrow_type, f"sum of field '{self.field}'")
        return -value

    def _add(self, a: Any, b: Any, what: str) -> Any:
        t = self.arrow_type
        if _is_int(t):
            return _check_int(a + b, t, f"{what} of field '{self.field}'")
        if pa.types.is_decimal(t):
            return _decimal_fits(a + b, t)
        return _float(t, a + b)


class Product(Typed):
    name = "product"
    retractable = True
    types = NUMERIC
    type_noun = "a numeric type"

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        return group_reduce(values, ops.contributes, ops.seg, "product", NON_NULL).cast(values.type)

    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        t = values.type
        route = ops.seg.any(ops.retract)
        if pa.types.is_decimal(t):
            return route | ops.seg.any(ops.contributes)
        if _is_int(t):
            mags = np.abs(
                np.asarray(
                    pc.fill_null(values, 1).cast(pa.float64(), safe=False).to_numpy(), dtype=np.float64
                )
            )
            logs = np.where(ops.contributes & (mags > 0), np.log2(np.maximum(mags, 1.0)), 0.0)
            total = np.add.reduceat(logs, ops.seg.starts) if ops.seg.count else logs
            route |= total >= t.bit_width - 1.001
        return route

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        t = self.arrow_type
        if _is_int(t):
            return _check_int(acc * value, t, f"product of field '{self.field}'")
        if pa.types.is_decimal(t):
            return _decimal_fits(acc * value, t)
        return _float(t, acc * value)

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        t = self.arrow_type
        if _is_int(t):
            if value == 0:
                raise LsmlakeError(f"product retraction of field '{self.field}': division by zero")
            quotient = abs(acc) // abs(value) * (1 if (acc < 0) == (value < 0) else -1)
            return _check_int(quotient, t, f"product retraction of field '{self.field}'")
        if pa.types.is_decimal(t):
            with localcontext() as ctx:
                ctx.prec = 80
                return _decimal_fits(acc / value, t)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (
                float(np.float64(acc) / np.float64(value))
                if not pa.types.is_float32(t)
                else float(np.float32(acc) / np.float32(value))
            )


class Extreme(FieldAggregator):
    types = None
    func: ClassVar[str] = ""

    @classmethod
    def check_type(cls, field: str, dtype: DataType) -> None:
        if dtype.root in NOT_COMPARABLE:
            raise InvalidOptionError(
                f"aggregate function '{cls.name}' of field '{field}' needs a comparable type, "
                f"but the field is {dtype}"
            )

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        return group_reduce(values, ops.contributes, ops.seg, self.func, NON_NULL).cast(values.type)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return self._pick(acc, value)

    def _pick(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError


class Max(Extreme):
    name = "max"
    func = "max"

    def _pick(self, acc: Any, value: Any) -> Any:
        return value if acc < value else acc


class Min(Extreme):
    name = "min"
    func = "min"

    def _pick(self, acc: Any, value: Any) -> Any:
        return value if acc > value else acc


class Bool(FieldAggregator):
    types = frozenset({"BOOLEAN"})
    type_noun = "BOOLEAN"
    func: ClassVar[str] = ""

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        return group_reduce(values, ops.contributes, ops.seg, self.func, NON_NULL)


class BoolAnd(Bool):
    name = "bool_and"
    func = "all"

    def agg(self, acc: Any, value: Any) -> Any:
        return (value if acc is None else acc) if acc is None or value is None else acc and value


class BoolOr(Bool):
    name = "bool_or"
    func = "any"

    def agg(self, acc: Any, value: Any) -> Any:
        return (value if acc is None else acc) if acc is None or value is None else acc or value
