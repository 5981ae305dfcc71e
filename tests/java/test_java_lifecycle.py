"""The table-lifecycle procedures against live Java Paimon: the same table (or two copies of it) maintained
by Java's core logic of each procedure and by lsmlake's, each side reading the other's result."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaError, JavaPaimon, arrow_rows, java_rows, lifecycle, sort_rows

import lsmlake
from lsmlake.core import clock
from lsmlake.errors import CommitConflictError, NoSuchSnapshotError
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.consumers import consumer_path, read_consumers
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.snapshot import encode_snapshot
from lsmlake.table import Table

pytestmark = pytest.mark.java

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int32(), nullable=False),
        ("v", pa.string()),
    ]
)


def _catalog(warehouse: str) -> lsmlake.Catalog:
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db", exist_ok=True)
    return catalog


def _rows(n: int, dt: str = "a", start: int = 0, v: str = "x") -> pa.Table:
    return pa.table(
        {
            "dt": [dt] * n,
            "id": pa.array(range(start, start + n), pa.int32()),
            "v": [f"{v}{i}" for i in range(n)],
        },
        schema=SCHEMA,
    )


def _ours(catalog: lsmlake.Catalog, ident: str) -> list[dict[str, Any]]:
    lsmlake.clear_caches()
    return sort_rows(arrow_rows(catalog.get_table(ident).read()), ["dt", "id"])


def _java(java: JavaPaimon, warehouse: str, ident: str) -> list[dict[str, Any]]:
    return sort_rows(java_rows(java.read(warehouse, ident)), ["dt", "id"])


def _copies(tmp_path: Path, source: str) -> tuple[str, str]:
    """Two copies of a warehouse: Java maintains the first, lsmlake the second."""
    java_side, ours_side = str(tmp_path / "java"), str(tmp_path / "ours")
    shutil.copytree(source, java_side)
    shutil.copytree(source, ours_side)
    return java_side, ours_side


def _layout(table: Table) -> dict[str, set[int]]:
    """Partition value -> the total bucket counts its live files were written with."""
    lsmlake.clear_caches()
    snapshot = table.snapshot_manager.latest()
    assert snapshot is not None
    locator = FileLocator(table)
    out: dict[str, set[int]] = {}
    for (partition, _), entries in RestoredState.load(table.io, table.paths, snapshot).files.items():
        values = locator.partition_values(partition) if table.partition_keys else []
        key = ",".join(f"{k}={v}" for k, v in zip(table.partition_keys, values, strict=True))
        out.setdefault(key, set()).update(e.total_buckets for e in entries)
    return out


def _kinds(table: Table) -> list[str]:
    return [table.snapshot_manager.snapshot(i).commit_kind for i in table.snapshot_manager.snapshot_ids()]


# ---- rescale ----


def _rescale_source(tmp_path: Path) -> str:
    source = str(tmp_path / "source")
    t = _catalog(source).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}
    )
    t.write(pa.concat_tables([_rows(20, "a"), _rows(12, "b", v="y"), _rows(3, "c")]))
    t.delete("dt = 'c'")  # partition c keeps files but no live row
    return source


def test_rescale_of_the_whole_table_keeps_the_schema_as_java_does(
    java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Paimon's rescale (RescaleAction) overwrites with a copy of the table whose in-memory schema has the
    new bucket count: the schema on storage keeps its `bucket`, so both sides then refuse writes into the
    rescaled partitions until ALTER TABLE sets the new count; dynamic partition overwrite leaves the
    partition without live rows alone."""
    java_wh, ours_wh = _copies(tmp_path, _rescale_source(tmp_path))
    lifecycle(java_paimon, java_wh, "db.t", "rescale", bucket_num=4)
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    ours.rescale(4)
    java_t, ours_t = (_catalog(w).get_table("db.t") for w in (java_wh, ours_wh))
    assert isinstance(java_t, Table) and isinstance(ours_t, Table)
    assert java_t.options.bucket == ours_t.options.bucket == 2
    assert _layout(java_t) == _layout(ours_t) == {"dt=a": {4}, "dt=b": {4}, "dt=c": {2}}
    assert _kinds(java_t) == _kinds(ours_t)
    assert (
        _java(java_paimon, ours_wh, "db.t")
        == _ours(_catalog(java_wh), "db.t")
        == _ours(_catalog(ours_wh), "db.t")
    )
    row = [{"dt": "a", "id": 1, "v": "new"}]
    with pytest.raises(JavaError, match="new bucket num 2, but the previous bucket num is 4"):
        java_paimon.write(ours_wh, "db.t", row)
    with pytest.raises(CommitConflictError, match="written with 4 buckets"):
        ours_t.write(pa.Table.from_pylist(row, schema=SCHEMA))
    # Paimon's documented flow: ALTER TABLE SET ('bucket' = '4'), then writes go on (each side's ALTER)
    lifecycle(java_paimon, java_wh, "db.t", "set_option", key="bucket", value="4")
    ours_t = ours_t.alter(lsmlake.schema_change.set_option("bucket", "4"))
    for wh in (java_wh, ours_wh):
        java_paimon.write(wh, "db.t", row)
    ours_t.write(pa.Table.from_pylist([{"dt": "b", "id": 2, "v": "ours"}], schema=SCHEMA))
    assert _java(java_paimon, ours_wh, "db.t") == _ours(_catalog(ours_wh), "db.t")
    assert {"dt": "a", "id": 1, "v": "new"} in _ours(_catalog(java_wh), "db.t")


