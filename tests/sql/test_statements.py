"""Every SQL statement kind against a real warehouse; table contents are checked through the Python API."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import AlreadyExistsError, NoSuchSnapshotError, NoSuchTableError, UnsupportedError
from lsmlake.maintenance import list_tags
from lsmlake.sql import Result, Session, SqlError, execute
from lsmlake.system.registry import read_system_table
from lsmlake.table import Table

USERS = """
CREATE TABLE db.users (
  id INT, name STRING, age INT, dt STRING,
  PRIMARY KEY (id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH ('bucket' = '2');
INSERT INTO db.users VALUES (1, 'ann', 31, 'a'), (2, 'bob', 42, 'a'), (3, 'cy', 23, 'b'), (4, 'di', 54, 'b');
"""


def run(catalog: lsmlake.Catalog, text: str, database: str = "db") -> list[Result]:
    return execute(catalog, text, database=database)


def one(catalog: lsmlake.Catalog, text: str) -> Result:
    (result,) = run(catalog, text)
    return result


def table(catalog: lsmlake.Catalog, identifier: str) -> Table:
    t = catalog.get_table(identifier)
    assert isinstance(t, Table)
    return t


def contents(catalog: lsmlake.Catalog, identifier: str, key: str = "id") -> list[dict[str, Any]]:
    return table(catalog, identifier).read().sort_by(key).to_pylist()


def snapshot_count(catalog: lsmlake.Catalog, identifier: str) -> int:
    return len(table(catalog, identifier).snapshot_manager.snapshot_ids())


@pytest.fixture
def users(catalog: lsmlake.Catalog) -> lsmlake.Catalog:
    run(catalog, USERS)
    return catalog


# --------------------------------------------------------------------------- catalog statements


def test_databases_use_and_show(catalog: lsmlake.Catalog) -> None:
    session = Session(catalog)
    results = session.execute(
        "CREATE DATABASE IF NOT EXISTS shop; CREATE DATABASE IF NOT EXISTS shop; USE shop;"
        "CREATE TABLE t (id INT PRIMARY KEY NOT ENFORCED, v STRING) WITH ('bucket'='1');"
        "SHOW DATABASES; SHOW TABLES; SHOW TABLES FROM db; SHOW DATABASES LIKE 'sh%'"
    )
    assert [r.kind for r in results] == [
        "create database",
        "create database",
        "use",
        "create table",
        "show databases",
        "show tables",
        "show tables",
        "show databases",
    ]
    assert session.database == "shop" and catalog.table_exists("shop.t")
    assert results[4].rows == [{"database_name": "db"}, {"database_name": "shop"}]
    assert results[5].rows == [{"table_name": "t"}] and results[6].rows == []
    assert results[7].rows == [{"database_name": "shop"}]
    with pytest.raises(AlreadyExistsError, match="statement 1"):
        session.execute("CREATE DATABASE shop")
    session.execute("DROP TABLE t; DROP DATABASE shop")
    assert catalog.list_databases() == ["db"] and session.database == "default"


def test_create_table_types_keys_partitions_options(catalog: lsmlake.Catalog) -> None:
    one(
        catalog,
        """
        CREATE TABLE IF NOT EXISTS db.orders (
          `id` BIGINT NOT NULL COMMENT 'order id',
          dt DATE, amount DECIMAL(10, 2), ts TIMESTAMP(3), ltz TIMESTAMP(6) WITH LOCAL TIME ZONE,
          flag BOOLEAN, raw BYTES, tags ARRAY<STRING>, attrs MAP<STRING, INT>,
          addr ROW<city STRING, zip INT>, f FLOAT, d DOUBLE, s SMALLINT, b TINYINT,
          CONSTRAINT pk PRIMARY KEY (id, dt) NOT ENFORCED
        ) COMMENT 'the orders' PARTITIONED BY (dt)
        WITH ('bucket' = '4', 'deletion-vectors.enabled' = 'true', 'file.format' = 'parquet')
    """,
    )
    s = table(catalog, "db.orders").schema
    assert s.primary_keys == ("id", "dt") and s.partition_keys == ("dt",) and s.comment == "the orders"
    assert dict(s.options) == {"bucket": "4", "deletion-vectors.enabled": "true", "file.format": "parquet"}
    roots = {f.name: f.type.root for f in s.fields}
    assert roots == {
        "id": "BIGINT",
        "dt": "DATE",
        "amount": "DECIMAL",
        "ts": "TIMESTAMP",
        "ltz": "TIMESTAMP_LTZ",
        "flag": "BOOLEAN",
        "raw": "VARBINARY",
        "tags": "ARRAY",
        "attrs": "MAP",
        "addr": "ROW",
        "f": "FLOAT",
        "d": "DOUBLE",
        "s": "SMALLINT",
        "b": "TINYINT",
    }
    assert s.field("amount").type.precision == 10 and s.field("ts").type.precision == 3
    assert not s.field("dt").type.nullable  # primary-key columns become NOT NULL
    assert [f.name for f in s.field("addr").type.fields] == ["city", "zip"]
    # IF NOT EXISTS is quiet; without it the error names the statement
    assert "already exists" in one(catalog, "CREATE TABLE IF NOT EXISTS db.orders (x INT)").message
    with pytest.raises(AlreadyExistsError, match=r"statement 1 .*db\.orders already exists"):
        run(catalog, "CREATE TABLE db.orders (x INT)")


def test_describe_and_show_create_table_round_trip(users: lsmlake.Catalog) -> None:
    desc = one(users, "DESCRIBE db.users").rows
    assert [(r["name"], r["type"], r["primary_key"], r["partition_key"]) for r in desc] == [
        ("id", "INT", True, False),
        ("name", "STRING", False, False),
        ("age", "INT", False, False),
        ("dt", "STRING", True, True),
    ]
    ddl = one(users, "SHOW CREATE TABLE users").message
    users.create_database("copy")
    run(users, ddl.replace("`db`.`users`", "copy.users"))
    original, copy = table(users, "db.users").schema, table(users, "copy.users").schema
    assert (copy.fields, copy.primary_keys, copy.partition_keys, dict(copy.options)) == (
        original.fields,
        original.primary_keys,
        original.partition_keys,
        dict(original.options),
    )
    sys_desc = one(users, "DESC users$snapshots").rows
    assert sys_desc[0]["name"] == "snapshot_id"


def test_spark_style_ddl_and_ctas(users: lsmlake.Catalog) -> None:
    run(
        users,
        "CREATE TABLE db.s (id BIGINT, v STRING, p STRING) USING paimon PARTITIONED BY (p) "
        "TBLPROPERTIES ('primary-key' = 'id,p', 'bucket' = '1')",
    )
    s = table(users, "db.s").schema
    assert s.primary_keys == ("id", "p") and s.partition_keys == ("p",) and "primary-key" not in s.options
    result = one(
        users,
        "CREATE TABLE db.adults WITH ('primary-key' = 'id', 'bucket' = '1') AS "
        "SELECT id, name FROM db.users WHERE age > 40",
    )
    assert result.snapshot_id == 1
    assert contents(users, "db.adults") == [{"id": 2, "name": "bob"}, {"id": 4, "name": "di"}]
    assert table(users, "db.adults").primary_keys == ["id"]


def test_drop_table(users: lsmlake.Catalog) -> None:
    assert one(users, "DROP TABLE IF EXISTS db.nope").message == "table db.nope does not exist"
    one(users, "DROP TABLE db.users")
    assert not users.table_exists("db.users")
    with pytest.raises(NoSuchTableError):
        run(users, "DROP TABLE db.users")


# --------------------------------------------------------------------------- writes


def test_insert_values_upserts_and_casts(catalog: lsmlake.Catalog) -> None:
    run(
        catalog,
        "CREATE TABLE db.t (id INT, d DATE, amount DECIMAL(8, 2), ts TIMESTAMP(3), note STRING,"
        " PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    r = one(catalog, "INSERT INTO db.t VALUES (1, '2024-01-31', 1.5, '2024-01-31 10:00:00.123', 'it''s')")
    assert r.kind == "insert" and r.snapshot_id == 1 and "inserted 1 row" in r.message
    one(catalog, "INSERT INTO db.t (note, id) VALUES ('two', 2), ('one again', 1)")  # upsert of id 1
    assert contents(catalog, "db.t") == [
        {"id": 1, "d": None, "amount": None, "ts": None, "note": "one again"},
        {"id": 2, "d": None, "amount": None, "ts": None, "note": "two"},
    ]
    one(catalog, "INSERT INTO db.t SELECT 3, DATE '2024-02-01', 10, TIMESTAMP '2024-02-01 00:00:00', NULL")
    row = contents(catalog, "db.t")[2]
    assert row == {
        "id": 3,
        "d": dt.date(2024, 2, 1),
        "amount": Decimal("10.00"),
        "ts": dt.datetime(2024, 2, 1),
        "note": None,
    }
    assert snapshot_count(catalog, "db.t") == 3


def test_insert_select_and_static_partition(users: lsmlake.Catalog) -> None:
    run(
        users,
        "CREATE TABLE db.names (id INT, name STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '1')",
    )
    one(users, "INSERT INTO db.names SELECT id, upper(name), dt FROM db.users WHERE age < 40")
    one(users, "INSERT INTO db.names PARTITION (dt = 'z') VALUES (9, 'zed')")
    assert [(r["id"], r["name"], r["dt"]) for r in contents(users, "db.names")] == [
        (1, "ANN", "a"),
        (3, "CY", "b"),
        (9, "zed", "z"),
    ]


def test_insert_errors(users: lsmlake.Catalog) -> None:
    with pytest.raises(SqlError, match=r"statement 1 .*gives 2 column\(s\) but 4 are expected"):
        run(users, "INSERT INTO db.users VALUES (1, 'x')")
    with pytest.raises(SqlError, match="no column 'nope'"):
        run(users, "INSERT INTO db.users (id, nope) VALUES (1, 2)")
    with pytest.raises(lsmlake.errors.SchemaMismatchError, match="primary key column id"):
        run(users, "INSERT INTO db.users (name, dt) VALUES ('x', 'a')")
    with pytest.raises(SqlError, match="read-only"):
        run(users, "INSERT INTO db.users$files VALUES (1)")


def test_update_with_expressions(users: lsmlake.Catalog) -> None:
    before = snapshot_count(users, "db.users")
    r = one(users, "UPDATE db.users SET age = age * 2, name = concat(name, '!') WHERE dt = 'a' AND age > 35")
    assert "updated 1 row(s)" in r.message and snapshot_count(users, "db.users") == before + 1
    rows = {r["id"]: (r["name"], r["age"]) for r in contents(users, "db.users")}
    assert rows == {1: ("ann", 31), 2: ("bob!", 84), 3: ("cy", 23), 4: ("di", 54)}
    one(users, "UPDATE db.users u SET u.age = 0 WHERE u.id IN (SELECT id FROM db.users WHERE name = 'cy')")
    assert {r["id"]: r["age"] for r in contents(users, "db.users")}[3] == 0
    assert one(users, "UPDATE db.users SET age = 1 WHERE id = 99").snapshot_id is None
    with pytest.raises(SqlError, match=r"primary-key column\(s\) \['id'\]"):
        run(users, "UPDATE db.users SET id = 5 WHERE id = 1")


def test_delete(users: lsmlake.Catalog) -> None:
    r = one(users, "DELETE FROM db.users WHERE age > 40 AND dt = 'a'")
    assert r.kind == "delete" and "deleted 1 row(s)" in r.message
    assert [r["id"] for r in contents(users, "db.users")] == [1, 3, 4]
    one(users, "DELETE FROM db.users WHERE name IN (SELECT 'cy')")
    assert [r["id"] for r in contents(users, "db.users")] == [1, 4]
    one(users, "DELETE FROM db.users")
    assert contents(users, "db.users") == []


def test_delete_needs_a_primary_key(catalog: lsmlake.Catalog) -> None:
    run(catalog, "CREATE TABLE db.log (v INT) WITH ('bucket' = '-1')")
    with pytest.raises(UnsupportedError, match="no primary key"):
        run(catalog, "DELETE FROM db.log WHERE v = 1")


def test_merge_into(users: lsmlake.Catalog) -> None:
    before = snapshot_count(users, "db.users")
    r = one(
        users,
        """
        MERGE INTO db.users AS t
        USING (SELECT * FROM (VALUES (1, 'a', 'ANN', 0, 'u'), (2, 'a', NULL, 0, 'd'),
                                     (7, 'c', 'gus', 70, 'i')) AS v(id, dt, name, age, op)) AS s
        ON t.id = s.id AND t.dt = s.dt
        WHEN MATCHED AND s.op = 'd' THEN DELETE
        WHEN MATCHED THEN UPDATE SET name = s.name, age = t.age + 1
        WHEN NOT MATCHED THEN INSERT (id, dt, name, age) VALUES (s.id, s.dt, s.name, s.age)
    """,
    )
    assert r.kind == "merge" and "2 row(s) upserted, 1 deleted" in r.message
    assert snapshot_count(users, "db.users") == before + 1  # one commit
    assert [(r["id"], r["name"], r["age"]) for r in contents(users, "db.users")] == [
        (1, "ANN", 32),
        (3, "cy", 23),
        (4, "di", 54),
        (7, "gus", 70),
    ]
    one(
        users,
        "MERGE INTO db.users t USING db.users s ON t.id = s.id AND t.dt = s.dt AND s.id = 3 "
        "WHEN NOT MATCHED BY SOURCE AND t.age > 60 THEN DELETE",
    )
    assert [r["id"] for r in contents(users, "db.users")] == [1, 3, 4]


def test_merge_rejects_ambiguous_matches_and_key_updates(users: lsmlake.Catalog) -> None:
    with pytest.raises(SqlError, match="matched more than one source row"):
        run(
            users,
            "MERGE INTO db.users t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET age = 0",
        )
    with pytest.raises(SqlError, match="cannot be updated"):
        run(
            users, "MERGE INTO db.users t USING db.users s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 1"
        )
    assert snapshot_count(users, "db.users") == 1


# --------------------------------------------------------------------------- queries


def test_select_join_and_aggregate(users: lsmlake.Catalog) -> None:
    run(
        users,
        "CREATE TABLE db.orders (oid INT, uid INT, amount DOUBLE, PRIMARY KEY (oid) NOT ENFORCED) "
        "WITH ('bucket' = '2');"
        "INSERT INTO db.orders VALUES (10, 1, 5.0), (11, 1, 7.5), (12, 3, 1.0), (13, 9, 100.0)",
    )
    r = one(
        users,
        """
        SELECT u.name, count(*) AS n, sum(o.amount) AS total
        FROM users u JOIN orders o ON o.uid = u.id
        WHERE u.dt IN ('a', 'b')
        GROUP BY u.name ORDER BY total DESC
    """,
    )
    assert r.kind == "select" and r.rows == [
        {"name": "ann", "n": 2, "total": 12.5},
        {"name": "cy", "n": 1, "total": 1.0},
    ]
    left = one(
        users,
        "SELECT o.oid, u.name FROM orders o LEFT JOIN users u ON o.uid = u.id "
        "WHERE o.amount > 50 ORDER BY o.oid",
    ).rows
    assert left == [{"oid": 13, "name": None}]
    run(
        users,
        "CREATE TABLE db.bonus (id INT, dt STRING, amount INT, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "WITH ('bucket' = '1'); INSERT INTO db.bonus VALUES (1, 'a', 5), (1, 'b', 6)",
    )
    natural = one(users, "SELECT name, amount FROM users NATURAL JOIN bonus").rows  # joins on id and dt
    assert natural == [{"name": "ann", "amount": 5}]


def test_system_tables_by_every_spelling(users: lsmlake.Catalog) -> None:
    t = table(users, "db.users")
    files = read_system_table(t, "files")
    for spelling in (
        "db.users$files",
        "db.`users$files`",
        "`db`.`users$files`",
        '"db"."users$files"',
        "users$files",
    ):
        r = one(users, f"SELECT count(*) AS n, sum(record_count) AS records FROM {spelling}")
        assert r.rows == [{"n": files.num_rows, "records": 4}], spelling
    snaps = one(users, "SELECT snapshot_id, commit_kind FROM db.`users$snapshots`").rows
    assert snaps == [{"snapshot_id": 1, "commit_kind": "APPEND"}]
    joined = one(
        users,
        "SELECT DISTINCT f.bucket FROM users$files f JOIN users$buckets b ON f.bucket = b.bucket ORDER BY 1",
    ).rows
    assert [r["bucket"] for r in joined] == sorted(set(files.column("bucket").to_pylist()))
    audit = one(users, "SELECT rowkind, count(*) AS n FROM users$audit_log GROUP BY rowkind").rows
    assert [r["rowkind"] for r in audit] == ["+I"]
    binlog = one(users, "SELECT rowkind, count(*) AS n FROM users$binlog GROUP BY rowkind").rows
    assert binlog == [{"rowkind": "+I", "n": audit[0]["n"]}]


def test_time_travel(users: lsmlake.Catalog) -> None:
    t = table(users, "db.users")
    run(users, "DELETE FROM users WHERE id = 1; UPDATE users SET age = 0 WHERE id = 2")
    at_1 = [1, 2, 3, 4]
    assert [r["id"] for r in one(users, "SELECT id FROM users VERSION AS OF 1 ORDER BY id").rows] == at_1
    hinted = one(users, "SELECT id FROM users /*+ OPTIONS('scan.snapshot-id'='2') */ ORDER BY id").rows
    assert [r["id"] for r in hinted] == [2, 3, 4]
    millis = t.snapshot_manager.snapshot(1).time_millis
    stamp = dt.datetime.fromtimestamp(millis / 1000).isoformat(sep=" ")
    travelled = one(users, f"SELECT id FROM users FOR SYSTEM_TIME AS OF TIMESTAMP '{stamp}' ORDER BY id").rows
    assert [r["id"] for r in travelled] == at_1
    one(users, "CALL sys.create_tag(`table` => 'db.users', tag => 'first', snapshot_id => 1)")
    tagged = one(users, "SELECT id FROM users VERSION AS OF 'first' ORDER BY id").rows
    assert [r["id"] for r in tagged] == at_1
    tag_hint = one(users, "SELECT count(*) AS n FROM users /*+ OPTIONS('scan.tag-name'='first') */").rows
    assert tag_hint == [{"n": 4}]
    old_files = one(users, "SELECT count(*) AS n FROM users$files VERSION AS OF 1").rows
    assert old_files == [{"n": read_system_table(t, "files", snapshot_id=1).num_rows}]
    with pytest.raises(NoSuchSnapshotError):
        run(users, "SELECT * FROM users FOR SYSTEM_TIME AS OF TIMESTAMP '2000-01-01 00:00:00'")
    with pytest.raises(SqlError, match="cannot write to an older version"):
        run(users, "INSERT INTO users /*+ OPTIONS('scan.snapshot-id'='1') */ SELECT * FROM users")


def test_filter_and_projection_pushdown(users: lsmlake.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    original = Table.read

    def spy(self: Table, **kwargs: Any) -> pa.Table:
        calls.append(kwargs)
        return original(self, **kwargs)

    monkeypatch.setattr(Table, "read", spy)
    r = one(users, "SELECT name FROM users WHERE id = 2 AND age + 1 > 3 AND upper(name) = 'BOB'")
    assert r.rows == [{"name": "bob"}]
    assert calls[-1]["filter"] == "(id = 2)" and calls[-1]["columns"] == ["id", "name", "age"]
    one(users, "SELECT a.name FROM users a JOIN users b ON a.id = b.id WHERE a.dt = 'a' AND b.age < 40")
    assert [c["filter"] for c in calls[-2:]] == ["(dt = 'a')", "(age < 40)"]
    one(users, "SELECT count(*) FROM users")
    assert calls[-1]["columns"] == ["id"] and calls[-1]["filter"] is None
    one(users, "SELECT * FROM users LIMIT 2")
    assert calls[-1]["limit"] == 2 and calls[-1]["columns"] is None
    one(users, "SELECT v.name FROM users v FULL JOIN users w ON v.id = w.id WHERE v.id = 1")
    assert all(c["filter"] is None for c in calls[-2:])  # no pushdown into null-extended sides
    # a pushed value filter must not resurrect an older version of a key (bob was 42, now 10)
    run(users, "UPDATE users SET age = 10 WHERE id = 2")
    assert one(users, "SELECT id FROM users WHERE age > 40").rows == [{"id": 4}]
    assert calls[-1]["filter"] == "(age > 40)"


def test_explain(users: lsmlake.Catalog) -> None:
    r = one(users, "EXPLAIN SELECT name FROM users WHERE id = 1")
    assert r.kind == "explain"
    assert "db.users AS users: snapshot latest, columns ['id', 'name'], filter (id = 1)" in r.message
    assert "DuckDB runs:" in r.message
    assert table(users, "db.users").explain(filter="(id = 1)") in r.message.replace("\n  ", "\n")


# --------------------------------------------------------------------------- procedures


def test_call_compact_tags_rollback(users: lsmlake.Catalog) -> None:
    t = table(users, "db.users")
    r = one(users, "CALL sys.compact(table => 'db.users')")
    assert r.kind == "call" and r.rows[0]["result"] is True
    latest = t.snapshot_manager.latest()
    assert latest is not None and latest.commit_kind == "COMPACT" and latest.id == 2
    assert all(f["level"] > 0 for f in read_system_table(t, "files").to_pylist())  # full by default (batch)
    one(users, "CALL sys.create_tag('db.users', 'v2')")
    one(users, "CALL sys.create_tag(`table` => 'db.users', tag => 'v1', snapshot => 1)")
    assert [(g.name, g.snapshot.id) for g in list_tags(t)] == [("v1", 1), ("v2", 2)]
    run(users, "DELETE FROM users WHERE id = 1")
    r = one(users, "CALL sys.rollback_to(`table` => 'db.users', snapshot_id => 2)")
    assert r.rows == [{"previous_snapshot_id": 3, "current_snapshot_id": 2}]
    assert len(contents(users, "db.users")) == 4
    one(users, "CALL sys.rollback(table => 'db.users', version => 'v1')")
    assert t.snapshot_manager.latest_id() == 1
    one(users, "CALL sys.delete_tag('db.users', 'v1')")
    assert list_tags(t) == []
    with pytest.raises(UnsupportedError, match="unknown procedure"):
        run(users, "CALL sys.nope('db.users')")
    with pytest.raises(UnsupportedError, match="not supported by lsmlake yet"):
        run(users, "CALL sys.compact(table => 'db.users', order_strategy => 'zorder', order_by => 'id')")


def test_call_expire_snapshots_and_orphans(users: lsmlake.Catalog) -> None:
    for age in (1, 2, 3):
        run(users, f"UPDATE users SET age = {age} WHERE id = 1")
    t = table(users, "db.users")
    r = one(
        users,
        "CALL sys.expire_snapshots(table => 'db.users', retain_max => 5, retain_min => 2, "
        "older_than => '2999-01-01 00:00:00')",
    )
    assert r.rows == [{"deleted_snapshots_count": 2}]
    assert t.snapshot_manager.snapshot_ids() == [3, 4]
    stray = Path(t.root) / "dt=a" / "bucket-0" / "data-stray.parquet"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"junk")
    old = stray.stat().st_mtime - 3 * 86400
    os.utime(stray, (old, old))
    dry = one(users, "CALL sys.remove_orphan_files(table => 'db.users', dry_run => true)")
    assert dry.rows == [{"deletedFileCount": 1}] and stray.exists()
    one(users, "CALL sys.remove_orphan_files('db.users')")
    assert not stray.exists()
    assert len(contents(users, "db.users")) == 4


# --------------------------------------------------------------------------- scripts and errors


def test_script_results_and_error_names_the_statement(users: lsmlake.Catalog) -> None:
    results = run(users, "-- a comment; with a semicolon\nSELECT 1 AS x; /* block; */ SELECT 'a;b' AS y;")
    assert [r.rows for r in results] == [[{"x": 1}], [{"y": "a;b"}]]
    with pytest.raises(SqlError, match=r"statement 2 \(line 2: SELECT nope FROM users\): query failed"):
        run(users, "SELECT 1;\nSELECT nope FROM users")
    with pytest.raises(SqlError, match="cannot parse"):
        run(users, "SELECT * FROM users WHERE")
    with pytest.raises(SqlError, match="unsupported statement starting with 'FROBNICATE'"):
        run(users, "FROBNICATE users")
    with pytest.raises(NoSuchTableError, match=r"db\.nope does not exist"):
        run(users, "SELECT * FROM nope")
    with pytest.raises(SqlError, match="unterminated string"):
        run(users, "SELECT 'oops")
    with pytest.raises(SqlError, match="TRUNCATE needs one table"):
        run(users, "TRUNCATE TABLE")


def test_insert_overwrite_and_truncate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from lsmlake.sql import execute as run_sql

    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    run_sql(
        cat,
        """
        CREATE TABLE p (id BIGINT, dt STRING, v INT, PRIMARY KEY (dt, id) NOT ENFORCED)
            PARTITIONED BY (dt) WITH ('bucket' = '2');
        INSERT INTO p VALUES (1, 'a', 1), (2, 'a', 2), (1, 'b', 3);
        INSERT OVERWRITE p VALUES (9, 'a', 90);
    """,
    )
    t = cat.open_table("default.p")
    assert sorted((r["dt"], r["id"]) for r in t.read().to_pylist()) == [("a", 9), ("b", 1)]
    run_sql(cat, "INSERT OVERWRITE p PARTITION (dt = 'b') SELECT 7, 70")
    assert sorted((r["dt"], r["id"], r["v"]) for r in t.read().to_pylist()) == [("a", 9, 90), ("b", 7, 70)]
    run_sql(cat, "TRUNCATE TABLE p")
    assert t.read().num_rows == 0
