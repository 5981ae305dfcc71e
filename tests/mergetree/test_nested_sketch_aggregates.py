"""nested_update, nested_partial_update, merge_map_with_keytime, hll_sketch, theta_sketch and rbm32 as
Paimon defines them: one key's records merged by the aggregation engine, and the options each checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from lsmlake.core.options import CoreOptions
from lsmlake.core.types import from_arrow_type
from lsmlake.errors import InvalidOptionError, LsmlakeError
from lsmlake.mergetree.engines import roaring64
from lsmlake.mergetree.engines.aggregation import Aggregation
from lsmlake.mergetree.engines.config import engine_config
from lsmlake.mergetree.engines.nested import NestedUpdate
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, RowKind

try:  # a declared dependency; only the sketch tests need it
    import datasketches as ds
except ImportError:  # pragma: no cover
    ds = None
NEEDS_DATASKETCHES = pytest.mark.skipif(ds is None, reason="datasketches is not installed")

ELEMENT = pa.struct([("id", pa.int32()), ("v", pa.string()), ("s", pa.int32())])
ENTRY = pa.struct([("x", pa.string()), ("ts", pa.string())])
INS, UB, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.DELETE


def merge(
    options: dict[str, str], dtype: pa.DataType, values: list[Any], kinds: list[RowKind] | None = None
) -> Any:
    """The merged value of column ``v`` (function from ``options``) over one key's records, oldest first."""
    schema = pa.schema([("k", pa.int32()), ("v", dtype)])
    fields = [(f.name, from_arrow_type(f.type, f.name != "k")) for f in schema]
    cfg = engine_config(
        fields, ["k"], CoreOptions.of({"merge-engine": "aggregation", **options}, primary_key_table=True)
    )
    n = len(values)
    rows = pa.table(
        {
            "k": pa.array([1] * n, pa.int32()),
            "v": pa.array(values, dtype),
            SEQUENCE_NUMBER: pa.array(range(n), pa.int64()),
            VALUE_KIND: pa.array([int(k) for k in kinds or [INS] * n], pa.int8()),
        }
    )
    out = Aggregation(cfg).merge(rows, ["k"], reduce_singles=False).to_pylist()
    assert len(out) == 1
    return out[0]["v"]


def el(i: int | None, v: str | None = None, s: int | None = None) -> dict[str, Any]:
    return {"id": i, "v": v, "s": s}


NESTED = {"fields.v.aggregate-function": "nested_update", "fields.v.nested-key": "id"}


def test_nested_update_replaces_by_nested_key_and_keeps_the_rest() -> None:
    out = merge(NESTED, pa.list_(ELEMENT), [[el(1, "a"), el(2, "b")], None, [el(1, "c"), None, el(3, "d")]])
    assert out == [el(1, "c"), el(2, "b"), el(3, "d")]
    # the first record is folded too: duplicate nested keys in it collapse to the last
    assert merge(NESTED, pa.list_(ELEMENT), [[el(1, "a"), el(1, "b")]]) == [el(1, "b")]


def test_nested_update_count_limit_admits_no_new_key_past_it_but_updates_old_ones() -> None:
    limited = {**NESTED, "fields.v.count-limit": "2"}
    out = merge(limited, pa.list_(ELEMENT), [[el(1, "a"), el(2, "b"), el(3, "x")], [el(4, "y"), el(2, "c")]])
    assert out == [el(1, "a"), el(2, "c")]
    appended = {"fields.v.aggregate-function": "nested_update", "fields.v.count-limit": "3"}
    out = merge(appended, pa.list_(ELEMENT), [[el(1, "a"), None, el(1, "a")], [el(2), el(3)], [el(4)]])
    assert out == [el(1, "a"), el(1, "a"), el(2)]
    # without a limit and a key, rows are appended (nulls dropped)
    plain = {"fields.v.aggregate-function": "nested_update"}
    assert merge(plain, pa.list_(ELEMENT), [[el(1), None], [el(1)]]) == [el(1), el(1)]


def test_nested_sequence_field_keeps_the_newest_element() -> None:
    seq = {**NESTED, "fields.v.nested-sequence-field": "s"}
    out = merge(
        seq, pa.list_(ELEMENT), [[el(1, "a", 5), el(2, "b", None)], [el(1, "old", 4), el(2, "new", 0)]]
    )
    assert out == [el(1, "a", 5), el(2, "new", 0)]  # nulls sort first; an equal sequence replaces
    assert merge(seq, pa.list_(ELEMENT), [[el(1, "a", 5)], [el(1, "same", 5)]]) == [el(1, "same", 5)]