def test_rescale_of_one_partition_and_after_an_alter(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    java_wh, ours_wh = _copies(tmp_path, _rescale_source(tmp_path))
    lifecycle(java_paimon, java_wh, "db.t", "rescale", bucket_num=3, partition={"dt": "a"})
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    ours.rescale(3, {"dt": "a"})
    java_t, ours_t = (_catalog(w).get_table("db.t") for w in (java_wh, ours_wh))
    assert isinstance(java_t, Table) and isinstance(ours_t, Table)
    assert _layout(java_t) == _layout(ours_t) == {"dt=a": {3}, "dt=b": {2}, "dt=c": {2}}
    assert _java(java_paimon, ours_wh, "db.t") == _ours(_catalog(java_wh), "db.t")
    # ALTER first, then rescale with the table's (new) count, as Paimon's docs say: the other partitions follow
    lifecycle(java_paimon, java_wh, "db.t", "set_option", key="bucket", value="3")
    lifecycle(java_paimon, java_wh, "db.t", "rescale", partition={"dt": "b"})
    ours_t = ours_t.alter(lsmlake.schema_change.set_option("bucket", "3"))
    ours_t.rescale(partitions={"dt": "b"})
    java_t = _catalog(java_wh).get_table("db.t")
    assert isinstance(java_t, Table)
    assert _layout(java_t) == _layout(ours_t) == {"dt=a": {3}, "dt=b": {3}, "dt=c": {2}}
    java_paimon.write(ours_wh, "db.t", [{"dt": "b", "id": 100, "v": "java"}])
    assert _ours(_catalog(ours_wh), "db.t") == _java(java_paimon, ours_wh, "db.t")


# ---- remove_unexisting_files ----


def test_remove_unexisting_files(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    source = str(tmp_path / "source")
    t = _catalog(source).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"}
    )
    t.write(_rows(5, "a"))
    t.write(_rows(5, "b", start=10))
    t.write(_rows(2, "a", start=20))
    victims = sorted(str(p) for p in Path(t.root, "dt=b").rglob("data-*"))
    assert len(victims) == 1
    os.remove(victims[0])
    java_wh, ours_wh = _copies(tmp_path, source)
    dry = lifecycle(java_paimon, java_wh, "db.t", "remove_unexisting", dry_run=True)["paths"]
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    assert (
        [p.rsplit("/", 1)[-1] for p in ours.remove_unexisting_files(dry_run=True)]
        == [p.rsplit("/", 1)[-1] for p in dry]
        == [victims[0].rsplit("/", 1)[-1]]
    )
    lifecycle(java_paimon, java_wh, "db.t", "remove_unexisting")
    ours.remove_unexisting_files()
    java_t, ours_t = (_catalog(w).get_table("db.t") for w in (java_wh, ours_wh))
    assert isinstance(java_t, Table) and isinstance(ours_t, Table)
    assert _kinds(java_t) == _kinds(ours_t)
    assert (
        _java(java_paimon, ours_wh, "db.t")
        == _ours(_catalog(java_wh), "db.t")
        == _ours(_catalog(ours_wh), "db.t")
    )
    assert {r["dt"] for r in _ours(_catalog(ours_wh), "db.t")} == {"a"}


# ---- consumers ----


def _consumer_table(warehouse: str, **options: str) -> Table:
    t = _catalog(warehouse).create_table(
        "db.c", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1", **options}
    )
    for i in range(3):
        t.write(_rows(1, start=i))
    return t


def test_consumers_reset_and_cleared_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    t = _consumer_table(warehouse)
    t.reset_consumer("ours", 2)
    lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="reset", id="java", next=3)
    assert lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="list")["consumers"] == {
        "ours": 2,
        "java": 3,
    }
    assert read_consumers(t.io, t.root) == {"java": 3, "ours": 2}
    ours_sys = arrow_rows(_catalog(warehouse).get_table("db.c$consumers").read())
    java_sys = [
        {k: v for k, v in r.items() if k != "_kind"}
        for r in java_paimon.system(warehouse, "db.c", "consumers")
    ]
    assert sort_rows(ours_sys, ["consumer_id"]) == sort_rows(java_sys, ["consumer_id"])
    # both refuse a snapshot that does not exist
    with pytest.raises(JavaError):
        lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="reset", id="x", next=99)
    with pytest.raises(NoSuchSnapshotError):
        t.reset_consumer("x", 99)
    for cid in ("keep-1", "drop-1", "drop-2"):
        t.reset_consumer(cid, 1)
    lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="clear", including="drop-.*", excluding=".*-2")
    assert sorted(read_consumers(t.io, t.root)) == ["drop-2", "java", "keep-1", "ours"]
    assert t.clear_consumers("drop-.*|java") == ["drop-2", "java"]
    assert lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="list")["consumers"] == {
        "keep-1": 1,
        "ours": 2,
    }
    lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="delete", id="ours")
    t.reset_consumer("keep-1")  # no snapshot: the consumer is deleted, as Java's reset_consumer without one
    assert read_consumers(t.io, t.root) == {}


