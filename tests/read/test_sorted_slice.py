"""Key ranges over key-sorted rows by binary search agree with evaluating the filter row by row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core.types import DataField, DataType
from lsmlake.expr import And, Compare, Or, Predicate, parse_filter
from lsmlake.read.sorted_slice import sorted_bounds

FIELDS = [DataField(0, "k", DataType("BIGINT"))]
OPS = ("=", "<", "<=", ">", ">=")


INT64 = pa.int64()


def _table(keys: list[int], chunks: int = 1, arrow_type: pa.DataType = INT64) -> pa.Table:
    pieces = np.array_split(np.array(sorted(keys), dtype=np.int64), max(chunks, 1))
    column = pa.chunked_array([pa.array(p, arrow_type) for p in pieces], arrow_type)
    return pa.table({"k": column, "v": pa.array([str(k) for k in sorted(keys)])})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-50, 50), max_size=60),
    st.lists(st.tuples(st.sampled_from(OPS), st.integers(-60, 60)), min_size=1, max_size=3),
    st.integers(1, 4),
    st.sampled_from([pa.int8(), pa.int32(), pa.int64()]),
)
def test_the_slice_is_what_the_filter_keeps(
    keys: list[int], leaves: list[tuple[str, int]], chunks: int, arrow_type: pa.DataType
) -> None:
    table = _table(keys, chunks, arrow_type)
    compares = [Compare("k", op, lit) for op, lit in leaves]
    predicate: Predicate = compares[0] if len(compares) == 1 else And(tuple(compares))
    bounds = sorted_bounds(table, predicate, "k")
    assert bounds is not None
    start, stop = bounds
    expected = table.filter(predicate.mask(table))
    assert table.slice(start, stop - start).to_pylist() == expected.to_pylist()


def test_what_it_cannot_slice_it_leaves_to_the_filter() -> None:
    table = _table([1, 2, 3, 5, 8])
    key_range = parse_filter("k BETWEEN 2 AND 5", FIELDS)
    assert sorted_bounds(table, key_range, "k") == (1, 4)
    unsorted = table.take(pa.array([1, 0, 2, 3, 4]))
    assert sorted_bounds(unsorted, key_range, "k") is None
    assert sorted_bounds(table, Compare("v", "=", "2"), "k") is None  # another column
    assert sorted_bounds(table, Or((Compare("k", "<", 2), Compare("k", ">", 5))), "k") is None
    assert sorted_bounds(table, Compare("k", "!=", 2), "k") is None
    assert sorted_bounds(table, Compare("k", "<", 2**70), "k") is None  # beyond int64
    assert sorted_bounds(table, Compare("k", "<", 2.5), "k") is None
    with_null = pa.table({"k": pa.array([1, None, 3])})
    assert sorted_bounds(with_null, Compare("k", ">", 1), "k") is None
    assert sorted_bounds(table.select(["v"]), key_range, "k") is None


def test_key_range_reads_of_deletion_vector_and_merge_tables(tmp_path: Path) -> None:
    """Slices line up with deletion vectors (raw reads) and with overlapping level-0 files (merges)."""
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    rng = np.random.default_rng(4)
    n = 20_000
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    for name, options in {"dv": {"deletion-vectors.enabled": "true"}, "mor": {"write-only": "true"}}.items():
        t = cat.create_table(
            f"db.{name}", schema=schema, primary_key=["id"], options={"bucket": "2", **options}
        )
        t.write(pa.table({"id": np.arange(n), "v": np.zeros(n, dtype=np.int64)}, schema=schema))
        for round_ in range(1, 4):
            keys = rng.choice(n, n // 5, replace=False)
            t.write(pa.table({"id": keys, "v": np.full(len(keys), round_)}, schema=schema))
        t.delete(pa.table({"id": np.arange(5_000, 5_100)}, schema=schema.remove(1)))
        full = t.read()
        for text in (
            "id BETWEEN 4990 AND 5200",
            "id < 7",
            "id = 12345",
            "id > 19990",
            "id >= 5050 AND id < 5060",
        ):
            got = t.read(filter=text).sort_by("id")
            mask = parse_filter(text, t.schema.fields).mask(full)
            assert got.to_pylist() == full.filter(mask).sort_by("id").to_pylist(), (name, text)
        assert pc.max(t.read(filter="id < 5100").column("id")).as_py() == 4999


def test_nested_conjunctions_slice_too() -> None:
    table = _table(list(range(0, 100, 3)))
    nested = And((And((Compare("k", ">=", 10), Compare("k", "<", 40))), Compare("k", "!=", 1)))
    assert sorted_bounds(table, nested, "k") is None  # != is not a range
    nested = And((And((Compare("k", ">=", 10), Compare("k", "<", 40))), Compare("k", "<=", 30)))
    bounds = sorted_bounds(table, nested, "k")
    assert bounds is not None
    assert table.slice(bounds[0], bounds[1] - bounds[0]).column("k").to_pylist() == list(range(12, 31, 3))
