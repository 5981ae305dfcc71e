"""The catalog behaviour suite, run alike on the filesystem catalog, the JDBC catalog (SQLite, PostgreSQL) and
the REST catalog (Paimon's own server): databases, tables, rename, ALTER, concurrent commits and the errors
each gives."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from conftest import CatalogFactory

from lsmlake import schema_change as sc
from lsmlake.errors import (
    AlreadyExistsError,
    InvalidIdentifierError,
    NoSuchDatabaseError,
    NoSuchTableError,
)
from lsmlake.system.registry import SystemTable
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(table: Table) -> list[dict[str, object]]:
    return sorted(table.read().to_pylist(), key=lambda r: str(r["id"]))


def test_databases(open_catalog: CatalogFactory) -> None:
    cat = open_catalog()
    assert cat.list_databases() == []
    cat.create_database("b")
    cat.create_database("a")
    cat.create_database("a", exist_ok=True)
    with pytest.raises(AlreadyExistsError, match="database a already exists"):
        cat.create_database("a")
    assert open_catalog().list_databases() == ["a", "b"]  # recorded, not held in memory
    cat.drop_database("b")
    assert cat.list_databases() == ["a"]
    with pytest.raises(NoSuchDatabaseError, match="database b does not exist"):
        cat.drop_database("b")
    cat.drop_database("b", ignore_missing=True)
    with pytest.raises(NoSuchDatabaseError):
        cat.list_tables("b")
    with pytest.raises(InvalidIdentifierError):
        cat.create_database("bad/name")


def test_tables_create_list_open_drop(open_catalog: CatalogFactory) -> None:
    cat = open_catalog()
    with pytest.raises(NoSuchDatabaseError, match="database db does not exist"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    cat.create_table("db.log", schema=SCHEMA)
    with pytest.raises(AlreadyExistsError, match=r"table db\.t already exists"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    again = cat.create_table("db.t", schema=SCHEMA, exist_ok=True)
    assert again.primary_keys == ["id"]  # the existing table, not a new one
    other = open_catalog()
    assert other.list_tables("db") == ["log", "t"]
    assert other.table_exists("db.t") and not other.table_exists("db.nope")
    opened = other.get_table("db.t")
    assert isinstance(opened, Table) and rows(opened) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    snapshots = other.get_table("db.t$snapshots")
    assert isinstance(snapshots, SystemTable) and snapshots.read().num_rows == 1
    with pytest.raises(NoSuchTableError, match=r"table db\.nope does not exist"):
        other.get_table("db.nope")
    with pytest.raises(NoSuchTableError):
        other.get_table("db.nope$snapshots")
    other.drop_table("db.t")
    assert cat.list_tables("db") == ["log"] and not cat.table_exists("db.t")
    with pytest.raises(NoSuchTableError):
        cat.drop_table("db.t")
    cat.drop_table("db.t", ignore_missing=True)
    recreated = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    assert recreated.read().num_rows == 0  # nothing of the dropped table is left


def test_drop_database_needs_cascade_when_not_empty(open_catalog: CatalogFactory) -> None:
    cat = open_catalog()
    cat.create_database("db")
    cat.create_table("db.t", schema=SCHEMA).write(pa.table({"id": [1], "v": ["x"]}))
    with pytest.raises(AlreadyExistsError, match="database db is not empty"):
        cat.drop_database("db")
    assert cat.list_tables("db") == ["t"]
    cat.drop_database("db", cascade=True)
    assert cat.list_databases() == []
    cat.create_database("db")
    assert cat.list_tables("db") == []
    assert cat.create_table("db.t", schema=SCHEMA).read().num_rows == 0


def test_rename_table(open_catalog: CatalogFactory) -> None:
    cat = open_catalog()
    cat.create_database("db")
    cat.create_database("other")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}))
    cat.create_table("db.taken", schema=SCHEMA)
    cat.rename_table("db.t", "db.u")
    assert cat.list_tables("db") == ["taken", "u"]
    assert rows(open_catalog().open_table("db.u")) == [{"id": 1, "v": "a"}]
    cat.rename_table("db.u", "other.t")  # into another database
    assert cat.list_tables("db") == ["taken"] and cat.list_tables("other") == ["t"]
    moved = cat.open_table("other.t")
    moved.write(pa.table({"id": [2], "v": ["b"]}))  # still writable where it went
    assert rows(moved) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    with pytest.raises(AlreadyExistsError, match=r"table db\.taken already exists"):
        cat.rename_table("other.t", "db.taken")
    with pytest.raises(NoSuchTableError, match=r"table db\.t does not exist"):
        cat.rename_table("db.t", "db.v")
    cat.rename_table("db.t", "db.v", ignore_missing=True)
    with pytest.raises(NoSuchDatabaseError, match="database nodb does not exist"):
        cat.rename_table("other.t", "nodb.t")
    assert cat.list_tables("other") == ["t"] and rows(cat.open_table("other.t"))[0]["id"] == 1


def test_alter_table(open_catalog: CatalogFactory) -> None:
    cat = open_catalog()
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}))
    altered = cat.alter_table(
        "db.t", sc.add_column("n", "INT"), sc.set_option("snapshot.num-retained.max", "70")
    )
    assert altered is not None and altered.schema.id == 1
    reopened = open_catalog().open_table("db.t")
    assert reopened.schema.field_names == ["id", "v", "n"]
    assert reopened.options.raw["snapshot.num-retained.max"] == "70"
    reopened.write(pa.table({"id": [2], "v": ["b"], "n": pa.array([5], pa.int32())}))
    assert rows(reopened) == [{"id": 1, "v": "a", "n": None}, {"id": 2, "v": "b", "n": 5}]
    assert cat.alter_table("db.nope", sc.add_column("x", "INT"), ignore_missing=True) is None
    with pytest.raises(NoSuchTableError):
        cat.alter_table("db.nope", sc.add_column("x", "INT"))


def test_two_writers_commit_concurrently(open_catalog: CatalogFactory, kind: str) -> None:
    """Two writers (each its own catalog, as two processes would be) commit to one table at once:
    every commit lands. The JDBC cases hold the catalog lock around each publish."""
    jdbc = kind.startswith("jdbc")
    extra = {"lock.enabled": "true", "lock-check-max-sleep": "20 ms"} if jdbc else {}
    setup = open_catalog(**extra)
    setup.create_database("db")
    setup.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    commits = 6
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def writer(w: int) -> None:
        try:
            table = open_catalog(**extra).open_table("db.t")
            barrier.wait()
            for i in range(commits):
                table.write(pa.table({"id": [w * 100 + i], "v": [f"w{w}"]}))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    table = open_catalog().open_table("db.t")
    assert len(rows(table)) == 2 * commits
    manager = table.snapshot_manager
    appends = [i for i in manager.snapshot_ids() if manager.snapshot(i).commit_kind == "APPEND"]
    assert len(appends) == 2 * commits
