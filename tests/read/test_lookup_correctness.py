"""Lookups that must equal a filtered read: timestamp keys and partitions, renamed keys, time travel across
schema changes, keys moved across partitions, and a table dropped and created again under its name."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.schema_change import add_column, drop_column, rename_column


def _catalog(tmp_path: Path) -> lsmlake.Catalog:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat


def _sorted(rows: pa.Table, names: list[str]) -> list[dict[str, object]]:
    return sorted(rows.select(names).to_pylist(), key=str)


@pytest.mark.parametrize("unit", ["ms", "us"])
@pytest.mark.parametrize("tz", [None, "UTC"])
def test_timestamp_keys(tmp_path: Path, unit: str, tz: str | None) -> None:
    ts = pa.timestamp(unit, tz=tz)
    schema = pa.schema([("k", ts), ("v", pa.int32())])
    t = _catalog(tmp_path).create_table("db.t", schema=schema, primary_key=["k"], options={"bucket": "2"})
    base = datetime.datetime(2024, 1, 1, 1, 2, 3, 4000, tzinfo=datetime.timezone.utc if tz else None)
    stamps = [base + datetime.timedelta(hours=h) for h in range(6)]
    t.write(pa.table({"k": pa.array(stamps, ts), "v": pa.array(range(6), pa.int32())}))
    t.write(pa.table({"k": pa.array(stamps[::2], ts), "v": pa.array([-1, -2, -3], pa.int32())}))
    asked = [*stamps[1:5], base - datetime.timedelta(days=1), base + datetime.timedelta(days=1)]
    got = t.lookup(pa.table({"k": pa.array(asked, ts)}))
    expected = t.read(filter=pa.compute.field("k").isin(pa.array(asked, ts)))
    assert got.num_rows == 4
    assert _sorted(got, schema.names) == _sorted(expected, schema.names)
    assert t.lookup_one(stamps[2]) == {"k": stamps[2], "v": -2}


def test_timestamp_partition(tmp_path: Path) -> None:
    ts = pa.timestamp("us")
    schema = pa.schema([("p", ts), ("id", pa.int64()), ("v", pa.int32())])
    t = _catalog(tmp_path).create_table(
        "db.t", schema=schema, primary_key=["p", "id"], partition_keys=["p"], options={"bucket": "2"}
    )
    day = datetime.datetime(2024, 1, 1, 3)
    t.write(pa.table({"p": pa.array([day] * 3, ts), "id": pa.array([1, 2, 3], pa.int64()), "v": [5, 6, 7]}))
    assert t.lookup_one({"p": day, "id": 2}) == {"p": day, "id": 2, "v": 6}
    assert t.lookup([{"p": day, "id": 3}, {"p": day, "id": 9}]).to_pylist() == [{"p": day, "id": 3, "v": 7}]


def test_a_renamed_key_column_after_lookups_warmed_the_caches(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int32())])
    t = _catalog(tmp_path).create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": pa.array(range(100), pa.int64()), "v": pa.array(range(100), pa.int32())}))
    assert t.lookup(list(range(50))).num_rows == 50  # whole-file key columns cached
    assert t.lookup_one(3) == {"id": 3, "v": 3}  # key blocks cached
    t = t.alter(rename_column("id", "key"))
    assert t.lookup(list(range(40))).to_pylist() == t.read(filter="key < 40").sort_by("key").to_pylist()
    assert t.lookup_one(3) == {"key": 3, "v": 3}
    t.write(pa.table({"key": pa.array([3], pa.int64()), "v": pa.array([-3], pa.int32())}))
    t.compact(full=True)  # compaction's key reads share the cache
    assert t.lookup_one(3) == {"key": 3, "v": -3}


def test_time_travel_reads_the_snapshot_under_its_own_schema(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int32())])
    t = _catalog(tmp_path).create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([10, 20], pa.int32())}))
    t = t.alter(drop_column("v"))
    t = t.alter(add_column("v", "INT"))  # a new column under the old name: snapshot 1 knew the other one
    t.write(pa.table({"id": pa.array([1, 3], pa.int64()), "v": pa.array([11, 30], pa.int32())}))
    old = t.read(snapshot_id=1, filter="id = 1 OR id = 2")
    assert old.sort_by("id").to_pylist() == [{"id": 1, "v": 10}, {"id": 2, "v": 20}]
    assert t.lookup([1, 2], snapshot_id=1).to_pylist() == old.sort_by("id").to_pylist()
    assert t.lookup_one(2, snapshot_id=1) == {"id": 2, "v": 20}
    assert (
        t.with_options({"scan.snapshot-id": "1"}).lookup([1, 2]).to_pylist() == old.sort_by("id").to_pylist()
    )
    t.create_tag("first", 1)
    assert t.with_options({"scan.tag-name": "first"}).lookup([2]).to_pylist() == [{"id": 2, "v": 20}]
    assert t.lookup([1, 2, 3]).to_pylist() == [{"id": 1, "v": 11}, {"id": 2, "v": None}, {"id": 3, "v": 30}]


def test_keys_moved_across_partitions_are_not_merged_with_their_old_partition(tmp_path: Path) -> None:
    schema = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    t = _catalog(tmp_path).create_table(
        "db.t",
        schema=schema,
        primary_key=["id"],
        partition_keys=["p"],
        options={"bucket": "-1", "write-only": "true"},
    )

    def rows(p: str, ids: list[int], v: int) -> pa.Table:
        return pa.table({"p": [p] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=schema)

    for v in (1, 2, 3):  # partition a's bucket: sequence numbers up to 8, then its deletes above them
        t.write(rows("a", [1, 2, 3], v))
    t.write(rows("b", [1], 4))  # moves key 1 to b (a gets its delete)
    t.write(rows("b", [1, 2], 5))  # b's bucket: sequence numbers 0..2, overlapping runs
    expected = t.read(filter="id IN (1, 2, 3)")
    assert _sorted(expected, schema.names) == [
        {"p": "a", "id": 3, "v": 3},
        {"p": "b", "id": 1, "v": 5},
        {"p": "b", "id": 2, "v": 5},
    ]
    assert _sorted(t.lookup([1, 2, 3]), schema.names) == _sorted(expected, schema.names)
    assert t.lookup_one(1) == {"id": 1, "p": "b", "v": 5}


def test_a_table_dropped_and_created_again_is_looked_up_under_its_new_schema(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    first = pa.schema([("id", pa.int64()), ("v", pa.int32())])
    t = cat.create_table("db.t", schema=first, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([5], pa.int32())}))
    assert t.lookup_one(1) == {"id": 1, "v": 5}
    cat.drop_table("db.t")
    second = pa.schema([("id", pa.int64()), ("v", pa.string())])  # same names and schema id, v retyped
    t = cat.create_table("db.t", schema=second, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]}))
    got = t.lookup([1])
    assert got.schema.field("v").type == pa.string()
    assert got.to_pylist() == [{"id": 1, "v": "x"}]


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
def test_floating_point_keys_with_nan_and_signed_zero(tmp_path: Path, typ: pa.DataType) -> None:
    schema = pa.schema([("k", typ), ("v", pa.int32())])
    t = _catalog(tmp_path).create_table("db.t", schema=schema, primary_key=["k"], options={"bucket": "1"})
    stored = [-0.0, 1.5, math.nan, math.inf, -7.25]
    t.write(pa.table({"k": pa.array(stored, typ), "v": pa.array(range(5), pa.int32())}))  # NaN in the range
    t.write(pa.table({"k": pa.array([2.5], typ), "v": pa.array([5], pa.int32())}))
    rows = t.read().to_pylist()

    def stored_as(k: float) -> list[dict[str, object]]:  # the same key: the same value and sign, or NaN
        same = [
            r
            for r in rows
            if (math.isnan(k) and math.isnan(r["k"])) or (r["k"] == k and str(r["k"]) == str(k))
        ]
        return same

    for k in [-0.0, 1.5, math.nan, math.inf, -7.25, 2.5, 0.0, 3.0]:
        got = t.lookup(pa.table({"k": pa.array([k], typ)})).to_pylist()
        assert str(got) == str(stored_as(k)), k
    batch = t.lookup(pa.table({"k": pa.array([math.nan, 1.5, 9.0, math.inf], typ)}))
    assert str(batch.to_pylist()) == str(stored_as(math.nan) + stored_as(1.5) + stored_as(math.inf))


def test_the_fallback_branch_answers_for_the_partitions_the_table_lacks(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    schema = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table(
        "db.t", schema=schema, primary_key=["p", "id"], partition_keys=["p"], options={"bucket": "1"}
    )
    t.create_branch("fb")
    reader = t.with_options({"scan.fallback-branch": "fb"})
    fb = cat.get_table("db.t$branch_fb")
    fb.write(pa.table({"p": ["x", "y", "y"], "id": [1, 2, 3], "v": [10, 20, 30]}, schema=schema))
    keys = [("y", 3), ("x", 1), ("y", 2), ("z", 1)]
    assert reader.lookup(keys).to_pylist() == [  # the table has no snapshot yet: all from the branch
        {"p": "y", "id": 3, "v": 30},
        {"p": "x", "id": 1, "v": 10},
        {"p": "y", "id": 2, "v": 20},
    ]
    t.write(pa.table({"p": ["x"], "id": [4], "v": [40]}, schema=schema))  # partition x is the table's now
    keys.append(("x", 4))
    expected = reader.read(filter="(p = 'x' AND id IN (1, 4)) OR (p = 'y' AND id IN (2, 3))")
    assert sorted(expected.to_pylist(), key=str) == sorted(reader.lookup(keys).to_pylist(), key=str)
    assert reader.lookup(keys, columns=["v"]).to_pylist() == [
        {"p": "y", "id": 3, "v": 30},
        {"p": "y", "id": 2, "v": 20},
        {"p": "x", "id": 4, "v": 40},
    ]
    assert reader.lookup_one({"p": "x", "id": 1}) is None  # the table's partition x hides the branch's