def test_consumers_expire_after_either_sides_commit(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """`consumer.expiration-time`: Java's commit (TableCommitImpl's maintenance) and lsmlake's delete the
    consumers whose file was last written longer ago, whoever wrote it."""
    warehouse = str(tmp_path / "wh")
    t = _consumer_table(warehouse, **{"consumer.expiration-time": "1 h"})

    def aged(cid: str) -> None:
        path = consumer_path(t.root, cid)
        then = time.time() - 2 * 3600
        os.utime(path, (then, then))

    t.reset_consumer("old-ours", 1)
    lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="reset", id="old-java", next=1)
    t.reset_consumer("young", 2)
    aged("old-ours")
    aged("old-java")
    java_paimon.write(warehouse, "db.c", [{"dt": "a", "id": 50, "v": "java"}])
    assert read_consumers(t.io, t.root) == {"young": 2}
    t.reset_consumer("old-ours", 1)
    lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="reset", id="old-java", next=1)
    aged("old-ours")
    aged("old-java")
    t.write(_rows(1, start=60))
    assert lifecycle(java_paimon, warehouse, "db.c", "consumer", sub="list")["consumers"] == {"young": 2}


# ---- changelogs ----


def test_expire_changelogs_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    source = str(tmp_path / "source")
    options = {
        "bucket": "1",
        "changelog-producer": "input",
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2",
        "changelog.num-retained.max": "8",
        "changelog.num-retained.min": "1",
    }
    t = _catalog(source).create_table("db.t", schema=SCHEMA, primary_key=["dt", "id"], options=options)
    for i in range(7):
        t.write(_rows(2, start=i))
    changelogs = sorted(p.name for p in Path(t.root, "changelog").glob("changelog-*"))
    assert changelogs, "the long-lived changelogs the test expires"
    java_wh, ours_wh = _copies(tmp_path, source)
    lifecycle(java_paimon, java_wh, "db.t", "expire_changelogs", retain_max=5)
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    ours.expire_changelogs(retain_max=5)

    def left(wh: str) -> tuple[list[str], list[str]]:
        root = Path(wh, "db.db", "t")
        files = sorted(p.name for p in root.rglob("*") if p.is_file() and "schema" not in p.parts)
        return sorted(p.name for p in (root / "changelog").glob("changelog-*")), files

    assert left(java_wh) == left(ours_wh)
    assert (
        java_paimon.stream(ours_wh, "db.t", {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "1"})
        != []
    )
    lifecycle(java_paimon, java_wh, "db.t", "expire_changelogs", delete_all=True)
    ours.expire_changelogs(delete_all=True)
    assert left(java_wh) == left(ours_wh)
    assert not left(ours_wh)[0]


# ---- purge_files, compact_manifest ----


