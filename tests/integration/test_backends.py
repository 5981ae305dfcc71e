"""One behaviour suite on two backends: every test runs on local disk and on S3 (moto's server)."""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
from s3_server import S3Endpoint, Warehouse

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.errors import (
    AlreadyExistsError,
    CommitConflictError,
    NoSuchDatabaseError,
    NoSuchSnapshotError,
    NoSuchTableError,
    UnsupportedError,
)
from lsmlake.sql import execute
from lsmlake.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("v", pa.int64()),
        ("name", pa.string()),
    ]
)
KEYS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
FAR_FUTURE_MS = 2**62
Model = dict[tuple[int, str], tuple[int | None, str | None]]


def rows(ids: list[int], dt: str, v: int) -> pa.Table:
    return pa.table(
        {"id": ids, "dt": [dt] * len(ids), "v": [v] * len(ids), "name": [f"n{v}"] * len(ids)}, schema=SCHEMA
    )


def upsert(model: Model, ids: list[int], dt: str, v: int) -> None:
    model.update({(i, dt): (v, f"n{v}") for i in ids})


def as_model(t: pa.Table) -> Model:
    cols = [t.column(c).to_pylist() for c in ("id", "dt", "v", "name")]
    return {(i, d): (v, n) for i, d, v, n in zip(*cols, strict=True)}


def new_table(cat: lsmlake.Catalog, name: str = "db.t", **options: str) -> Table:
    cat.create_database(name.split(".")[0], exist_ok=True)
    return cat.create_table(
        name,
        schema=SCHEMA,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "3", **options},
    )


def data_files(t: Table) -> set[str]:
    """Names of the Parquet files below the table directory."""
    return {posixpath.basename(f.path) for f in t.io.walk_files(t.root) if f.path.endswith(".parquet")}


def all_files(t: Table) -> set[str]:
    return {f.path for f in t.io.walk_files(t.root)}


def live_files(t: Table) -> set[str]:
    return {f.file_name for s in t.scan().splits() for f in s.files}


def test_databases_and_tables(warehouse: Warehouse) -> None:
    cat = warehouse.catalog()
    cat.create_database("db")
    cat.create_database("db", exist_ok=True)
    with pytest.raises(AlreadyExistsError):
        cat.create_database("db")
    cat.create_database("empty")
    assert cat.list_databases() == ["db", "empty"]
    new_table(cat, "db.a")
    new_table(cat, "db.b").write(rows([1], "x", 1))
    with pytest.raises(AlreadyExistsError):
        new_table(cat, "db.a")
    assert cat.list_tables("db") == ["a", "b"]
    assert isinstance(cat.get_table("db.b"), Table)
    assert warehouse.catalog().open_table("db.b").read().num_rows == 1  # a second catalog sees it
    cat.drop_table("db.b")
    assert cat.list_tables("db") == ["a"]
    with pytest.raises(NoSuchTableError):
        cat.get_table("db.b")
    with pytest.raises(NoSuchTableError):
        cat.drop_table("db.b")
    cat.drop_table("db.b", ignore_missing=True)
    assert new_table(cat, "db.b").latest_snapshot() is None  # re-created empty: the drop removed everything
    if warehouse.backend == "local":
        cat.rename_table("db.b", "empty.c")
        assert cat.list_tables("empty") == ["c"] and cat.list_tables("db") == ["a"]
        cat.drop_table("empty.c")
    else:  # the one documented difference: an object store cannot move a directory atomically
        with pytest.raises(UnsupportedError):
            cat.rename_table("db.b", "empty.c")
        assert cat.list_tables("db") == ["a", "b"] and cat.list_tables("empty") == []
        cat.drop_table("db.b")
    cat.drop_database("empty")
    with pytest.raises(NoSuchDatabaseError):
        cat.drop_database("empty")
    with pytest.raises(AlreadyExistsError):
        cat.drop_database("db")  # not empty
    cat.create_database("empty")  # again, through the same catalog
    assert cat.list_databases() == ["db", "empty"]
    cat.drop_database("db", cascade=True)
    assert cat.list_databases() == ["empty"]
    with pytest.raises(NoSuchTableError):
        cat.get_table("db.a")


