"""S3 with its conditional put switched off (``s3.create.conditional.enabled=false``, a store without
``If-None-Match``): a commit is refused unless a JDBC catalog's lock guards the publish."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from s3_server import S3Endpoint

import lsmlake
from lsmlake.errors import InvalidOptionError, UnsupportedError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
OFF = {"s3.create.conditional.enabled": "false"}


def _jdbc(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.sqlite'}", **extra}


def _rows(n: int) -> pa.Table:
    return pa.table({"k": [n], "v": [f"v{n}"]}, schema=SCHEMA)


def test_a_non_boolean_value_is_refused_naming_the_option() -> None:
    with pytest.raises(InvalidOptionError, match=r"s3\.create\.conditional\.enabled"):
        lsmlake.Catalog("s3://lake/wh", options={"s3.create.conditional.enabled": "maybe"})


def test_without_a_lock_a_commit_is_refused_and_publishes_nothing(s3_endpoint: S3Endpoint) -> None:
    wh = s3_endpoint.fresh_warehouse()
    table = lsmlake.Catalog(wh, options=s3_endpoint.options)
    table.create_database("db")
    table.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"}).write(_rows(1))
    off = lsmlake.Catalog(wh, options={**s3_endpoint.options, **OFF}).open_table("db.t")
    assert off.read().num_rows == 1  # reading needs no conditional put
    with pytest.raises(UnsupportedError, match=r"s3.create.conditional.enabled=false.*lock.enabled=true"):
        off.write(_rows(2))
    lsmlake.clear_caches()
    after = lsmlake.Catalog(wh, options=s3_endpoint.options).open_table("db.t")
    assert after.latest_snapshot().id == 1 and after.read().column("k").to_pylist() == [1]


def test_a_jdbc_catalog_with_its_lock_switched_off_is_refused_too(
    s3_endpoint: S3Endpoint, tmp_path: Path
) -> None:
    cat = lsmlake.Catalog(
        s3_endpoint.fresh_warehouse(),
        options={**s3_endpoint.options, **OFF, **_jdbc(tmp_path, **{"lock.enabled": "false"})},
    )
    cat.create_database("db")
    with pytest.raises(UnsupportedError, match="needs a conditional put or a catalog lock"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["k"])


def test_a_jdbc_catalog_commits_under_its_lock(s3_endpoint: S3Endpoint, tmp_path: Path) -> None:
    """lock.enabled defaults to on for an object store: two catalogs (two writers) commit in turn."""
    wh = s3_endpoint.fresh_warehouse()
    options = {**s3_endpoint.options, **OFF, **_jdbc(tmp_path, **{"lock-check-max-sleep": "10 ms"})}
    first = lsmlake.Catalog(wh, options=options)
    first.create_database("db")
    t1 = first.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    t2 = lsmlake.Catalog(wh, options=options).open_table("db.t")
    for n in range(4):
        (t1 if n % 2 else t2).write(_rows(n))
    lsmlake.clear_caches()
    assert sorted(t1.read().column("k").to_pylist()) == [0, 1, 2, 3]
    assert t1.latest_snapshot().id == 4