def test_purge_files_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    source = str(tmp_path / "source")
    t = _catalog(source).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1"}
    )
    for i in range(3):
        t.write(_rows(2, start=i))
    t.create_tag("t1")
    t.create_branch("b1", tag="t1")
    t.reset_consumer("c", 2)
    java_wh, ours_wh = _copies(tmp_path, source)
    lifecycle(java_paimon, java_wh, "db.t", "purge")
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    ours.purge_files()

    def state(wh: str) -> dict[str, Any]:
        lsmlake.clear_caches()
        tt = _catalog(wh).get_table("db.t")
        assert isinstance(tt, Table)
        root = Path(tt.root)
        return {
            "snapshots": tt.snapshot_manager.snapshot_ids(),
            "kinds": _kinds(tt),
            "tags": tt.list_tags(),
            "branches": tt.list_branches(),
            "consumers": read_consumers(tt.io, tt.root),
            "data": sorted(p.name for p in root.rglob("data-*")),
            "rows": tt.read().num_rows,
        }

    assert state(java_wh) == state(ours_wh)
    assert state(ours_wh)["rows"] == 0 and len(state(ours_wh)["snapshots"]) == 1
    assert _java(java_paimon, ours_wh, "db.t") == []


def test_compact_manifest_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    source = str(tmp_path / "source")
    t = _catalog(source).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"}
    )
    for i in range(6):
        t.write(_rows(2, dt="ab"[i % 2], start=i))
    t.delete("dt = 'b'")
    java_wh, ours_wh = _copies(tmp_path, source)
    lifecycle(java_paimon, java_wh, "db.t", "compact_manifest")
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    ours.compact_manifests()
    java_t, ours_t = (_catalog(w).get_table("db.t") for w in (java_wh, ours_wh))
    assert isinstance(java_t, Table) and isinstance(ours_t, Table)
    assert _kinds(java_t) == _kinds(ours_t)
    java_m = java_paimon.system(ours_wh, "db.t", "manifests")
    ours_m = _catalog(java_wh).get_table("db.t$manifests").read()
    assert len(java_m) == ours_m.num_rows
    assert _java(java_paimon, ours_wh, "db.t") == _ours(_catalog(java_wh), "db.t")


# ---- rollback to a time or a watermark ----


def test_rollback_to_timestamp_and_watermark(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    source = str(tmp_path / "source")
    t = _catalog(source).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1"}
    )
    base = clock.epoch_millis() - 3_600_000
    ids = []
    for i in range(5):
        with clock.fixed_clock(base + i * 60_000):
            ids.append(t.write(_rows(1, start=i)))
    manager = t.snapshot_manager
    # (no snapshot without a watermark after one with it: 1.4.2's binary search loops on such a gap,
    # apache/paimon#9037); the compaction a write ran has its own snapshot and watermark
    all_ids = manager.snapshot_ids()
    for n, sid in enumerate(all_ids):
        mark = None if n == 0 else 100 * n
        s = dataclasses.replace(manager.snapshot(sid), watermark=mark)
        t.io.write_bytes(manager.snapshot_path(sid), encode_snapshot(s).encode("utf-8"))
    cases: list[tuple[str, int]] = [
        ("rollback_to_timestamp", base + 2 * 60_000 + 5),
        ("rollback_to_timestamp", base + 60_000),
        ("rollback_to_watermark", 250),
        ("rollback_to_watermark", 200),
        ("rollback_to_watermark", 100 * (len(all_ids) - 1)),
        ("rollback_to_watermark", 10_000),
    ]
    for n, (action, value) in enumerate(cases):
        java_wh, ours_wh = _copies(tmp_path / f"case{n}", source)
        got = lifecycle(java_paimon, java_wh, "db.t", action, value=value)["snapshot"]
        ours = _catalog(ours_wh).get_table("db.t")
        assert isinstance(ours, Table)
        result = getattr(ours, action)(value)
        assert result.snapshot_id == got, (action, value)
        assert _java(java_paimon, ours_wh, "db.t") == _ours(_catalog(java_wh), "db.t")
    # before the first snapshot: both refuse
    java_wh, ours_wh = _copies(tmp_path / "early", source)
    with pytest.raises(JavaError, match="no snapshot earlier"):
        lifecycle(java_paimon, java_wh, "db.t", "rollback_to_timestamp", value=base - 1)
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    with pytest.raises(NoSuchSnapshotError):
        ours.rollback_to_timestamp(base - 1)
    # Before every watermark Paimon 1.4.2 returns the first snapshot with one (newer than asked for);
    # apache/paimon#9037 made that "none", which lsmlake follows: the one deliberate difference.
    assert (
        lifecycle(java_paimon, java_wh, "db.t", "rollback_to_watermark", value=50)["snapshot"] == all_ids[1]
    )
    with pytest.raises(NoSuchSnapshotError):
        ours.rollback_to_watermark(50)