def test_upserts_deletes_and_reads_over_partitions_and_buckets(warehouse: Warehouse) -> None:
    t = new_table(warehouse.catalog())
    model: Model = {}
    for v, (ids, dt) in enumerate([(range(0, 20), "a"), (range(10, 30), "b"), (range(5, 15), "a")]):
        t.write(rows(list(ids), dt, v))
        upsert(model, list(ids), dt, v)
    t.delete(pa.table({"id": [5, 6, 25], "dt": ["a", "a", "b"]}, schema=KEYS))
    for key in [(5, "a"), (6, "a"), (25, "b")]:
        del model[key]
    t.delete("v = 1 AND id < 12")
    model = {k: val for k, val in model.items() if not (val[0] == 1 and k[0] < 12)}
    t.update("id = 0", {"v": 99})
    model[(0, "a")] = (99, model[(0, "a")][1])

    assert as_model(t.read()) == model
    splits = t.scan().splits()
    assert len({(s.partition, s.bucket) for s in splits}) == 6  # 2 partitions x 3 buckets
    got = t.read(filter="dt = 'a' AND v >= 2", columns=["id", "v"])
    assert got.column_names == ["id", "v"]
    assert sorted(got.column("id").to_pylist()) == sorted(
        i for (i, d), (v, _) in model.items() if d == "a" and v is not None and v >= 2
    )
    assert t.read(limit=3).num_rows <= 3
    again = warehouse.catalog().open_table("db.t")
    assert as_model(again.read()) == model


@pytest.mark.parametrize("dv", [False, True], ids=["merge-on-read", "deletion-vectors"])
def test_compaction(warehouse: Warehouse, dv: bool) -> None:
    cat = warehouse.catalog()
    options = {"deletion-vectors.enabled": str(dv).lower(), "num-sorted-run.compaction-trigger": "3"}
    t = new_table(cat, **options, **{"write-only": "true"})  # writes never compact: compact() does
    model: Model = {}
    for v in range(4):
        ids = list(range(v * 3, v * 3 + 10))
        t.write(rows(ids, "a", v))
        upsert(model, ids, "a", v)
    levels = cat.get_table("db.t$files").read().column("level").to_pylist()
    assert levels.count(0) >= 9, levels  # 4 level-0 runs in each of 3 buckets (some may hold no key)
    sid = t.compact()
    assert sid is not None and t.snapshot(sid).commit_kind == "COMPACT"
    assert as_model(t.read()) == model
    t.compact(full=True)  # may have nothing left to do
    splits = t.scan().splits()
    assert all(len(s.files) == 1 and s.files[0].level > 0 and s.raw_convertible for s in splits)
    assert as_model(t.read()) == model
    t = t.with_options({"write-only": "false"})  # this write compacts its buckets itself
    t.write(rows([1, 2], "a", 50))
    upsert(model, [1, 2], "a", 50)
    assert as_model(t.read()) == model
    deletion_files = [d for s in t.scan().splits() for d in s.deletion_files if d is not None]
    assert bool(deletion_files) == dv  # lookup compaction of a DV table marks the old rows deleted
    assert live_files(t) <= data_files(t)


def test_time_travel_by_snapshot_and_tag(warehouse: Warehouse) -> None:
    t = new_table(warehouse.catalog())
    states: dict[int, Model] = {}
    model: Model = {}
    for v in range(3):
        upsert(model, [v, v + 1], "a", v)
        sid = t.write(rows([v, v + 1], "a", v))
        assert sid is not None
        states[sid] = dict(model)
    first = min(states)
    t.create_tag("first", first)
    for sid, state in states.items():
        assert as_model(t.read(snapshot_id=sid)) == state
        assert as_model(t.with_options({"scan.snapshot-id": str(sid)}).read()) == state
    assert as_model(t.read(tag="first")) == states[first]
    assert [tag.name for tag in t.list_tags()] == ["first"]
    with pytest.raises(NoSuchSnapshotError):
        t.read(snapshot_id=max(states) + 1)


def test_system_tables(warehouse: Warehouse) -> None:
    cat = warehouse.catalog()
    t = new_table(cat)
    t.write(rows(list(range(10)), "a", 1))
    t.write(rows(list(range(5)), "b", 2))
    snapshots = cat.get_table("db.t$snapshots").read()
    assert snapshots.column("snapshot_id").to_pylist() == t.snapshot_manager.snapshot_ids()
    assert set(snapshots.column("commit_kind").to_pylist()) == {"APPEND"}
    files = cat.get_table("db.t$files").read()
    paths = files.column("file_path").to_pylist()
    assert {posixpath.basename(p) for p in paths} == live_files(t)
    assert all(p.startswith(warehouse.uri + "/db.db/t/dt=") for p in paths)  # full paths, s3:// included
    assert sum(files.column("record_count").to_pylist()) == 15
    assert len(set(files.column("partition").to_pylist())) == 2


