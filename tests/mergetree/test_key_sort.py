"""The radix and run-merging key sorts agree with a plain stable sort, extremes included; the dense
newest-of-key agrees with a sort."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lsmlake.mergetree.key_sort import newest_of_each_key, radix_argsort, stable_key_order

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(INT64, max_size=300) | st.lists(st.integers(-5, 5), max_size=300))
def test_radix_argsort_is_a_stable_sort(values: list[int]) -> None:
    keys = np.array(values, dtype=np.int64)
    assert radix_argsort(keys).tolist() == np.argsort(keys, kind="stable").tolist()


def test_radix_on_narrow_types_and_full_range() -> None:
    rng = np.random.default_rng(3)
    for dtype in (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dtype)
        keys = rng.integers(info.min, info.max, 20_000, dtype=dtype, endpoint=True)
        keys[:2] = [info.min, info.max]
        assert np.array_equal(radix_argsort(keys), np.argsort(keys, kind="stable"))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), max_size=60), min_size=1, max_size=5), st.booleans())
def test_stable_key_order_of_sorted_runs(runs: list[list[int]], as_runs: bool) -> None:
    """Concatenated key-sorted runs come out sorted by key, earlier runs first among equal keys."""
    keys = np.concatenate([np.sort(np.array(r, dtype=np.int64)) for r in runs])
    run_of = np.concatenate([np.full(len(r), i) for i, r in enumerate(runs)])
    table = pa.table({"k": keys, "run": run_of})
    order = stable_key_order(table, ["k"], sorted_runs=as_runs)
    assert np.array_equal(order, np.lexsort((np.arange(len(keys)), keys)))
    assert sorted(zip(keys[order], run_of[order], strict=True)) == list(
        zip(keys[order], run_of[order], strict=True)
    )


def test_stable_key_order_falls_back_for_composite_and_null_keys() -> None:
    table = pa.table({"a": [2, 1, 2, 1] * 2000, "b": ["y", "x", "x", "y"] * 2000})
    order = stable_key_order(table, ["a", "b"])
    got = table.take(pa.array(order))
    assert got.column("a").to_pylist()[:2] == [1, 1] and got.column("b").to_pylist()[0] == "x"
    with_nulls = pa.table({"k": pa.array([3, None, 1] * 3000, pa.int64())})
    assert with_nulls.take(pa.array(stable_key_order(with_nulls, ["k"]))).column("k")[0].as_py() is None


def _newest_by_sort(keys: np.ndarray) -> list[int]:
    order = np.argsort(keys, kind="stable")
    last = np.ones(len(order), dtype=bool)
    last[:-1] = keys[order][1:] != keys[order][:-1]
    return order[last].tolist()


RUN = st.lists(st.integers(-40, 40), unique=True, max_size=30).map(sorted)


@settings(max_examples=300, deadline=None)
@given(st.lists(RUN, min_size=1, max_size=5))
def test_newest_of_each_key_matches_the_last_row_of_a_stable_sort(runs: list[list[int]]) -> None:
    keys = np.array([k for run in runs for k in run], dtype=np.int64)
    got = newest_of_each_key(keys, [len(r) for r in runs], min_rows=1)
    if len(keys) == 0:
        assert got is None
        return
    if got is not None:
        assert got.tolist() == _newest_by_sort(keys)
    else:  # only a key span too wide for the table may refuse strictly increasing runs
        assert int(keys.max()) - int(keys.min()) >= 8 * len(keys)


def test_newest_of_each_key_refuses_what_a_table_cannot_decide() -> None:
    def newest(keys: list[int], lengths: list[int]) -> list[int] | None:
        got = newest_of_each_key(np.array(keys, dtype=np.int64), lengths, min_rows=1)
        return None if got is None else got.tolist()

    assert newest([1, 1, 2], [3]) is None  # a run repeats a key
    assert newest([2, 1], [2]) is None  # a run is not increasing
    assert newest([0, 10**9], [2]) is None  # span too wide for a table
    assert newest([1, 2, 3], [2]) is None  # lengths do not cover the rows
    assert newest([-(2**63), 2**63 - 1], [1, 1]) is None
    assert newest([1, 2, 2, 3], [2, 2]) == [0, 2, 3]
    # narrow key types: shifting by the minimum must not wrap
    runs16 = [np.arange(-30_000, 30_000, 3, dtype=np.int16), np.arange(-30_000, 30_000, 7, dtype=np.int16)]
    keys16 = np.concatenate(runs16)
    got16 = newest_of_each_key(keys16, [len(r) for r in runs16])
    assert got16 is not None and got16.tolist() == _newest_by_sort(keys16.astype(np.int64))
    # by default a section this small is sorted instead: the table costs more than it saves
    assert newest_of_each_key(np.array([1, 2, 2, 3]), [2, 2]) is None
    big = np.arange(10_000, dtype=np.int64)
    assert newest_of_each_key(np.concatenate([big, big[::2]]), [10_000, 5_000]) is not None