# ---- branches ----


def test_rename_branch_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = _catalog(warehouse)
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1"})
    t.write(_rows(3))
    t.create_tag("t1")
    t.create_branch("ours", tag="t1").write(_rows(1, start=10, v="b"))
    java_paimon.branch(warehouse, "db.t", "create", "java", tag="t1")
    java_paimon.write(warehouse, "db.t$branch_java", [{"dt": "a", "id": 20, "v": "j"}])
    expected_ours = _ours(catalog, "db.t$branch_ours")
    expected_java = _ours(catalog, "db.t$branch_java")
    lifecycle(java_paimon, warehouse, "db.t", "rename_branch", name="ours", to="ours2")
    t.rename_branch("java", "java2")
    assert t.list_branches() == ["java2", "ours2"]
    assert (
        _ours(catalog, "db.t$branch_ours2")
        == expected_ours
        == _java(java_paimon, warehouse, "db.t$branch_ours2")
    )
    assert _java(java_paimon, warehouse, "db.t$branch_java2") == expected_java
    java_paimon.write(warehouse, "db.t$branch_java2", [{"dt": "a", "id": 21, "v": "j"}])
    assert len(_ours(catalog, "db.t$branch_java2")) == len(expected_java) + 1
    with pytest.raises(JavaError, match="already exists"):
        lifecycle(java_paimon, warehouse, "db.t", "rename_branch", name="ours2", to="java2")
    with pytest.raises(lsmlake.errors.AlreadyExistsError):
        t.rename_branch("ours2", "java2")


# ---- partition mark-done ----


def test_success_file_written_and_refreshed_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    t = _catalog(warehouse).create_table(
        "db.p", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"}
    )
    t.write(pa.concat_tables([_rows(1, "a"), _rows(1, "b")]))
    (path,) = t.mark_partitions_done({"dt": "a"})
    ours_text = Path(path).read_text()
    java = lifecycle(java_paimon, warehouse, "db.p", "success_file", partition="dt=a")
    assert java["json"] == ours_text  # byte-for-byte Java's SuccessFile JSON
    created = json.loads(ours_text)["creationTime"]
    assert java["creation_time"] == created
    time.sleep(0.01)
    lifecycle(java_paimon, warehouse, "db.p", "mark_done", partitions=["dt=a", "dt=b"])
    a = json.loads(Path(path).read_text())
    assert a["creationTime"] == created and a["modificationTime"] > created
    b_path = Path(t.root, "dt=b", "_SUCCESS")
    java_b = json.loads(b_path.read_text())
    time.sleep(0.01)
    t.mark_partitions_done({"dt": "b"})
    ours_b = json.loads(b_path.read_text())
    assert (
        ours_b["creationTime"] == java_b["creationTime"]
        and ours_b["modificationTime"] > java_b["modificationTime"]
    )
    assert (
        lifecycle(java_paimon, warehouse, "db.p", "success_file", partition="dt=b")["json"]
        == b_path.read_text()
    )


# ---- partition expiry by update time, record-level expiry of Java-written rows ----


def test_partitions_expired_by_update_time_on_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """`partition.expiration-strategy` = update-time: a partition expires when its newest file is older
    than the expiration time, whichever side wrote it and whichever side's commit checks."""
    warehouse = str(tmp_path / "wh")
    options = {
        "bucket": "1",
        "partition.expiration-time": "1 d",
        "partition.expiration-check-interval": "0 s",
        "partition.expiration-strategy": "update-time",
    }
    t = _catalog(warehouse).create_table(
        "db.p", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options=options
    )
    now = clock.epoch_millis()
    with clock.fixed_clock(now - 3 * 86_400_000):  # files written three days ago
        t.write(pa.concat_tables([_rows(2, "old"), _rows(1, "touched")]))
    t.write(_rows(1, "touched", start=5))  # a newer file keeps the partition
    java_paimon.write(warehouse, "db.p", [{"dt": "java", "id": 1, "v": "j"}])  # Java's commit expires
    assert {r["dt"] for r in _ours(_catalog(warehouse), "db.p")} == {"touched", "java"}
    assert _java(java_paimon, warehouse, "db.p") == _ours(_catalog(warehouse), "db.p")
    with clock.fixed_clock(now + 3 * 86_400_000):  # three days on, lsmlake's commit expires Java's files
        t.write(_rows(1, "later"))
    assert {r["dt"] for r in _java(java_paimon, warehouse, "db.p")} == {"later"}
    assert _java(java_paimon, warehouse, "db.p") == _ours(_catalog(warehouse), "db.p")