def test_expire_snapshots_and_remove_orphan_files(warehouse: Warehouse) -> None:
    t = new_table(warehouse.catalog())
    model: Model = {}
    for v in range(5):
        t.write(rows([0, 1, 2 + v], "a", v))
        upsert(model, [0, 1, 2 + v], "a", v)
    t.compact(full=True)
    ids = t.snapshot_manager.snapshot_ids()
    result = t.expire_snapshots(retain_min=1, retain_max=2)  # all are younger than an hour: max forces it
    assert result.expired_snapshot_ids == tuple(ids[:-2])
    assert t.snapshot_manager.snapshot_ids() == ids[-2:]
    with pytest.raises(NoSuchSnapshotError):
        t.read(snapshot_id=ids[0])
    assert as_model(t.read()) == model
    # expiry deleted what only expired snapshots used: nothing is left for orphan cleaning
    assert t.remove_orphan_files(older_than_ms=FAR_FUTURE_MS, dry_run=True) == []
    bucket_dir = posixpath.dirname(
        next(iter(f.path for f in t.io.walk_files(t.root) if f.path.endswith(".parquet")))
    )
    stray = posixpath.join(bucket_dir, "data-stray-0.parquet")
    t.io.write_bytes(stray, b"not referenced by anything")
    before = all_files(t)
    assert t.remove_orphan_files(dry_run=True) == []  # younger than the default one-day guard
    removed = t.remove_orphan_files(older_than_ms=FAR_FUTURE_MS)
    assert [posixpath.normpath(p) for p in removed] == [posixpath.normpath(stray)]
    assert all_files(t) == before - {stray}
    assert as_model(t.read()) == model


def test_rollback(warehouse: Warehouse) -> None:
    t = new_table(warehouse.catalog())
    states: list[Model] = []
    model: Model = {}
    for v in range(4):
        t.write(rows([v, 10], "a", v))
        upsert(model, [v, 10], "a", v)
        states.append(dict(model))
    t.create_tag("two", 2)
    result = t.rollback_to(3)
    assert result.snapshot_id == 3 and result.removed_snapshot_ids == (4,)
    assert as_model(t.read()) == states[2]
    t.rollback_to(tag="two")
    assert t.snapshot_manager.snapshot_ids() == [1, 2]
    assert as_model(t.read()) == states[1]
    assert live_files(t) == data_files(t)  # the rolled-back snapshots' files are gone
    assert t.write(rows([7], "a", 7)) == 3
    assert as_model(t.read()) == {**states[1], (7, "a"): (7, "n7")}


def test_alter_table(warehouse: Warehouse) -> None:
    cat = warehouse.catalog()
    t = new_table(cat)
    t.write(rows([1, 2], "a", 1))
    t2 = t.alter(sc.add_column("note", "STRING"), sc.rename_column("name", "label"))
    assert t2.schema.id == 1
    reopened = cat.open_table("db.t")
    assert reopened.schema.field_names == ["id", "dt", "v", "label", "note"]
    new_rows = pa.table(
        {"id": [3], "dt": ["a"], "v": [3], "label": ["x"], "note": ["hello"]},
        schema=pa.schema([*KEYS, ("v", pa.int64()), ("label", pa.string()), ("note", pa.string())]),
    )
    reopened.write(new_rows)
    got = {r["id"]: (r["label"], r["note"]) for r in reopened.read().to_pylist()}
    assert got == {1: ("n1", None), 2: ("n1", None), 3: ("x", "hello")}
    assert cat.get_table("db.t$schemas").read().num_rows == 2


def no_orphans(t: Table) -> bool:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


def test_two_writers_of_one_bucket_are_rebased_in_published_order(warehouse: Warehouse) -> None:
    t = new_table(warehouse.catalog(), bucket="1")
    t.write(rows([1, 2, 3], "a", 0))
    first, second = t.writer(), t.writer()  # both restore the same base
    first.write(rows([1, 2], "a", 1))
    second.write(rows([2, 3], "a", 2))
    assert second.commit() is not None
    assert first.commit() is not None  # rebased above the other writer, not refused
    assert as_model(t.read()) == {(1, "a"): (1, "n1"), (2, "a"): (1, "n1"), (3, "a"): (2, "n2")}
    assert no_orphans(t)  # the rebased writer's superseded files were removed


def test_two_writers_that_really_conflict(warehouse: Warehouse) -> None:
    """A cross-partition partial-update upsert places keys by its base's global key index: a second
    writer of the same key in another partition is refused, and leaves nothing behind."""
    cat = warehouse.catalog()
    cat.create_database("db", exist_ok=True)
    t = cat.create_table(
        "db.x",
        schema=SCHEMA,
        primary_key=["id"],
        partition_keys=["dt"],
        options={"bucket": "-1", "merge-engine": "partial-update"},
    )
    first, second = t.writer(), t.writer()
    first.write(rows([1], "a", 1))
    second.write(rows([1], "b", 2))
    first.commit()
    with pytest.raises(CommitConflictError, match="cross-partition"):
        second.commit()
    assert as_model(t.read()) == {(1, "a"): (1, "n1")}
    assert no_orphans(t)
    t.write(rows([1], "b", 2))  # a retry on the new base updates the key where it lives
    assert as_model(t.read()) == {(1, "a"): (2, "n2")}


