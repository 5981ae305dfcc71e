"""Merge engine semantics, case by case: each expected row is what Paimon's merge function yields."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lsmlake.core.options import CoreOptions
from lsmlake.core.types import from_arrow_type
from lsmlake.errors import InvalidOptionError, LsmlakeError
from lsmlake.mergetree.engines.config import engine_config
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from lsmlake.mergetree.merge_function import MergeFunction, merge_function_for

INS, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE


class Engine:
    """A merge engine over int columns f0 (the key), f1..fn, fed rows one at a time like Paimon's tests."""

    def __init__(
        self, options: dict[str, str], width: int, types: dict[str, pa.DataType] | None = None
    ) -> None:
        self.schema = pa.schema([(f"f{i}", (types or {}).get(f"f{i}", pa.int32())) for i in range(width)])
        self.options = CoreOptions.of(options, primary_key_table=True)
        fields = [(f.name, from_arrow_type(f.type, f.name != "f0")) for f in self.schema]
        self.config = engine_config(fields, ["f0"], self.options)
        self.rows: list[tuple[int, tuple[Any, ...]]] = []

    @property
    def function(self) -> MergeFunction:
        from lsmlake.mergetree.engines.aggregation import Aggregation
        from lsmlake.mergetree.engines.partial_update import PartialUpdate

        return (
            PartialUpdate(self.config) if self.config.engine == "partial-update" else Aggregation(self.config)
        )

    def add(self, *values: Any, kind: RowKind = INS) -> Engine:
        self.rows.append((int(kind), values))
        return self

    def result(self, *, reduce: bool = False) -> tuple[tuple[Any, ...], int, int]:
        """(values, kind, sequence number) of merging every row added so far."""
        cols = {f.name: pa.array([v[i] for _, v in self.rows], f.type) for i, f in enumerate(self.schema)}
        table = (
            pa.table(cols)
            .append_column(SEQUENCE_NUMBER, pa.array(range(len(self.rows)), pa.int64()))
            .append_column(VALUE_KIND, pa.array([k for k, _ in self.rows], pa.int8()))
        )
        out = self.function.merge(table, ["f0"], reduce_singles=reduce).to_pylist()
        assert len(out) == 1
        row = out[0]
        return tuple(row[f.name] for f in self.schema), row[VALUE_KIND], row[SEQUENCE_NUMBER]

    def values(self) -> tuple[Any, ...]:
        return self.result()[0]


# --------------------------------------------------------------------------- partial-update


def test_partial_update_non_null_fields_overwrite() -> None:
    e = Engine({"merge-engine": "partial-update"}, 7).add(1, 1, 1, 1, 1, 1, 1).add(1, 2, 2, 2, 2, 2, None)
    assert e.values() == (1, 2, 2, 2, 2, 2, 1)


def test_partial_update_sequence_groups_with_retraction() -> None:
    e = Engine(
        {
            "merge-engine": "partial-update",
            "fields.f3.sequence-group": "f1,f2",
            "fields.f6.sequence-group": "f4,f5",
        },
        7,
    )
    e.add(1, 1, 1, 1, 1, 1, 1).add(1, 2, 2, 2, 2, 2, None)
    assert e.values() == (1, 2, 2, 2, 1, 1, 1)
    e.add(1, 3, 3, 1, 3, 3, 3)
    assert e.values() == (1, 2, 2, 2, 3, 3, 3)
    e.add(1, 1, 1, 3, 1, 1, None, kind=D)
    assert e.values() == (1, None, None, 3, 3, 3, 3)
    e.add(1, 1, 1, 3, 1, 1, 4, kind=D)
    assert e.values() == (1, None, None, 3, None, None, 4)
    e.add(1, 4, 4, 4, 5, 5, 5)
    assert e.values() == (1, 4, 4, 4, 5, 5, 5)
    e.add(1, 1, 1, 6, 1, 1, 6, kind=D)
    assert e.values() == (1, None, None, 6, None, None, 6)