def test_record_level_expiry_of_java_written_rows(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """Rows Java wrote, compacted by Java on one copy and by lsmlake on the other: the same expired rows
    are dropped (`record-level.time-field` in seconds here). Both filter the rows each file holds before
    the merge, so the older live version of key 2 comes back when its newer version has expired."""
    source = str(tmp_path / "source")
    fields = [("id", "INT NOT NULL"), ("ts", "BIGINT"), ("v", "STRING")]
    options = {
        "bucket": "1",
        "record-level.expire-time": "1 d",
        "record-level.time-field": "ts",
        "num-sorted-run.compaction-trigger": "50",
    }
    java_paimon.create(source, "db.r", fields, primary_key=["id"], options=options)
    now_s = clock.epoch_millis() // 1000
    day = 86_400
    java_paimon.write(
        source,
        "db.r",
        [
            {"id": 1, "ts": now_s - 10 * day, "v": "old"},
            {"id": 2, "ts": now_s, "v": "fresh"},
            {"id": 3, "ts": None, "v": "null"},
        ],
    )
    java_paimon.write(
        source,
        "db.r",
        [
            {"id": 2, "ts": now_s - 3 * day, "v": "expired version"},
            {"id": 4, "ts": now_s + day, "v": "future"},
        ],
    )
    java_wh, ours_wh = _copies(tmp_path, source)
    java_paimon.compact(java_wh, "db.r", full=True)
    ours = _catalog(ours_wh).get_table("db.r")
    assert isinstance(ours, Table)
    ours.compact(full=True)
    got = {
        side: _catalog(wh).get_table("db.r").read(columns=["id", "v"]).sort_by("id").to_pylist()
        for side, wh in (("java", java_wh), ("ours", ours_wh))
    }
    assert (
        got["java"]
        == got["ours"]
        == [{"id": 2, "v": "fresh"}, {"id": 3, "v": "null"}, {"id": 4, "v": "future"}]
    )
    assert sort_rows(java_rows(java_paimon.read(ours_wh, "db.r")), ["id"]) == sort_rows(
        java_rows(java_paimon.read(java_wh, "db.r")), ["id"]
    )


# ---- empty commits ----


@pytest.mark.parametrize(
    ("options", "snapshots_added"),
    [
        ({"commit.force-create-snapshot": "true"}, 0),  # Flink streaming only: a batch commit ignores it
        ({"snapshot.ignore-empty-commit": "false"}, 1),  # what makes an empty batch commit a snapshot
        ({}, 0),
    ],
)
def test_an_empty_batch_commit(
    java_paimon: JavaPaimon, tmp_path: Path, options: dict[str, str], snapshots_added: int
) -> None:
    """A commit with nothing to write, on Java's BatchWriteBuilder and lsmlake's writer: the same rule."""
    warehouse = str(tmp_path / "wh")
    t = _catalog(warehouse).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1", **options}
    )
    t.write(_rows(1))
    java_paimon.write(warehouse, "db.t", [])
    assert t.snapshot_manager.latest_id() == 1 + snapshots_added
    t.writer().commit()
    assert t.snapshot_manager.latest_id() == 1 + 2 * snapshots_added


# ---- global system tables ----


