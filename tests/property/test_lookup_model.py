"""Random writes, deletes and compactions on every merge engine: ``lookup`` equals a filtered read."""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int32()), ("s", pa.string()), ("v", pa.int64())])
ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "deduplicate-sequence-field": {"sequence.field": "v"},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "fields.s.aggregate-function": "max",
        "aggregation.remove-record-on-delete": "true",
    },
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
}
# (primary key, partition keys): one integer key column (binary search), or a composite key (join); a
# key without the partition column is a cross-partition table (dynamic buckets, keys move partitions)
LAYOUTS = [(["k"], []), (["p", "k"], ["p"]), (["k", "s"], []), (["k"], ["p"])]
KEYS = st.integers(0, 30)
PARTS = st.sampled_from(["a", "b"])
ROWS = st.lists(
    st.tuples(PARTS, KEYS, st.one_of(st.none(), st.sampled_from(["x", "y"])), st.integers(-5, 5)),
    min_size=1,
    max_size=20,
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), ROWS),
        st.tuples(st.just("delete"), st.lists(st.tuples(PARTS, KEYS), min_size=1, max_size=5)),
        st.tuples(st.just("compact"), st.booleans()),
    ),
    min_size=1,
    max_size=10,
)


def _rows(rows: list[tuple[str, int, str | None, int]], layout: list[str]) -> pa.Table:
    if "s" in layout:  # s is part of the key: never null
        rows = [(p, k, s or "x", v) for p, k, s, v in rows]
    return pa.table(
        {
            "p": [r[0] for r in rows],
            "k": [r[1] for r in rows],
            "s": [r[2] for r in rows],
            "v": [r[3] for r in rows],
        },
        schema=SCHEMA,
    )


def _key_filter(keys: list[dict[str, Any]]) -> str:
    def literal(v: Any) -> str:
        return f"'{v}'" if isinstance(v, str) else str(v)

    return " OR ".join("(" + " AND ".join(f"{c} = {literal(v)}" for c, v in k.items()) + ")" for k in keys)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=OPS,
    engine=st.sampled_from(sorted(ENGINES)),
    layout=st.sampled_from(LAYOUTS),
    dv=st.booleans(),
    write_only=st.booleans(),
    asked=st.lists(st.tuples(PARTS, KEYS, st.sampled_from(["x", "y"])), min_size=1, max_size=24),
)
def test_lookup_equals_filtered_read(
    ops: list[Any],
    engine: str,
    layout: tuple[list[str], list[str]],
    dv: bool,
    write_only: bool,
    asked: list[tuple[str, int, str]],
) -> None:
    primary_key, partition_keys = layout
    with tempfile.TemporaryDirectory() as wh:
        cat = lsmlake.Catalog(wh)
        cat.create_database("db")
        options = {
            "bucket": "-1" if set(partition_keys) - set(primary_key) else "2",
            "deletion-vectors.enabled": str(dv and engine != "first-row").lower(),  # first-row refuses DV
            "num-sorted-run.compaction-trigger": "3",
            "write-only": str(write_only).lower(),  # level-0 files stay until an explicit compaction
            **ENGINES[engine],
        }
        t = cat.create_table(
            "db.t", schema=SCHEMA, primary_key=primary_key, partition_keys=partition_keys, options=options
        )
        other = cat.get_table("db.t")  # another handle: the commits below are not its own
        for number, (op, arg) in enumerate(ops):
            if op == "write":
                t.write(_rows(arg, primary_key))
            elif op == "delete":
                keys = _rows([(p, k, "x", 0) for p, k in arg], primary_key)
                t.delete(keys.select(primary_key))
            else:
                t.compact(full=arg)
            if primary_key == ["k"]:  # the lean single-key path's cached state follows each commit
                k = asked[number % len(asked)][1]
                assert other.lookup([k]).to_pylist() == other.read(filter=f"k = {k}").to_pylist()
        names = {"p": 0, "k": 1, "s": 2}
        keys = [{c: a[names[c]] for c in primary_key} for a in asked]
        expected = t.read(filter=_key_filter(keys))
        got = t.lookup(keys)
        assert got.column_names[: len(primary_key)] == primary_key
        assert got.schema == expected.select(got.column_names).schema
        ordered = sorted(expected.select(got.column_names).to_pylist(), key=str)
        assert sorted(got.to_pylist(), key=str) == ordered
        # one row per distinct key found, in the order the keys were first asked for
        found = [tuple(r[c] for c in primary_key) for r in got.to_pylist()]
        firsts = list(dict.fromkeys(tuple(k.values()) for k in keys))
        assert found == [k for k in firsts if k in set(found)]
        one = t.lookup_one(keys[0])
        expected_one = [r for r in got.to_pylist() if all(r[c] == keys[0][c] for c in primary_key)]
        assert one == (expected_one[0] if expected_one else None)
        if primary_key == ["k"]:  # one key each, as [k]: the lean single-key path where it applies
            for k in dict.fromkeys(a[1] for a in asked):
                single = t.lookup([k])
                assert single.schema == got.schema
                assert single.to_pylist() == [r for r in ordered if r["k"] == k]
