"""Time travel from Python and SQL by snapshot id, tag and time (each snapshot read with its own
schema); maintenance as Table methods."""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.schema_change import add_column, drop_column, rename_column, update_column_type
from lsmlake.sql import execute

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def test_read_by_id_tag_and_time(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    first = t.write(pa.table({"k": [1], "v": [1]}, schema=SCHEMA))
    assert first is not None
    t.create_tag("v1")
    time.sleep(0.01)
    middle = int(time.time() * 1000)
    time.sleep(0.01)
    t.write(pa.table({"k": [1, 2], "v": [10, 2]}, schema=SCHEMA))
    assert t.read(tag="v1").to_pylist() == [{"k": 1, "v": 1}]
    assert t.read(as_of_millis=middle).to_pylist() == [{"k": 1, "v": 1}]
    assert t.read(snapshot_id=first).to_pylist() == [{"k": 1, "v": 1}]
    assert t.read().num_rows == 2
    with pytest.raises(NoSuchSnapshotError):
        t.read(as_of_millis=0)
    with pytest.raises(ValueError, match="at most one"):
        t.read(tag="v1", snapshot_id=1)
    assert [tag.name for tag in t.list_tags()] == ["v1"]
    t.rollback_to(tag="v1")
    assert t.read().to_pylist() == [{"k": 1, "v": 1}]
    t.delete_tag("v1")
    assert t.list_tags() == []
    assert t.remove_orphan_files(dry_run=True) == []


WIDE = pa.schema([("k", pa.int64()), ("v", pa.int32()), ("w", pa.string())])
OLD_ROWS = [{"k": 1, "v": 10, "w": "a"}, {"k": 2, "v": 20, "w": "b"}]


def _evolved(catalog: lsmlake.Catalog) -> tuple[lsmlake.Table, int]:
    """Snapshot 1 under schema 0 (k, v INT, w), then v renamed to vv and widened to BIGINT, w dropped,
    x added, and a second write under the new schema. Returns the table and snapshot 1's commit time."""
    t = catalog.create_table("db.t", schema=WIDE, primary_key=["k"], options={"bucket": "1"})
    t.write(pa.table({"k": [1, 2], "v": [10, 20], "w": ["a", "b"]}, schema=WIDE))
    t.create_tag("t1")
    millis = t.snapshot(1).time_millis
    t = t.alter(
        rename_column("v", "vv"),
        drop_column("w"),
        add_column("x", "STRING"),
        update_column_type("vv", "BIGINT"),
    )
    time.sleep(0.01)
    t.write(pa.table({"k": [3], "vv": [30], "x": ["c"]}))
    return t, millis


def test_past_snapshots_read_with_their_own_schema(catalog: lsmlake.Catalog) -> None:
    t, millis = _evolved(catalog)
    reads = {
        "snapshot_id": t.read(snapshot_id=1),
        "tag": t.read(tag="t1"),
        "as_of_millis": t.read(as_of_millis=millis),
        "scan.snapshot-id": t.with_options({"scan.snapshot-id": "1"}).read(),
        "scan.tag-name": t.with_options({"scan.tag-name": "t1"}).read(),
        "scan.timestamp-millis": t.with_options({"scan.timestamp-millis": str(millis)}).read(),
        "scan.version": t.with_options({"scan.version": "1"}).read(),
        "scan": t.scan(snapshot_id=1).to_arrow(),
    }
    for how, got in reads.items():
        assert got.schema.names == ["k", "v", "w"], how
        assert got.schema.field("v").type == pa.int32(), how
        assert got.sort_by("k").to_pylist() == OLD_ROWS, how
    assert t.scan(tag="t1").schema.names == ["k", "v", "w"]
    # the user's filter and columns use the old snapshot's names
    assert t.read(snapshot_id=1, filter="v > 10", columns=["k", "w"]).to_pylist() == [{"k": 2, "w": "b"}]
    with pytest.raises(ValueError, match="vv"):
        t.read(snapshot_id=1, columns=["vv"])
    # the latest read stays on the current schema
    latest = t.read().sort_by("k")
    assert latest.schema.names == ["k", "vv", "x"] and latest.schema.field("vv").type == pa.int64()
    assert latest.to_pylist() == [
        {"k": 1, "vv": 10, "x": None},
        {"k": 2, "vv": 20, "x": None},
        {"k": 3, "vv": 30, "x": "c"},
    ]
    assert "snapshot 1" in t.explain(snapshot_id=1)


def test_sql_time_travel_reads_the_old_schema(catalog: lsmlake.Catalog) -> None:
    _, millis = _evolved(catalog)
    stamp = dt.datetime.fromtimestamp(millis / 1000).isoformat(sep=" ")
    for query in (
        "SELECT * FROM t VERSION AS OF 1 ORDER BY k",
        "SELECT * FROM t VERSION AS OF 't1' ORDER BY k",
        f"SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '{stamp}' ORDER BY k",
        "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1') */ ORDER BY k",
        "SELECT * FROM t /*+ OPTIONS('scan.tag-name'='t1') */ ORDER BY k",
    ):
        result = execute(catalog, query, database="db")[-1]
        assert result.rows == OLD_ROWS, query
    filtered = execute(catalog, "SELECT w FROM t VERSION AS OF 1 WHERE v = 20", database="db")[-1]
    assert filtered.rows == [{"w": "b"}]
    now = execute(catalog, "SELECT * FROM t ORDER BY k", database="db")[-1].rows
    assert list(now[0]) == ["k", "vv", "x"]


def test_incremental_reads_use_the_current_schema(catalog: lsmlake.Catalog) -> None:
    t, _ = _evolved(catalog)
    t.create_tag("t2")
    for options in ({"incremental-between": "0,2"}, {"incremental-between": "t1,t2"}):
        got = t.with_options(options).read().sort_by("k")
        assert got.schema.names == ["k", "vv", "x"], options
        assert got.column("k").to_pylist()[-1] == 3, options