@pytest.mark.parametrize("name", ["tables", "all_table_options", "partitions"])
def test_global_system_tables_read_the_same(java_paimon: JavaPaimon, tmp_path: Path, name: str) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = _catalog(warehouse)
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}
    )
    t.write(pa.concat_tables([_rows(1, "a"), _rows(2, "b")]))
    t.mark_partitions_done({"dt": "a"})
    catalog.create_table("db.u", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1"})
    java_paimon.create(warehouse, "db.j", [("k", "INT")], options={"file.format": "orc"})
    java_paimon.write(warehouse, "db.j", [{"k": 1}])
    java = [{k: v for k, v in r.items() if k != "_kind"} for r in java_paimon.read(warehouse, f"sys.{name}")]
    ours = arrow_rows(catalog.get_table(f"sys.{name}").read())
    key = [c for c in ("database_name", "table_name", "partition_name", "key") if c in (ours or java)[0]]
    assert sort_rows(java, key) == sort_rows(ours, key) and len(ours) >= 2


# ---- tag procedures, fallback branch, $branches ----


def test_tag_procedures_by_either_side(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """create_tag_from_timestamp, rename_tag and replace_tag: each side's result as the other reads it."""
    source = str(tmp_path / "source")
    t = _catalog(source).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1"}
    )
    base = clock.epoch_millis() - 3_600_000
    for i in range(4):
        with clock.fixed_clock(base + i * 60_000):
            t.write(_rows(1, start=i))
    t.create_tag("early", 1)
    t.expire_snapshots(retain_min=1, retain_max=2, older_than_ms=clock.epoch_millis())  # 1 lives in the tag
    java_wh, ours_wh = _copies(tmp_path, source)

    def tags(wh: str) -> dict[str, int]:
        lsmlake.clear_caches()
        tt = _catalog(wh).get_table("db.t")
        assert isinstance(tt, Table)
        return {x.name: x.snapshot.id for x in tt.list_tags()}

    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    for n, ts in enumerate([base - 1, base + 30_000, base + 2 * 60_000, base + 3 * 60_000]):
        got = lifecycle(java_paimon, java_wh, "db.t", "create_tag_from_timestamp", name=f"ts{n}", value=ts)
        assert ours.create_tag_from_timestamp(f"ts{n}", ts).snapshot.id == got["snapshot"], ts
    with pytest.raises(JavaError):
        lifecycle(java_paimon, java_wh, "db.t", "create_tag_from_timestamp", name="late", value=base + 10**7)
    with pytest.raises(NoSuchSnapshotError):
        ours.create_tag_from_timestamp("late", base + 10**7)
    lifecycle(java_paimon, java_wh, "db.t", "rename_tag", name="ts1", to="renamed")
    ours.rename_tag("ts1", "renamed")
    lifecycle(java_paimon, java_wh, "db.t", "replace_tag", name="ts2", id=4)
    ours.replace_tag("ts2", 4)
    lifecycle(java_paimon, java_wh, "db.t", "replace_tag", name="ts3")  # the latest snapshot
    ours.replace_tag("ts3")
    assert tags(java_wh) == tags(ours_wh)
    for name in tags(ours_wh):
        ident = "db.t"
        java_side = java_rows(java_paimon.read(ours_wh, ident, options={"scan.tag-name": name}))
        ours_side = arrow_rows(_catalog(java_wh).get_table(ident).read(tag=name))  # type: ignore[union-attr]
        assert sort_rows(java_side, ["dt", "id"]) == sort_rows(ours_side, ["dt", "id"]), name


def test_fallback_branch_and_branches_table(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """`scan.fallback-branch`: a batch read of the main table takes the partitions it lacks from the
    branch, on both sides; `$branches` lists the same branches."""
    warehouse = str(tmp_path / "wh")
    catalog = _catalog(warehouse)
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"}
    )
    t.write(_rows(2, "a"))
    fb = t.create_branch("fb")
    fb.write(pa.concat_tables([_rows(3, "a", v="fb"), _rows(2, "b", v="fb")]))
    java_paimon.branch(warehouse, "db.t", "create", "other")
    t = t.alter(lsmlake.schema_change.set_option("scan.fallback-branch", "fb"))
    ours = _ours(catalog, "db.t")
    assert ours == _java(java_paimon, warehouse, "db.t")
    assert {(r["dt"], r["v"][:2]) for r in ours} == {("a", "x0"), ("a", "x1"), ("b", "fb")}
    java_b = sorted(r["branch_name"] for r in java_paimon.system(warehouse, "db.t", "branches"))
    ours_b = sorted(catalog.get_table("db.t$branches").read().column("branch_name").to_pylist())
    assert java_b == ours_b == ["fb", "other"]


@pytest.mark.parametrize("ignore_progress", [False, True])
def test_stream_resumes_from_a_consumer_as_java_does(
    java_paimon: JavaPaimon, tmp_path: Path, ignore_progress: bool
) -> None:
    """A consumer's saved progress (lsmlake's reset_consumer) is where a stream with that consumer-id
    starts, on Java and on lsmlake; `consumer.ignore-progress` makes both start afresh (latest-full)."""
    warehouse = str(tmp_path / "wh")
    t = _catalog(warehouse).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "1"}
    )
    for i in range(4):
        t.write(_rows(2, start=2 * i, v=f"w{i}-"))
    t.reset_consumer("etl", 3)
    options = {"consumer-id": "etl", "consumer.ignore-progress": str(ignore_progress).lower()}
    java = sorted((r["_kind"], r["id"], r["v"]) for r in java_paimon.stream(warehouse, "db.t", options))
    stream = t.with_options({"consumer.ignore-progress": options["consumer.ignore-progress"]}).stream(
        consumer_id="etl", stop_when_caught_up=True, auto_commit=False
    )
    ours = sorted(
        (kind, i, v)
        for batch in stream
        for kind, i, v in zip(
            batch.column("rowkind").to_pylist(),
            batch.column("id").to_pylist(),
            batch.column("v").to_pylist(),
            strict=True,
        )
    )
    assert java == ours
    assert len(ours) == (8 if ignore_progress else 4)  # everything, or snapshots 3 and 4