def test_nested_key_null_strategy() -> None:
    values = [[el(None, "a"), el(1, "b")], [el(None, "c")]]
    assert merge(NESTED, pa.list_(ELEMENT), values) == [el(None, "c"), el(1, "b")]
    ignore = {**NESTED, "fields.v.nested-key-null-strategy": "ignore"}
    assert merge(ignore, pa.list_(ELEMENT), values) == [el(1, "b")]
    error = {**NESTED, "fields.v.nested-key-null-strategy": "error"}
    with pytest.raises(LsmlakeError, match="null"):
        merge(error, pa.list_(ELEMENT), values)


def test_nested_update_retracts_by_key_or_by_equal_row() -> None:
    out = merge(NESTED, pa.list_(ELEMENT), [[el(1, "a"), el(2, "b")], [el(1, "zzz")]], [INS, UB])
    assert out == [el(2, "b")]
    plain = {"fields.v.aggregate-function": "nested_update"}
    out = merge(
        plain, pa.list_(ELEMENT), [[el(1, "a"), el(2, "b"), el(1, "a")], [el(1, "a"), el(2, "x")]], [INS, D]
    )
    assert out == [el(2, "b")]


def test_nested_partial_update_merges_non_null_fields_per_key() -> None:
    opts = {"fields.v.aggregate-function": "nested_partial_update", "fields.v.nested-key": "id"}
    out = merge(
        opts, pa.list_(ELEMENT), [[el(1, "a", None), el(2, None, 2)], [el(1, None, 7), el(2, "b", None)]]
    )
    assert out == [el(1, "a", 7), el(2, "b", 2)]
    with pytest.raises(LsmlakeError, match="retraction"):
        merge(opts, pa.list_(ELEMENT), [[el(1, "a")], [el(1, "a")]], [INS, UB])


MAP = pa.map_(pa.string(), ENTRY)
KEYTIME = {"fields.v.aggregate-function": "merge_map_with_keytime"}


def test_merge_map_with_keytime_keeps_the_latest_time_per_map_key() -> None:
    first = [("a", {"x": "1", "ts": "2024-02"}), ("b", {"x": "1", "ts": None}), ("c", {"x": "1", "ts": "1"})]
    second = [
        ("a", {"x": "older", "ts": "2024-01"}),
        ("b", {"x": "2", "ts": "0"}),  # the accumulated time is null: replaced
        ("c", None),  # a null value removes the key
        ("d", {"x": "skipped", "ts": None}),  # a null time is skipped
        ("e", {"x": "2", "ts": "9"}),
    ]
    out = merge(KEYTIME, MAP, [first, second])
    assert out == [
        ("a", {"x": "1", "ts": "2024-02"}),
        ("b", {"x": "2", "ts": "0"}),
        ("e", {"x": "2", "ts": "9"}),
    ]
    # a later time replaces; an equal one does not
    out = merge(
        KEYTIME,
        MAP,
        [[("a", {"x": "1", "ts": "5"})], [("a", {"x": "2", "ts": "5"})], [("a", {"x": "3", "ts": "6"})]],
    )
    assert out == [("a", {"x": "3", "ts": "6"})]


def test_merge_map_with_keytime_ts_field_option() -> None:
    swapped = pa.map_(pa.string(), pa.struct([("ts", pa.string()), ("x", pa.string())]))
    opts = {**KEYTIME, "fields.v.ts-field": "ts"}
    out = merge(opts, swapped, [[("a", {"ts": "2", "x": "new"})], [("a", {"ts": "1", "x": "old"})]])
    assert out == [("a", {"ts": "2", "x": "new"})]
    # by default the last field is the time: here x, so "old" > "new"
    out = merge(KEYTIME, swapped, [[("a", {"ts": "2", "x": "new"})], [("a", {"ts": "1", "x": "old"})]])
    assert out == [("a", {"ts": "1", "x": "old"})]


def hll(*values: int) -> bytes:
    sketch = ds.hll_sketch(12, ds.tgt_hll_type.HLL_4)
    for v in values:
        sketch.update(v)
    return bytes(sketch.serialize_compact())


