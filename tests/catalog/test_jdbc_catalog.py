"""The JDBC catalog's own behaviour: Paimon's table layout, catalog keys, rows vs directories, a rename that
fails half-way, the distributed lock (timeout, stale locks, publishes on a store without a conditional
put), its options, and the CLI."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import lsmlake
from lsmlake.cli.main import main
from lsmlake.errors import (
    AlreadyExistsError,
    InvalidOptionError,
    LockTimeoutError,
    LsmlakeError,
    NoSuchTableError,
    UnsupportedError,
)
from lsmlake.metastore import JdbcMetastore

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def sqlite_options(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.sqlite'}", **extra}


def columns(db: Path, table: str) -> list[tuple[str, str, int, int]]:
    """(name, type, not null, primary-key position) of each column, as SQLite reports them."""
    with sqlite3.connect(db) as conn:
        return [(r[1], r[2], r[3], r[5]) for r in conn.execute(f"PRAGMA table_info({table})")]


def test_paimon_table_layout(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"), options=sqlite_options(tmp_path, **{"lock.enabled": "true"}))
    cat.create_database("db")
    cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], partition_keys=[], options={"bucket": "2"})
    db = tmp_path / "catalog.sqlite"
    assert columns(db, "paimon_tables") == [
        ("catalog_key", "VARCHAR(255)", 1, 1),
        ("database_name", "VARCHAR(255)", 1, 2),
        ("table_name", "VARCHAR(255)", 1, 3),
    ]
    assert columns(db, "paimon_database_properties") == [
        ("catalog_key", "VARCHAR(255)", 1, 1),
        ("database_name", "VARCHAR(255)", 1, 2),
        ("property_key", "VARCHAR(255)", 0, 3),
        ("property_value", "VARCHAR(1000)", 0, 0),
    ]
    assert [c[0] for c in columns(db, "paimon_table_properties")] == [
        "catalog_key",
        "database_name",
        "table_name",
        "property_key",
        "property_value",
    ]
    assert columns(db, "paimon_distributed_locks") == [
        ("lock_id", "VARCHAR(255)", 1, 1),
        ("acquired_at", "TIMESTAMP", 1, 0),
        ("expire_time_seconds", "BIGINT", 1, 0),
    ]
    with sqlite3.connect(db) as conn:
        props = dict(conn.execute("SELECT property_key, property_value FROM paimon_database_properties"))
        table_props = dict(conn.execute("SELECT property_key, property_value FROM paimon_table_properties"))
        locks = conn.execute("SELECT * FROM paimon_distributed_locks").fetchall()
    assert props == {"exists": "true", "location": str(tmp_path / "wh" / "db.db")}
    assert table_props == {"bucket": "2", "primary-key": "id", "bucket-key": "id"}
    assert locks == []  # released after use
    cat.alter_table("db.t", lsmlake.schema_change.set_option("snapshot.num-retained.max", "50"))
    with sqlite3.connect(db) as conn:
        table_props = dict(conn.execute("SELECT property_key, property_value FROM paimon_table_properties"))
    assert table_props["snapshot.num-retained.max"] == "50"


def test_catalog_keys_and_directories_without_rows(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    a = lsmlake.Catalog(wh, options=sqlite_options(tmp_path, **{"catalog-key": "a"}))
    b = lsmlake.Catalog(wh, options=sqlite_options(tmp_path, **{"catalog-key": "b"}))
    a.create_database("db")
    a.create_table("db.t", schema=SCHEMA)
    assert b.list_databases() == [] and not b.table_exists("db.t")
    fs = lsmlake.Catalog(wh)
    fs.create_table("db.dir_only", schema=SCHEMA)  # a table directory the JDBC catalog has no row for
    assert a.list_tables("db") == ["t"] and not a.table_exists("db.dir_only")
    with pytest.raises(NoSuchTableError):
        a.open_table("db.dir_only")
    with pytest.raises(AlreadyExistsError, match="does not record"):
        a.create_table("db.dir_only", schema=SCHEMA)
    assert fs.open_table("db.dir_only").schema.id == 0  # untouched
    b.create_database("db")
    a.drop_database("db", cascade=True)  # a's tables only: the directory-only table stays
    assert fs.list_tables("db") == ["dir_only"] and b.list_databases() == ["db"]


def test_rename_that_fails_moves_nothing(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    cat = lsmlake.Catalog(str(wh), options=sqlite_options(tmp_path))
    cat.create_database("db")
    cat.create_database("db2")  # recorded, no directory yet
    cat.create_table("db.t", schema=SCHEMA).write(pa.table({"id": [1], "v": ["a"]}))
    (wh / "db2.db").write_text("a file where the database directory would go")
    with pytest.raises(OSError):
        cat.rename_table("db.t", "db2.t")
    assert cat.list_tables("db") == ["t"] and cat.list_tables("db2") == []
    assert cat.open_table("db.t").read().num_rows == 1
    (wh / "db2.db").unlink()
    cat.rename_table("db.t", "db2.t")
    assert cat.open_table("db2.t").read().num_rows == 1 and not (wh / "db.db" / "t").exists()


def test_lock_timeout_and_stale_locks(tmp_path: Path) -> None:
    options = sqlite_options(
        tmp_path, **{"lock.enabled": "true", "lock-acquire-timeout": "1 s", "lock-check-max-sleep": "50 ms"}
    )
    cat = lsmlake.Catalog(str(tmp_path / "wh"), options=options)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA)
    # the holder's row expires after its own lock-acquire-timeout (as in Paimon): a long one, so that
    # the writer's short wait cannot end by taking over a lock it sees as stale
    holder_options = {**options, "lock-acquire-timeout": "60 s"}
    other = lsmlake.Catalog(str(tmp_path / "wh"), options=holder_options).metastore
    assert isinstance(other, JdbcMetastore)
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with other.lock("db", "t"):
            held.set()
            release.wait(10)

    th = threading.Thread(target=holder)
    th.start()
    held.wait(10)
    start = time.monotonic()
    with pytest.raises(LockTimeoutError, match=r"jdbc\.db\.t"):
        t.write(pa.table({"id": [1], "v": ["a"]}))
    assert time.monotonic() - start > 0.9  # it waited for the lock
    assert t.snapshot_manager.latest_id() is None  # nothing published
    release.set()
    th.join()
    t.write(pa.table({"id": [1], "v": ["a"]}))
    # a lock row older than its expiry (a crashed holder) is taken over
    with sqlite3.connect(tmp_path / "catalog.sqlite") as conn:
        conn.execute(
            "INSERT INTO paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds) "
            "VALUES ('jdbc.db.t', '2000-01-01 00:00:00', 1)"
        )
    t.write(pa.table({"id": [2], "v": ["b"]}))
    assert t.read().num_rows == 2


def test_object_store_without_conditional_put_publishes_under_the_lock(tmp_path: Path) -> None:
    """pyarrow's mock filesystem has no conditional put: the filesystem catalog refuses a create-only
    publish; the JDBC catalog (lock.enabled defaults to on for object stores, as in Paimon) publishes
    under the table's lock, and of writers racing for one snapshot file exactly one wins."""
    plain = lsmlake.Catalog("mock:///wh")
    plain.create_database("db")
    with pytest.raises(LsmlakeError, match="needs a conditional put"):
        plain.create_table("db.t", schema=SCHEMA)
    cat = lsmlake.Catalog("mock:///wh", options=sqlite_options(tmp_path, **{"lock-check-max-sleep": "10 ms"}))
    cat.create_database("db")
    table = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    assert table.schema.id == 0
    target = table.paths.root + "/snapshot/snapshot-1"
    barrier = threading.Barrier(4)
    won: list[int] = []

    def publisher(w: int) -> None:
        barrier.wait()
        if cat.io.write_if_absent(target, f"writer {w}".encode()):
            won.append(w)

    threads = [threading.Thread(target=publisher, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(won) == 1 and cat.io.read_bytes(target) == f"writer {won[0]}".encode()
    with sqlite3.connect(tmp_path / "catalog.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM paimon_distributed_locks").fetchone() == (0,)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"metastore": "jdbc"}, InvalidOptionError, "needs the catalog option 'uri'"),
        ({"metastore": "jdbc", "uri": "jdbc:mysql://h/db"}, UnsupportedError, "SQLite and PostgreSQL only"),
        ({"metastore": "jdbc", "uri": "http://x"}, InvalidOptionError, "not a JDBC URI"),
        ({"metastore": "jdbc", "uri": "jdbc:sqlite::memory:"}, InvalidOptionError, "in-memory"),
        ({"uri": "jdbc:sqlite:x.db"}, InvalidOptionError, "need metastore=jdbc"),
        (
            {"metastore": "jdbc", "uri": "jdbc:sqlite:x.db", "lock.enabled": "yes"},
            InvalidOptionError,
            "lock.enabled",
        ),
        (
            {"metastore": "jdbc", "uri": "jdbc:sqlite:x.db", "lock-acquire-timeout": "soon"},
            InvalidOptionError,
            "lock-acquire-timeout",
        ),
        (
            {"metastore": "jdbc", "uri": "jdbc:sqlite:x.db", "jdbc.journal": "wal"},
            InvalidOptionError,
            "jdbc.journal",
        ),
        (
            {"metastore": "jdbc", "uri": "jdbc:postgresql://h/db", "jdbc.ssl": "true"},
            InvalidOptionError,
            "ssl",
        ),
        (
            {"metastore": "jdbc", "uri": "jdbc:sqlite:x.db", "lock.type": "zookeeper"},
            InvalidOptionError,
            "lock.type",
        ),
    ],
)
def test_bad_options_are_named(
    tmp_path: Path, options: dict[str, str], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        lsmlake.Catalog(str(tmp_path / "wh"), options=options)
    assert not (tmp_path / "wh").exists()


def test_cli_and_sql_on_a_jdbc_catalog(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    uri = f"jdbc:sqlite:{tmp_path / 'catalog.sqlite'}"
    sql = (
        "CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING); "
        "INSERT INTO db.t VALUES (1, 'a'), (2, 'b'); ALTER TABLE db.t ADD n INT; ALTER TABLE db.t RENAME TO u"
    )
    run = CliRunner().invoke(main, ["-w", wh, "-C", "metastore=jdbc", "-C", f"uri={uri}", "sql", sql])
    assert run.exit_code == 0, run.output
    cat = lsmlake.Catalog(wh, options={"metastore": "jdbc", "uri": uri})
    assert cat.list_tables("db") == ["u"] and cat.open_table("db.u").read().num_rows == 2
    with sqlite3.connect(tmp_path / "catalog.sqlite") as conn:
        assert conn.execute("SELECT database_name, table_name FROM paimon_tables").fetchall() == [("db", "u")]
        keys = {r[0] for r in conn.execute("SELECT property_key FROM paimon_table_properties")}
    assert {"primary-key", "bucket-key"} <= keys
    assert lsmlake.Catalog(wh).list_tables("db") == ["u"]  # the same directories, as Paimon lays them out