def test_rescale_of_a_postpone_bucket_partition(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """Paimon's rescale is first of all for postpone-bucket tables: a partition gets a real bucket count
    (bucket_num is required); the postponed rows compacted afterwards follow the partition's count."""
    source = str(tmp_path / "source")
    t = _catalog(source).create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "-2"}
    )
    t.write(pa.concat_tables([_rows(9, "a"), _rows(2, "b")]))
    t.compact(full=True)
    java_wh, ours_wh = _copies(tmp_path, source)
    lifecycle(java_paimon, java_wh, "db.t", "rescale", bucket_num=3, partition={"dt": "a"})
    ours = _catalog(ours_wh).get_table("db.t")
    assert isinstance(ours, Table)
    ours.rescale(3, {"dt": "a"})
    with pytest.raises(JavaError, match="bucket number"):
        lifecycle(java_paimon, java_wh, "db.t", "rescale", partition={"dt": "a"})
    with pytest.raises(ValueError, match="bucket_num"):
        ours.rescale(partitions={"dt": "a"})
    java_t = _catalog(java_wh).get_table("db.t")
    assert isinstance(java_t, Table)
    assert _layout(java_t) == _layout(ours) and _layout(ours)["dt=a"] == {3}
    assert (
        _java(java_paimon, ours_wh, "db.t")
        == _ours(_catalog(java_wh), "db.t")
        == _ours(_catalog(ours_wh), "db.t")
    )
    for tt in (java_t, ours):
        tt.write(_rows(4, "a", start=20, v="late"))
        tt.compact(full=True)
    assert _layout(java_t) == _layout(ours) and _layout(ours)["dt=a"] == {3}
    assert _java(java_paimon, ours_wh, "db.t") == _ours(_catalog(java_wh), "db.t")


def test_commits_turn_expired_snapshots_into_the_same_changelogs(
    java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Each side's commits expire snapshots into long-lived changelogs and those by
    `changelog.num-retained.max` alike (the rule tests/property/test_changelog_expiry_model.py models)."""
    options = {
        "bucket": "1",
        "changelog-producer": "input",
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2",
        "changelog.num-retained.min": "1",
        "changelog.num-retained.max": "5",
    }
    java_wh, ours_wh = str(tmp_path / "java"), str(tmp_path / "ours")
    java_paimon.create(
        java_wh, "db.t", [("id", "INT NOT NULL"), ("v", "BIGINT")], primary_key=["id"], options=options
    )
    ours = _catalog(ours_wh).create_table(
        "db.t",
        schema=pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.int64())]),
        primary_key=["id"],
        options=options,
    )
    seen = []
    for i in range(8):
        java_paimon.write(java_wh, "db.t", [{"id": i % 3, "v": i}])
        ours.write(pa.table({"id": pa.array([i % 3], pa.int32()), "v": [i]}))
        ids = [
            sorted(int(p.name.split("-")[1]) for p in Path(wh, "db.db", "t", "changelog").glob("changelog-*"))
            for wh in (java_wh, ours_wh)
        ]
        assert ids[0] == ids[1], i
        seen.append(ids[1])
    # 9 snapshots (the fifth write compacted too): snapshots 8 and 9 kept, 5 of them and changelogs
    assert seen[-1] == [5, 6, 7] and seen[2] == [1]