def test_partial_update_remove_record_on_sequence_group() -> None:
    e = Engine(
        {
            "merge-engine": "partial-update",
            "fields.f3.sequence-group": "f1,f2",
            "fields.f6.sequence-group": "f4,f5",
            "partial-update.remove-record-on-sequence-group": "f6",
        },
        7,
    )
    e.add(1, 1, 1, 1, 1, 1, 1).add(1, 2, 2, 2, 2, 2, None).add(1, 3, 3, 1, 3, 3, 3)
    assert e.values() == (1, 2, 2, 2, 3, 3, 3)
    e.add(1, 1, 1, 3, 1, 1, None, kind=D)
    assert e.values() == (1, None, None, 3, 3, 3, 3)
    e.add(1, 1, 1, 3, 1, 1, 4, kind=D)
    values, kind, _ = e.result()
    assert (values, kind) == ((1, 1, 1, 3, 1, 1, 4), D)  # the whole row is removed
    e.add(1, 4, 4, 4, 5, 5, 5)
    assert e.result()[:2] == ((1, 4, 4, 4, 5, 5, 5), INS)


def test_partial_update_several_sequence_fields() -> None:
    e = Engine(
        {
            "merge-engine": "partial-update",
            "fields.f3,f4.sequence-group": "f1,f2",
            "fields.f7,f8.sequence-group": "f5,f6",
        },
        9,
    )
    e.add(1, None, None, None, None, 1, 1, 1, 3).add(1, 2, 2, None, None, 2, 2, 1, 3)
    assert e.values() == (1, None, None, None, None, 2, 2, 1, 3)
    e = Engine(
        {
            "merge-engine": "partial-update",
            "fields.f3,f4.sequence-group": "f1,f2",
            "fields.f7,f8.sequence-group": "f5,f6",
        },
        9,
    )
    e.add(1, 1, 1, 1, 1, 1, 1, 1, 3).add(1, 2, 2, 2, 2, 2, 1, 1, None)
    assert e.values() == (1, 2, 2, 2, 2, 1, 1, 1, 3)
    e.add(1, 1, 3, 1, 3, 3, 3, 3, 2)
    assert e.values() == (1, 2, 2, 2, 2, 3, 3, 3, 2)
    e.add(1, 1, 1, 3, 3, 1, 1, None, None, kind=D)
    assert e.values() == (1, None, None, 3, 3, 3, 3, 3, 2)
    e.add(1, 1, 1, 3, 1, 1, 1, 4, 4, kind=D)
    assert e.values() == (1, None, None, 3, 3, None, None, 4, 4)


def test_partial_update_default_aggregate_function() -> None:
    e = Engine(
        {
            "merge-engine": "partial-update",
            "fields.f3.sequence-group": "f1,f2",
            "fields.f6.sequence-group": "f4,f5",
            "fields.default-aggregate-function": "last_non_null_value",
        },
        7,
    )
    e.add(1, 1, 1, 1, 1, 1, 1).add(1, 2, 2, 2, 2, 2, None)
    assert e.values() == (1, 2, 2, 2, 1, 1, 1)
    e.add(1, 3, 3, 1, 3, 3, 3)
    assert e.values() == (1, 2, 2, 2, 3, 3, 3)
    e.add(1, 4, None, 4, 5, None, 5)
    assert e.values() == (1, 4, 2, 4, 5, 3, 5)


def test_partial_update_first_value_in_a_sequence_group() -> None:
    e = Engine(
        {
            "merge-engine": "partial-update",
            "fields.f1.sequence-group": "f2,f3",
            "fields.f2.aggregate-function": "first_value",
            "fields.f3.aggregate-function": "last_value",
        },
        4,
    )
    e.add(1, 1, 1, 1).add(1, 2, 2, 2)
    assert e.values() == (1, 2, 1, 2)
    e.add(1, 0, 3, 3)  # older sequence: becomes the first value
    assert e.values() == (1, 2, 3, 2)


