"""The vectorized merge of one overlapping section: deduplicate, sequence fields, first-row, deletes."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lsmlake.errors import LsmlakeError, UnsupportedError
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from lsmlake.read.split_read import merge_rows

INS, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE


def kv(rows: list[tuple[Any, ...]]) -> pa.Table:
    """Rows of (key, value, seq field, sequence number, kind)."""
    k, v, s, seq, kind = zip(*rows, strict=True)
    return pa.table(
        {
            "k": pa.array(k, pa.int32()),
            "v": pa.array(v, pa.string()),
            "s": pa.array(s, pa.int64()),
            SEQUENCE_NUMBER: pa.array(seq, pa.int64()),
            VALUE_KIND: pa.array([int(x) for x in kind], pa.int8()),
        }
    )


def result(t: pa.Table) -> list[tuple[Any, Any]]:
    return sorted(zip(t.column("k").to_pylist(), t.column("v").to_pylist(), strict=True))


ROWS = [
    (1, "a", None, 1, INS),
    (2, "b", None, 2, INS),
    (1, "a2", None, 5, UA),
    (3, "c", None, 3, INS),
    (2, "b-", None, 6, D),
    (3, "c-", None, 4, UB),
    (3, "c2", None, 7, UA),
    (4, "d", None, 8, D),
]


def test_deduplicate_keeps_the_latest_and_drops_deletes() -> None:
    assert result(merge_rows(kv(ROWS), ["k"])) == [(1, "a2"), (3, "c2")]


def test_input_order_does_not_matter() -> None:
    assert result(merge_rows(kv(ROWS[::-1]), ["k"])) == [(1, "a2"), (3, "c2")]


def test_ignore_delete_skips_retractions() -> None:
    assert result(merge_rows(kv(ROWS), ["k"], ignore_delete=True)) == [(1, "a2"), (2, "b"), (3, "c2")]


def test_sequence_field_orders_before_the_sequence_number() -> None:
    rows = [
        (1, "new-seq-small", 1, 9, INS),
        (1, "old-seq-big", 5, 1, INS),
        (2, "x", None, 1, INS),
        (2, "y", 0, 0, INS),
    ]
    assert result(merge_rows(kv(rows), ["k"], sequence_fields=["s"])) == [(1, "old-seq-big"), (2, "y")]
    # descending order: the smallest sequence field wins; nulls still sort first (oldest)
    got = merge_rows(kv(rows), ["k"], sequence_fields=["s"], descending=True)
    assert result(got) == [(1, "new-seq-small"), (2, "y")]


def test_equal_sequence_fields_fall_back_to_the_sequence_number() -> None:
    rows = [(1, "first", 3, 1, INS), (1, "second", 3, 2, INS)]
    assert result(merge_rows(kv(rows), ["k"], sequence_fields=["s"])) == [(1, "second")]


def test_first_row_keeps_the_oldest() -> None:
    rows = [(1, "a", None, 1, INS), (1, "a2", None, 5, INS), (2, "b2", None, 7, INS), (2, "b", None, 3, INS)]
    assert result(merge_rows(kv(rows), ["k"], engine="first-row")) == [(1, "a"), (2, "b")]


def test_first_row_rejects_deletes_unless_ignored() -> None:
    rows = [(1, "a", None, 1, INS), (1, "a-", None, 5, D)]
    with pytest.raises(LsmlakeError, match="ignore-delete"):
        merge_rows(kv(rows), ["k"], engine="first-row")
    assert result(merge_rows(kv(rows), ["k"], engine="first-row", ignore_delete=True)) == [(1, "a")]


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_unsupported_engines(engine: str) -> None:
    with pytest.raises(UnsupportedError, match=engine):
        merge_rows(kv(ROWS), ["k"], engine=engine)


def test_composite_keys_with_strings() -> None:
    t = pa.table(
        {
            "a": ["x", "x", "y", "x"],
            "b": [1, 1, 1, 2],
            "v": ["1", "2", "3", "4"],
            SEQUENCE_NUMBER: pa.array([1, 2, 3, 4], pa.int64()),
            VALUE_KIND: pa.array([0, 0, 0, 0], pa.int8()),
        }
    )
    got = merge_rows(t, ["a", "b"])
    assert sorted(
        zip(
            got.column("a").to_pylist(), got.column("b").to_pylist(), got.column("v").to_pylist(), strict=True
        )
    ) == [("x", 1, "2"), ("x", 2, "4"), ("y", 1, "3")]


def test_computing_engines_merge_through_their_merge_function() -> None:
    from lsmlake.core.options import CoreOptions
    from lsmlake.core.types import DataType
    from lsmlake.mergetree.engines.aggregation import Aggregation
    from lsmlake.mergetree.engines.config import engine_config

    options = CoreOptions.of(
        {
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "listagg",
            "aggregation.remove-record-on-delete": "true",
        },
        primary_key_table=True,
    )
    fields = [("k", DataType("INT", False)), ("v", DataType("VARCHAR")), ("s", DataType("BIGINT"))]
    engine = Aggregation(engine_config(fields, ["k"], options))
    rows = [(1, "a", None, 1, INS), (2, "b", None, 2, INS), (1, "c", None, 5, UA), (2, None, None, 6, D)]
    assert result(merge_rows(kv(rows[::-1]), ["k"], merge_function=engine)) == [(1, "a,c")]
