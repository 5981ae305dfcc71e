"""Catalogs to run the behaviour suite on: filesystem, JDBC on SQLite, JDBC on PostgreSQL, and REST (Paimon's
own RESTCatalogServer from the Java harness, one per test; those cases are marked ``java``).

PostgreSQL comes from LSMLAKE_TEST_POSTGRES_URI (.ci/run starts a server and sets it); without it those
cases skip, saying so -- unless LSMLAKE_REQUIRE_POSTGRES is set (CI), where they fail."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rest_server import rest_server

import lsmlake

POSTGRES_ENV = "LSMLAKE_TEST_POSTGRES_URI"
KINDS = ["filesystem", "jdbc-sqlite", "jdbc-postgresql", pytest.param("rest", marks=pytest.mark.java)]

CatalogFactory = Callable[..., lsmlake.Catalog]


def postgres_uri() -> str:
    uri = os.environ.get(POSTGRES_ENV)
    if not uri:
        reason = f"{POSTGRES_ENV} is not set (.ci/run starts PostgreSQL and sets it)"
        if os.environ.get("LSMLAKE_REQUIRE_POSTGRES"):
            pytest.fail(reason)
        pytest.skip(reason)
    pytest.importorskip("psycopg", reason="psycopg (the 'postgresql' extra) is not installed")
    return uri


def catalog_options(kind: str, tmp_path: Path, key: str) -> dict[str, str]:
    """The options of a ``kind`` catalog; ``key`` isolates PostgreSQL cases sharing one database."""
    if kind == "filesystem":
        return {}
    if kind == "jdbc-sqlite":
        return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.sqlite'}", "catalog-key": key}
    return {"metastore": "jdbc", "uri": postgres_uri(), "catalog-key": key}


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_catalog(kind: str, tmp_path: Path) -> Iterator[CatalogFactory]:
    """``open_catalog(**extra_options)``: a catalog of this case's kind on one warehouse and metastore
    (each call a new Catalog, as another process would open it)."""
    if kind == "rest":
        with rest_server(tmp_path / "rest-data") as endpoint:

            def rest(**extra: str) -> lsmlake.Catalog:
                return lsmlake.Catalog(endpoint.warehouse, options={**endpoint.options, **extra})

            yield rest
        return
    key = f"k{uuid.uuid4().hex[:12]}"
    base = catalog_options(kind, tmp_path, key)
    warehouse = str(tmp_path / "warehouse")

    def make(**extra: str) -> lsmlake.Catalog:
        return lsmlake.Catalog(warehouse, options={**base, **extra})

    yield make