def test_partial_update_aggregation_in_sequence_groups_with_retraction() -> None:
    e = Engine(
        {
            "merge-engine": "partial-update",
            "fields.f1.sequence-group": "f2,f3,f4",
            "fields.f7.sequence-group": "f6",
            "fields.f0.aggregate-function": "listagg",
            "fields.f2.aggregate-function": "sum",
            "fields.f4.aggregate-function": "last_value",
            "fields.f6.aggregate-function": "last_non_null_value",
            "fields.f4.ignore-retract": "true",
            "fields.f6.ignore-retract": "true",
        },
        8,
    )
    e.add(1, 1, 1, 1, 1, 1, 1, 1).add(1, 2, 1, 2, 2, 2, 2, 0)
    assert e.values() == (1, 2, 2, 2, 2, 2, 1, 1)
    e.add(1, 1, 1, 1, 1, 1, 2, 0)  # neither group advances; sum still adds
    assert e.values() == (1, 2, 3, 2, 2, 1, 1, 1)
    e.add(1, 1, -1, 1, 1, 2, 2, 0).add(1, 3, None, None, None, None, None, 2)
    assert e.values() == (1, 3, 2, None, None, 2, 1, 2)
    e.add(1, 3, 1, 1, 1, 1, 1, 3)
    assert e.values() == (1, 3, 3, 1, 1, 1, 1, 3)
    e.add(1, 3, 2, 1, 1, 1, 1, 3, kind=UB)
    assert e.values() == (1, 3, 1, None, 1, 1, 1, 3)
    e.add(1, 3, 2, 1, 1, 1, 1, 3, kind=D)
    assert e.values() == (1, 3, -1, None, 1, 1, 1, 3)
    e.add(1, 2, 2, 1, 1, 1, 1, 3, kind=D)  # an older sequence still retracts the sum
    assert e.values() == (1, 3, -3, None, 1, 1, 1, 3)


