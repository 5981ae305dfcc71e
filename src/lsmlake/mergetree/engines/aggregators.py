"""Paimon's aggregate functions by name: lookup, validation and construction."""

from __future__ import annotations

import pyarrow as pa

from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError, UnsupportedError
from lsmlake.mergetree.engines.aggregator import FieldAggregator, IgnoreRetract, Ops, Typed
from lsmlake.mergetree.engines.containers import Collect, ListAgg, MergeMap
from lsmlake.mergetree.engines.nested import MergeMapWithKeyTime, NestedPartialUpdate, NestedUpdate
from lsmlake.mergetree.engines.numeric import BoolAnd, BoolOr, Max, Min, Product, Sum
from lsmlake.mergetree.engines.picks import FirstNonNullValue, FirstValue, LastNonNullValue, LastValue
from lsmlake.mergetree.engines.sketches import HllSketch, RoaringBitmap32, RoaringBitmap64, ThetaSketch

__all__ = [
    "AGGREGATORS",
    "FieldAggregator",
    "IgnoreRetract",
    "Ops",
    "bind",
    "check_function_name",
    "create_aggregator",
]

AGGREGATORS: dict[str, type[FieldAggregator]] = {
    cls.name: cls
    for cls in (
        Sum,
        Product,
        Max,
        Min,
        LastValue,
        LastNonNullValue,
        FirstValue,
        FirstNonNullValue,
        ListAgg,
        BoolAnd,
        BoolOr,
        Collect,
        MergeMap,
        MergeMapWithKeyTime,
        NestedUpdate,
        NestedPartialUpdate,
        HllSketch,
        ThetaSketch,
        RoaringBitmap32,
        RoaringBitmap64,
    )
}
AGGREGATORS["first_not_null_value"] = FirstNonNullValue  # Paimon's legacy name
PRIMARY_KEY = "primary-key"
# Paimon knows these; lsmlake cannot compute them (yet), and why.
NOT_IMPLEMENTED: dict[str, str] = {}


def check_function_name(name: str, where: str) -> None:
    """Reject names Paimon does not know, and the Paimon functions lsmlake does not implement."""
    if name in AGGREGATORS or name == PRIMARY_KEY:
        return
    if name in NOT_IMPLEMENTED:
        raise UnsupportedError(
            f"{where}: aggregate function '{name}' is not supported by lsmlake yet: {NOT_IMPLEMENTED[name]}"
        )
    hint = " (Paimon has no 'count'; aggregate a column of 1s with 'sum')" if name == "count" else ""
    known = ", ".join(sorted(AGGREGATORS))
    raise InvalidOptionError(f"{where}: unknown aggregate function '{name}'{hint}; known: {known}")


def create_aggregator(
    name: str,
    field: str,
    dtype: DataType | None,
    options: dict[str, str],
) -> FieldAggregator:
    """The aggregator ``name`` for ``field`` (type-checked when ``dtype`` is given), with ignore-retract."""
    check_function_name(name, f"field '{field}'")
    cls = AGGREGATORS[name] if name != PRIMARY_KEY else LastValue
    if dtype is not None:
        cls.check_type(field, dtype)
    aggregator = cls(field, options)
    if dtype is not None:
        aggregator.check_options(dtype)
    if options.get(f"fields.{field}.ignore-retract", "false").lower() == "true":
        return IgnoreRetract(aggregator)
    return aggregator


def bind(aggregator: FieldAggregator, arrow_type: pa.DataType) -> None:
    """Tell a type-dependent aggregator the column's Arrow type before scalar use."""
    if isinstance(aggregator, (Typed, IgnoreRetract)):
        aggregator.bind(arrow_type)
