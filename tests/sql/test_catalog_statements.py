"""CREATE / USE / SHOW / DROP CATALOG as Flink spells them: a session opens more catalogs by name
(a filesystem and a JDBC one here; the REST one in tests/java/test_java_rest_catalog.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import lsmlake
from lsmlake.errors import AlreadyExistsError, InvalidOptionError, UnsupportedError
from lsmlake.sql import Session, SqlError


def test_create_and_use_catalogs(tmp_path: Path) -> None:
    session = Session(lsmlake.Catalog(str(tmp_path / "first")))
    other, jdbc = tmp_path / "other", tmp_path / "jdbc"
    session.execute(
        f"CREATE CATALOG fs WITH ('type' = 'paimon', 'warehouse' = '{other}');"
        f"CREATE CATALOG IF NOT EXISTS fs WITH ('warehouse' = '{other}');"
        f"CREATE CATALOG j WITH ('type' = 'paimon', 'warehouse' = '{jdbc}', 'metastore' = 'jdbc', "
        f"'uri' = 'jdbc:sqlite:{tmp_path / 'c.sqlite'}', 'table-default.bucket' = '2');"
        "CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING);"
        "INSERT INTO db.t VALUES (1, 'first');"
        "USE CATALOG fs; CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING);"
        "INSERT INTO fs.db.t VALUES (2, 'fs');"
        "USE CATALOG j; CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING);"
        "INSERT INTO db.t VALUES (3, 'jdbc')"
    )
    assert session.ctx.catalog_name == "j"
    (shown,) = session.execute("SHOW CATALOGS")
    assert shown.rows == [{"catalog name": n} for n in ("default_catalog", "fs", "j")]
    first = lsmlake.Catalog(str(tmp_path / "first")).open_table("db.t").read().to_pylist()
    in_fs = lsmlake.Catalog(str(other)).open_table("db.t").read().to_pylist()
    j = lsmlake.Catalog(
        str(jdbc), options={"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'c.sqlite'}"}
    ).open_table("db.t")
    assert (first, in_fs, j.read().to_pylist()) == (
        [{"id": 1, "v": "first"}],
        [{"id": 2, "v": "fs"}],
        [{"id": 3, "v": "jdbc"}],
    )
    assert j.options.raw["bucket"] == "2"  # the catalog's table-default.*
    with pytest.raises(UnsupportedError, match="is in catalog fs, not in the current one"):
        session.execute("SELECT * FROM fs.db.t")  # another catalog's table: never this one's db.t
    (row,) = session.execute("SELECT v FROM j.db.t")
    assert row.rows == [{"v": "jdbc"}]
    with pytest.raises(AlreadyExistsError, match="catalog fs already exists"):
        session.execute(f"CREATE CATALOG fs WITH ('warehouse' = '{other}')")
    with pytest.raises(SqlError, match="catalog j is in use"):
        session.execute("DROP CATALOG j")
    session.execute("USE CATALOG default_catalog; DROP CATALOG fs; DROP CATALOG IF EXISTS fs")
    with pytest.raises(SqlError, match="catalog fs does not exist"):
        session.execute("USE CATALOG fs")


def test_bad_catalog_definitions_are_refused(tmp_path: Path) -> None:
    session = Session(lsmlake.Catalog(str(tmp_path)))
    with pytest.raises(UnsupportedError, match="'type' = 'hive'"):
        session.execute(f"CREATE CATALOG h WITH ('type' = 'hive', 'warehouse' = '{tmp_path}')")
    with pytest.raises(InvalidOptionError, match="'warehouse' is required"):
        session.execute("CREATE CATALOG w WITH ('type' = 'paimon')")
    with pytest.raises(InvalidOptionError, match=r"unknown catalog option\(s\) \['nope'\]"):
        session.execute(f"CREATE CATALOG x WITH ('warehouse' = '{tmp_path}', 'nope' = '1')")
    (shown,) = session.execute("SHOW CATALOGS")
    assert shown.rows == [{"catalog name": "default_catalog"}]


def test_a_catalog_prefix_names_a_known_catalog(tmp_path: Path) -> None:
    """``typo.db.t`` or a dropped catalog's name is an error, never the current catalog's ``db.t``."""
    first, other = tmp_path / "first", tmp_path / "other"
    session = Session(lsmlake.Catalog(str(first)))
    session.execute(
        f"CREATE CATALOG fs WITH ('warehouse' = '{other}');"
        "CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING);"
        "INSERT INTO default_catalog.db.t VALUES (1, 'first');"
        "USE CATALOG fs; CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING);"
        "USE CATALOG default_catalog; DROP CATALOG fs"
    )
    for statement in (
        "INSERT INTO fs.db.t VALUES (2, 'lost')",
        "SELECT * FROM typo.db.t",
        "CREATE TABLE fs.db.u (id BIGINT)",
        "DROP TABLE fs.db.t",
        "USE fs.db",
        "SHOW TABLES FROM typo.db",
        "CALL sys.create_tag(`table` => 'fs.db.t', tag => 'x')",
    ):
        with pytest.raises(SqlError, match=r"catalog (fs|typo) does not exist"):
            session.execute(statement)
    assert session.ctx.catalog_name == "default_catalog" and session.database == "default"
    assert lsmlake.Catalog(str(first)).open_table("db.t").read().to_pylist() == [{"id": 1, "v": "first"}]
    assert lsmlake.Catalog(str(first)).list_tables("db") == ["t"]
    assert lsmlake.Catalog(str(other)).open_table("db.t").read().num_rows == 0


def test_use_catalog_dot_database_switches_both(tmp_path: Path) -> None:
    """Flink's ``USE catalog.db``; another catalog's table in a statement is refused, not misread."""
    other = tmp_path / "other"
    session = Session(lsmlake.Catalog(str(tmp_path / "first")))
    session.execute(
        f"CREATE CATALOG fs WITH ('warehouse' = '{other}'); CREATE DATABASE db;"
        "CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING);"
        "USE CATALOG fs; CREATE DATABASE db2; CREATE TABLE db2.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING);"
        "USE CATALOG default_catalog"
    )
    with pytest.raises(UnsupportedError, match="is in catalog fs, not in the current one"):
        session.execute("INSERT INTO fs.db2.t VALUES (1, 'x')")
    with pytest.raises(UnsupportedError, match=r"database fs\.db2 is in catalog fs"):
        session.execute("SHOW TABLES FROM fs.db2")
    with pytest.raises(lsmlake.errors.NoSuchDatabaseError, match=r"database fs\.db does not exist"):
        session.execute("USE fs.db")
    assert session.ctx.catalog_name == "default_catalog"
    session.execute("USE fs.db2; INSERT INTO t VALUES (2, 'fs')")
    assert (session.ctx.catalog_name, session.database) == ("fs", "db2")
    assert lsmlake.Catalog(str(other)).open_table("db2.t").read().to_pylist() == [{"id": 2, "v": "fs"}]
    session.execute("USE default_catalog.db")
    assert (session.ctx.catalog_name, session.database) == ("default_catalog", "db")
