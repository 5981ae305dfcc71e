"""Catalog options: unknown keys and unavailable metastores (hive) are refused (never a silent filesystem catalog),
``table-default.*`` applies to new tables, and the CLI passes ``--catalog-option``."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import lsmlake
from lsmlake.cli.main import main
from lsmlake.errors import InvalidOptionError, UnsupportedError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.mark.parametrize("metastore", ["hive", "HIVE"])
def test_another_metastore_is_refused_not_replaced_by_the_filesystem(tmp_path: Path, metastore: str) -> None:
    with pytest.raises(UnsupportedError, match=f"'metastore' = '{metastore}'"):
        lsmlake.Catalog(str(tmp_path), options={"metastore": metastore, "uri": "jdbc:sqlite:x.db"})
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("metastore", ["rest", "REST"])
def test_a_rest_catalog_needs_an_http_uri_and_writes_no_local_files(tmp_path: Path, metastore: str) -> None:
    with pytest.raises(InvalidOptionError, match=r"'uri' = 'jdbc:sqlite:x\.db' is not an http"):
        lsmlake.Catalog(str(tmp_path), options={"metastore": metastore, "uri": "jdbc:sqlite:x.db"})
    with pytest.raises(InvalidOptionError, match=r"unknown catalog option\(s\) \['catalog-key'\]"):
        lsmlake.Catalog("wh", options={"metastore": metastore, "uri": "http://x", "catalog-key": "k"})
    with pytest.raises(InvalidOptionError, match="'uri' is 'http://a', but the catalog opens 'http://b'"):
        lsmlake.Catalog("http://b", options={"metastore": metastore, "uri": "http://a"})
    assert os.listdir(tmp_path) == []


def test_unknown_options_are_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=r"unknown catalog option\(s\) \['uri', 'x.y'\]"):
        lsmlake.Catalog(str(tmp_path), options={"uri": "u", "x.y": "1", "metastore": "filesystem"})
    with pytest.raises(InvalidOptionError, match="not a metastore"):
        lsmlake.Catalog(str(tmp_path), options={"metastore": "etcd"})
    with pytest.raises(InvalidOptionError, match="unknown storage option"):
        lsmlake.Catalog(str(tmp_path), options={"s3.endpointt": "http://x"})


def test_warehouse_option_must_name_the_same_warehouse(tmp_path: Path) -> None:
    lsmlake.Catalog(str(tmp_path), options={"warehouse": str(tmp_path) + "/"})
    with pytest.raises(InvalidOptionError, match="catalog option 'warehouse'"):
        lsmlake.Catalog(str(tmp_path), options={"warehouse": str(tmp_path / "other")})


def test_table_defaults_apply_under_explicit_options(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(
        str(tmp_path), options={"table-default.bucket": "3", "table-default.deletion-vectors.enabled": "true"}
    )
    cat.create_database("db")
    a = cat.create_table("db.a", schema=SCHEMA, primary_key=["id"])
    b = cat.create_table("db.b", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    assert (a.options.raw["bucket"], a.options.raw["deletion-vectors.enabled"]) == ("3", "true")
    assert (b.options.raw["bucket"], b.options.raw["deletion-vectors.enabled"]) == ("2", "true")
    reopened = lsmlake.Catalog(str(tmp_path)).open_table("db.a")  # stored in the schema, not the catalog
    assert reopened.options.raw["bucket"] == "3"


def test_a_bad_table_default_is_refused_at_create(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path), options={"table-default.no-such-option": "1"})
    cat.create_database("db")
    with pytest.raises(InvalidOptionError, match="no-such-option"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    assert cat.list_tables("db") == []


def test_cli_catalog_options(tmp_path: Path) -> None:
    wh = str(tmp_path)
    sql = "CREATE DATABASE db; CREATE TABLE db.t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING)"
    made = CliRunner().invoke(main, ["-w", wh, "-C", "table-default.bucket=5", "sql", sql])
    assert made.exit_code == 0, made.output
    assert lsmlake.Catalog(wh).open_table("db.t").options.raw["bucket"] == "5"
    refused = CliRunner().invoke(main, ["-w", wh, "-C", "metastore=hive", "compact", "db.t"])
    assert refused.exit_code != 0 and "the Hive catalog is not implemented" in refused.output
    rest = CliRunner().invoke(main, ["-w", "lake", "-C", "metastore=rest", "compact", "db.t"])
    assert rest.exit_code != 0 and "metastore=rest needs the catalog option 'uri'" in rest.output
    no_uri = CliRunner().invoke(main, ["-w", wh, "-C", "metastore=jdbc", "compact", "db.t"])
    assert no_uri.exit_code != 0 and "needs the catalog option 'uri'" in no_uri.output
    malformed = CliRunner().invoke(main, ["-w", wh, "-C", "bucket", "compact", "db.t"])
    assert malformed.exit_code == 2 and "is not KEY=VALUE" in malformed.output