def test_two_cross_partition_deduplicate_writers_of_one_key(warehouse: Warehouse) -> None:
    """With deduplicate the second writer is rebased: it deletes the key where the first put it."""
    cat = warehouse.catalog()
    cat.create_database("db", exist_ok=True)
    t = cat.create_table(
        "db.y", schema=SCHEMA, primary_key=["id"], partition_keys=["dt"], options={"bucket": "-1"}
    )
    first, second = t.writer(), t.writer()
    first.write(rows([1], "a", 1))
    second.write(rows([1], "b", 2))
    first.commit()
    second.commit()
    assert as_model(t.read()) == {(1, "b"): (2, "n2")}
    assert no_orphans(t)


class Crash(Exception):
    """The injected failure."""


@contextmanager
def failing_snapshot_publish(t: Table) -> Iterator[None]:
    """Make publishing any snapshot file of ``t`` fail, as a lost connection would."""
    real = t.io.write_if_absent

    def publish(path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            raise Crash(path)
        return real(path, data)

    t.io.write_if_absent = publish  # type: ignore[method-assign]
    try:
        yield
    finally:
        del t.io.write_if_absent


def test_failed_commit_leaves_nothing_half_written(warehouse: Warehouse) -> None:
    t = new_table(warehouse.catalog())
    t.write(rows([1, 2, 3], "a", 0))
    before_rows, before_data = t.read(), data_files(t)
    with failing_snapshot_publish(t), pytest.raises(Crash):
        t.write(rows([3, 4], "a", 1))
    assert t.snapshot_manager.snapshot_ids() == [1]
    assert t.read().equals(before_rows)
    assert data_files(t) == before_data  # the writer removed its data files
    t.remove_orphan_files(older_than_ms=FAR_FUTURE_MS)  # manifests of the failed attempt, if any
    assert t.write(rows([3, 4], "a", 1)) == 2
    assert as_model(t.read()) == {
        (1, "a"): (0, "n0"),
        (2, "a"): (0, "n0"),
        (3, "a"): (1, "n1"),
        (4, "a"): (1, "n1"),
    }


def test_sql(warehouse: Warehouse) -> None:
    cat = warehouse.catalog()
    cat.create_database("db")
    results = execute(
        cat,
        """
        CREATE TABLE db.users (id INT, name STRING, age INT, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED)
          PARTITIONED BY (dt) WITH ('bucket' = '2');
        INSERT INTO db.users VALUES (1, 'ann', 31, 'a'), (2, 'bob', 42, 'a'), (3, 'cy', 23, 'b');
        UPDATE db.users SET age = age + 1 WHERE dt = 'a';
        DELETE FROM db.users WHERE name = 'cy';
        SELECT id, name, age FROM db.users ORDER BY id;
        SELECT count(*) AS n FROM db.users$snapshots;
        """,
    )
    assert results[-2].rows == [{"id": 1, "name": "ann", "age": 32}, {"id": 2, "name": "bob", "age": 43}]
    assert results[-1].rows == [{"n": 3}]


VOLATILE = ("file_name", "file_path", "time", "commit_user", "manifest_list", "index_manifest", "dv_ranges")


def _stable(t: pa.Table, *also: str) -> list[dict[str, object]]:
    """A system table's rows without names, paths, users and times (which differ run to run)."""
    keep = [c for c in t.column_names if not any(v in c for v in (*VOLATILE, *also))]
    return sorted(t.select(keep).to_pylist(), key=repr)


def test_system_tables_match_across_backends(tmp_path: Path, s3_endpoint: S3Endpoint) -> None:
    """The same commits on local disk and on S3 give the same metadata, not only the same rows."""
    seen = []
    for warehouse in (
        Warehouse("local", str(tmp_path / "warehouse"), {}),
        Warehouse("s3", s3_endpoint.fresh_warehouse(), s3_endpoint.options),
    ):
        cat = warehouse.catalog()
        t = new_table(cat, **{"deletion-vectors.enabled": "true"})
        t.write(rows(list(range(12)), "a", 1))
        t.write(rows(list(range(6)), "b", 2))
        t.write(rows([1, 2, 3], "a", 3))
        t.delete(pa.table({"id": [4], "dt": ["b"]}, schema=KEYS))
        t.compact(full=True)
        names = (
            "snapshots",
            "files",
            "manifests",
            "partitions",
            "buckets",
            "table_indexes",
            "schemas",
            "options",
        )
        # manifests hold the random file names, zstd-compressed: their sizes differ by a few bytes
        sizes = {"manifests": ("file_size",)}
        tables = {n: _stable(cat.get_table(f"db.t${n}").read(), *sizes.get(n, ())) for n in names}
        seen.append(tables | {"rows": _stable(t.read())})
    local, s3 = seen
    for name in local:
        assert local[name] == s3[name], name
