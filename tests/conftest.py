"""Shared fixtures: a fresh warehouse per test (local, or local and S3), and the test helpers on the import path."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

from s3_server import S3Endpoint, Warehouse, running_s3_server

import lsmlake

# Timing is no property of the code under test: on a shared 2-core machine a case can take 10x its usual
# time, and hypothesis would report that as a flaky failure. Tests that set their own deadline keep it.
settings.register_profile("lsmlake", deadline=None)
settings.load_profile("lsmlake")


@pytest.fixture
def catalog(tmp_path: Path) -> lsmlake.Catalog:
    cat = lsmlake.Catalog(str(tmp_path / "warehouse"))
    cat.create_database("db")
    return cat


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[S3Endpoint]:
    """One moto S3 server on loopback for the whole session (bucket ``lake``)."""
    pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
    pytest.importorskip("boto3")
    with running_s3_server() as endpoint:
        yield endpoint


@pytest.fixture(params=["local", "s3"])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> Warehouse:
    """The same test on local disk and on S3 (a fresh prefix of the session's moto bucket)."""
    if request.param == "local":
        return Warehouse("local", str(tmp_path / "warehouse"), {})
    endpoint: S3Endpoint = request.getfixturevalue("s3_endpoint")
    return Warehouse("s3", endpoint.fresh_warehouse(), endpoint.options)