def theta(*values: int) -> bytes:
    sketch = ds.update_theta_sketch()
    for v in values:
        sketch.update(v)
    return bytes(sketch.compact().serialize())


@pytest.mark.parametrize(
    ("func", "make", "estimate"),
    [
        ("hll_sketch", hll, lambda b: round(ds.hll_sketch.deserialize(b).get_estimate())),
        ("theta_sketch", theta, lambda b: round(ds.compact_theta_sketch.deserialize(b).get_estimate())),
        ("rbm32", lambda *v: bytes(BitMap(v).serialize()), lambda b: len(BitMap.deserialize(b))),
    ],
)
def test_sketches_union_and_keep_a_lone_value(func: str, make: Any, estimate: Any) -> None:
    if func != "rbm32" and ds is None:
        pytest.skip("datasketches is not installed")
    opts = {"fields.v.aggregate-function": func}
    out = merge(opts, pa.binary(), [make(1, 2, 3), None, make(3, 4), make(5)])
    assert estimate(out) == 5
    lone = make(7, 8)
    assert merge(opts, pa.binary(), [None, lone, None]) == lone
    assert merge(opts, pa.binary(), [None, None]) is None
    with pytest.raises(LsmlakeError, match="retraction"):
        merge(opts, pa.binary(), [make(1), make(1)], [INS, UB])
    ignoring = {**opts, "fields.v.ignore-retract": "true"}
    assert estimate(merge(ignoring, pa.binary(), [make(1), make(2), make(3)], [INS, UB, INS])) == 2


def test_rbm32_bytes_are_the_run_optimized_portable_format() -> None:
    out = merge(
        {"fields.v.aggregate-function": "rbm32"},
        pa.binary(),
        [bytes(BitMap(range(0, 5000)).serialize()), bytes(BitMap([70000]).serialize())],
    )
    expected = BitMap([*range(0, 5000), 70000])
    expected.run_optimize()
    assert out == bytes(expected.serialize())
    assert out[:2] == b"\x3b\x30"  # the portable format's cookie for a bitmap with run containers


@NEEDS_DATASKETCHES
def test_corrupt_sketch_names_the_field() -> None:
    with pytest.raises(LsmlakeError, match="field 'v'"):
        merge({"fields.v.aggregate-function": "hll_sketch"}, pa.binary(), [b"junk", hll(1)])


@pytest.mark.parametrize(
    ("options", "dtype", "message"),
    [
        ({"fields.v.aggregate-function": "hll_sketch"}, pa.int32(), "VARBINARY"),
        ({"fields.v.aggregate-function": "rbm32"}, pa.string(), "VARBINARY"),
        ({"fields.v.aggregate-function": "nested_update"}, pa.list_(pa.int32()), "Array<Row>"),
        ({"fields.v.aggregate-function": "nested_partial_update"}, pa.list_(ELEMENT), "nested-key"),
        ({**NESTED, "fields.v.nested-key": "nope"}, pa.list_(ELEMENT), "nope"),
        (
            {"fields.v.aggregate-function": "nested_update", "fields.v.nested-sequence-field": "s"},
            pa.list_(ELEMENT),
            "requires",
        ),
        (
            {"fields.v.aggregate-function": "nested_update", "fields.v.nested-key-null-strategy": "ignore"},
            pa.list_(ELEMENT),
            "requires",
        ),
        ({**NESTED, "fields.v.nested-key-null-strategy": "drop"}, pa.list_(ELEMENT), "drop"),
        ({**NESTED, "fields.v.count-limit": "ten"}, pa.list_(ELEMENT), "integer"),
        (KEYTIME, pa.map_(pa.string(), pa.int32()), "ROW"),
        (KEYTIME, pa.map_(pa.string(), pa.struct([("ts", pa.string())])), "at least 2"),
        ({**KEYTIME, "fields.v.ts-field": "when"}, MAP, "when"),
        (KEYTIME, pa.map_(pa.string(), pa.struct([("x", pa.string()), ("ts", pa.int64())])), "string"),
    ],
)
def test_options_paimon_rejects(options: dict[str, str], dtype: pa.DataType, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        merge(options, dtype, [None])


BIG = np.uint64(2**64 - 1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=300),
    st.lists(st.integers(0, 2**48 - 1), max_size=300),
    st.integers(0, 65535),
)
def test_roaring64_round_trips(values: list[int], highs: list[int], span: int) -> None:
    # scattered values, and many high parts (every ART node kind) with runs in their low parts
    wide = np.array(values, dtype=np.uint64)
    runs = (np.array(highs, dtype=np.uint64)[:, None] << np.uint64(16)) | np.arange(
        min(span, 40), dtype=np.uint64
    )
    v = np.concatenate([wide, runs.ravel()])
    blob = roaring64.encode(v)
    assert roaring64.decode(blob).tolist() == sorted(set(v.tolist()))