def test_partial_update_remove_record_on_delete() -> None:
    e = Engine({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, 4)
    e.add(1, 3, 5, 7).add(1, 2, 2, None, kind=D)
    assert e.result() == ((1, 2, 2, None), D, 1)
    e.add(1, None, 9, None)
    assert e.result() == ((1, 2, 9, None), INS, 2)  # the delete row's values are the new base
    e.add(1, 4, 4, 4, kind=UB)  # UPDATE_BEFORE is ignored
    assert e.result() == ((1, 2, 9, None), INS, 3)


def test_partial_update_deletes_need_an_option() -> None:
    e = Engine({"merge-engine": "partial-update"}, 3).add(1, 1, 1).add(1, None, None, kind=D)
    with pytest.raises(LsmlakeError, match="ignore-delete"):
        e.result()
    ignored = Engine({"merge-engine": "partial-update", "ignore-delete": "true"}, 3)
    ignored.add(1, 1, 1).add(1, None, None, kind=D).add(1, 2, None)
    assert ignored.result()[:2] == ((1, 2, 1), INS)


def test_partial_update_only_retractions_give_a_delete() -> None:
    e = Engine({"merge-engine": "partial-update", "fields.f2.sequence-group": "f1"}, 3)
    e.add(1, 5, 1, kind=D).add(1, 6, 2, kind=UB)
    assert e.result()[1] == D


# --------------------------------------------------------------------------- aggregation


def agg(func: str, t: pa.DataType | None = None, **extra: str) -> Engine:
    options = {"merge-engine": "aggregation", "fields.f1.aggregate-function": func}
    options.update({f"fields.f1.{k.replace('_', '-')}": v for k, v in extra.items()})
    return Engine(options, 2, {"f1": t or pa.int64()})


CASES: list[tuple[str, pa.DataType, dict[str, str], list[tuple[RowKind, Any]], Any]] = [
    ("sum", pa.int64(), {}, [(INS, 1), (INS, None), (INS, 5), (UB, 2)], 4),
    ("sum", pa.int64(), {}, [(UB, 2), (INS, 5)], 3),  # a null accumulator retracts to the negation
    ("sum", pa.int8(), {}, [(INS, 100), (INS, -100), (INS, 27)], 27),
    ("sum", pa.float64(), {}, [(INS, 1.5), (D, 0.5)], 1.0),
    ("sum", pa.decimal128(5, 2), {}, [(INS, Decimal("1.25")), (INS, Decimal("2.50"))], Decimal("3.75")),
    ("product", pa.int32(), {}, [(INS, 2), (INS, None), (INS, 3)], 6),
    ("product", pa.int32(), {}, [(INS, 6), (INS, 4), (UB, 3)], 8),
    ("product", pa.float64(), {}, [(INS, 6.0), (D, 4.0)], 1.5),
    ("max", pa.int64(), {}, [(INS, 1), (INS, None), (INS, 7), (INS, 3)], 7),
    ("min", pa.string(), {}, [(INS, "b"), (INS, "a"), (INS, None)], "a"),
    ("max", pa.bool_(), {}, [(INS, False), (INS, True)], True),
    ("last_value", pa.int64(), {}, [(INS, 1), (INS, None)], None),
    ("last_value", pa.int64(), {}, [(INS, 1), (INS, 2), (UB, 2)], None),
    ("last_non_null_value", pa.int64(), {}, [(INS, 1), (INS, None)], 1),
    ("last_non_null_value", pa.int64(), {}, [(INS, 1), (INS, 2), (UB, None)], 2),
    ("last_non_null_value", pa.int64(), {}, [(INS, 1), (INS, 2), (UB, 2)], None),
    ("first_value", pa.int64(), {}, [(INS, None), (INS, 2)], None),
    ("first_non_null_value", pa.int64(), {}, [(INS, None), (INS, 2), (INS, 3)], 2),
    ("first_not_null_value", pa.int64(), {}, [(INS, None), (INS, 2), (INS, 3)], 2),
    ("listagg", pa.string(), {}, [(INS, "a"), (INS, None), (INS, " "), (INS, "b")], "a,b"),
    ("listagg", pa.string(), {"list_agg_delimiter": ";"}, [(INS, "a"), (INS, "b")], "a;b"),
    ("listagg", pa.string(), {"distinct": "true"}, [(INS, "a,b"), (INS, "b,c"), (INS, "a")], "a,b,c"),
    ("bool_and", pa.bool_(), {}, [(INS, True), (INS, None), (INS, False)], False),
    ("bool_or", pa.bool_(), {}, [(INS, False), (INS, None), (INS, True)], True),
    ("collect", pa.list_(pa.int32()), {}, [(INS, [1, 2]), (INS, None), (INS, [2, 3])], [1, 2, 2, 3]),
    ("collect", pa.list_(pa.int32()), {"distinct": "true"}, [(INS, [1, 2]), (INS, [2, 3])], [1, 2, 3]),
    ("collect", pa.list_(pa.int32()), {}, [(INS, [1, 2, 2]), (UB, [2, 5])], [1, 2]),
    (
        "merge_map",
        pa.map_(pa.string(), pa.int32()),
        {},
        [(INS, [("a", 1), ("b", 2)]), (INS, [("b", 3), ("c", 4)])],
        [("a", 1), ("b", 3), ("c", 4)],
    ),
    (
        "merge_map",
        pa.map_(pa.string(), pa.int32()),
        {},
        [(INS, [("a", 1), ("b", 2)]), (D, [("a", 9)])],
        [("b", 2)],
    ),
    ("max", pa.int64(), {"ignore_retract": "true"}, [(INS, 3), (UB, 9), (INS, 1)], 3),
]


@pytest.mark.parametrize(("func", "t", "extra", "rows", "expected"), CASES)
def test_aggregate_functions(
    func: str, t: pa.DataType, extra: dict[str, str], rows: list[tuple[RowKind, Any]], expected: Any
) -> None:
    e = agg(func, t, **extra)
    for kind, v in rows:
        e.add(1, v, kind=kind)
    assert e.values()[1] == expected


@pytest.mark.parametrize(
    "func", ["max", "min", "first_value", "first_non_null_value", "listagg", "bool_and", "bool_or"]
)
def test_retraction_is_refused_where_paimon_refuses_it(func: str) -> None:
    t = {"listagg": pa.string(), "bool_and": pa.bool_(), "bool_or": pa.bool_()}.get(func, pa.int64())
    e = agg(func, t).add(1, None).add(1, None, kind=UB)
    with pytest.raises(LsmlakeError, match="ignore-retract"):
        e.result()


def test_integer_overflow_raises() -> None:
    e = agg("sum", pa.int8()).add(1, 100).add(1, 100)
    with pytest.raises(LsmlakeError, match="overflow"):
        e.result()
    e = agg("product", pa.int32()).add(1, 2**20).add(1, 2**20)
    with pytest.raises(LsmlakeError, match="overflow"):
        e.result()


def test_decimal_sum_overflow_gives_null_like_paimon() -> None:
    e = agg("sum", pa.decimal128(3, 1)).add(1, Decimal("60.0")).add(1, Decimal("50.0"))
    assert e.values()[1] is None


def test_aggregation_remove_record_on_delete() -> None:
    e = Engine(
        {
            "merge-engine": "aggregation",
            "aggregation.remove-record-on-delete": "true",
            "fields.f1.aggregate-function": "sum",
        },
        2,
    )
    e.add(1, 5).add(1, 3, kind=D)
    assert e.result()[:2] == ((1, 3), D)
    e.add(1, 4)
    assert e.result()[:2] == ((1, 7), INS)


def test_default_and_sequence_field_functions() -> None:
    e = Engine(
        {
            "merge-engine": "aggregation",
            "fields.default-aggregate-function": "sum",
            "fields.f2.aggregate-function": "max",
            "sequence.field": "f3",
        },
        4,
    )
    e.add(1, 1, 5, 10).add(1, 2, 3, None)
    assert e.values() == (1, 3, 5, None)  # f3, the sequence field, keeps the last value
    assert Engine({"merge-engine": "aggregation"}, 2).add(1, 1).add(1, None).values() == (1, 1)


def test_a_single_row_passes_unchanged_through_the_reducer() -> None:
    e = agg("sum").add(1, 4, kind=D)
    assert e.result(reduce=True) == ((1, 4), D, 0)
    assert e.result(reduce=False) == ((1, -4), INS, 0)  # lookup compactions fold it


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"merge-engine": "aggregation", "fields.f1.aggregate-function": "count"}, "Paimon has no 'count'"),
        (
            {"merge-engine": "aggregation", "fields.f1.aggregate-function": "nope"},
            "unknown aggregate function",
        ),
        ({"merge-engine": "aggregation", "fields.f1.aggregate-function": "listagg"}, "VARCHAR"),
        ({"merge-engine": "aggregation", "fields.f1.aggregate-function": "bool_or"}, "BOOLEAN"),
        ({"merge-engine": "aggregation", "fields.f9.aggregate-function": "sum"}, "can not be found"),
        (
            {
                "merge-engine": "aggregation",
                "aggregation.remove-record-on-delete": "true",
                "fields.f1.ignore-retract": "true",
            },
            "conflicting",
        ),
        (
            {"merge-engine": "partial-update", "fields.f1.aggregate-function": "sum"},
            "Must use sequence group",
        ),
        ({"merge-engine": "partial-update", "fields.f2.sequence-group": "f0"}, "primary key"),
        (
            {
                "merge-engine": "partial-update",
                "fields.f2.sequence-group": "f1",
                "fields.f0.sequence-group": "f1",
            },
            "primary key",
        ),
        (
            {
                "merge-engine": "partial-update",
                "fields.f2.sequence-group": "f1",
                "fields.f3.sequence-group": "f1",
            },
            "repeatedly",
        ),
        (
            {
                "merge-engine": "partial-update",
                "ignore-delete": "true",
                "partial-update.remove-record-on-delete": "true",
            },
            "conflicting",
        ),
        (
            {
                "merge-engine": "partial-update",
                "fields.f2.sequence-group": "f1",
                "partial-update.remove-record-on-delete": "true",
            },
            "conflicting",
        ),
        (
            {
                "merge-engine": "partial-update",
                "fields.f2.sequence-group": "f1",
                "partial-update.remove-record-on-sequence-group": "f3",
            },
            "must be part of sequence groups",
        ),
        ({"sequence.field": "f9"}, "can not be found"),
        ({"sequence.field": "f1,f1"}, "repeatedly"),
        (
            {"merge-engine": "aggregation", "sequence.field": "f1", "fields.f1.aggregate-function": "sum"},
            "Should not define aggregation on sequence field",
        ),
        ({"rowkind.field": "f9"}, "can not be found"),
    ],
)
def test_engine_options_paimon_rejects(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        Engine(options, 4)


def test_merge_function_for_needs_the_schema_for_computing_engines() -> None:
    with pytest.raises(ValueError, match="schema"):
        merge_function_for(CoreOptions.of({"merge-engine": "aggregation"}, primary_key_table=True))