def test_roaring64_layout() -> None:
    assert roaring64.encode(np.zeros(0, np.uint64)) == b"\x00"
    # one value: the root is a leaf (6 high bytes, container slot 0), one array container of one value
    blob = roaring64.encode(np.array([(5 << 16) | 7], np.uint64))
    assert blob == bytes.fromhex(
        "01"
        "0100000000000000"
        "04"
        "0000"
        "00"
        "000000000005"
        "0000000000000000"
        "01000000"
        "fe"
        "01000000"
        "01"
        "02"
        "01000000"
        "0700"
        "0100000000000000"
        "00000000"
        "00000000"
    )
    dense = roaring64.encode(np.arange(65536, dtype=np.uint64) | (BIG << np.uint64(16)))
    assert roaring64.decode(dense).size == 65536 and len(dense) < 100  # one run container, not an 8 KB bitmap
    with pytest.raises(ValueError, match="truncated"):
        roaring64.decode(blob[:-3])


def test_rbm64_unions_and_keeps_a_lone_value() -> None:
    opts = {"fields.v.aggregate-function": "rbm64"}
    a, b = (
        roaring64.encode(np.array([1, 2**63], np.uint64)),
        roaring64.encode(np.array([2, 2**63], np.uint64)),
    )
    assert roaring64.decode(merge(opts, pa.binary(), [a, None, b])).tolist() == [1, 2, 2**63]
    assert merge(opts, pa.binary(), [None, a]) == a
    with pytest.raises(LsmlakeError, match="rbm64"):
        merge(opts, pa.binary(), [a, b"\x01\x02"])


ELEMENTS = st.lists(
    st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {
                "id": st.one_of(st.none(), st.integers(0, 4)),
                "v": st.sampled_from(["a", "b"]),
                "s": st.just(None),
            }
        ),
    ),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(
    groups=st.lists(st.lists(st.one_of(st.none(), ELEMENTS), min_size=1, max_size=5), min_size=1, max_size=6),
    keyed=st.booleans(),
    limit=st.one_of(st.none(), st.integers(0, 5)),
    strategy=st.sampled_from(["merge", "ignore"]),
)
def test_nested_update_vectorized_equals_record_by_record(
    groups: list[list[Any]], keyed: bool, limit: int | None, strategy: str
) -> None:
    options = {"fields.v.aggregate-function": "nested_update"}
    if keyed:
        options |= {"fields.v.nested-key": "id", "fields.v.nested-key-null-strategy": strategy}
    if limit is not None:
        options["fields.v.count-limit"] = str(limit)
    schema = pa.schema([("k", pa.int32()), ("v", pa.list_(ELEMENT))])
    fields = [(f.name, from_arrow_type(f.type, f.name != "k")) for f in schema]
    cfg = engine_config(
        fields, ["k"], CoreOptions.of({"merge-engine": "aggregation", **options}, primary_key_table=True)
    )
    keys = [g for g, records in enumerate(groups) for _ in records]
    values = [v for records in groups for v in records]
    rows = pa.table(
        {
            "k": pa.array(keys, pa.int32()),
            "v": pa.array(values, pa.list_(ELEMENT)),
            SEQUENCE_NUMBER: pa.array(range(len(keys)), pa.int64()),
            VALUE_KIND: pa.array([0] * len(keys), pa.int8()),
        }
    )
    merged = Aggregation(cfg).merge(rows, ["k"], reduce_singles=False).column("v").to_pylist()
    reference = NestedUpdate("v", options)
    expected = []
    for records in groups:
        acc = None
        for r in records:
            acc = reference.agg(acc, r)
        expected.append(acc)
    assert merged == expected
