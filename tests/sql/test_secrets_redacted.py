"""Secret option values (a REST catalog's token, ``header.*``, ``jdbc.password``, s3 keys) never show in
SQL errors, SQL results or the reprs of the objects that hold them."""

from __future__ import annotations

from pathlib import Path

import pytest

import lsmlake
from lsmlake.catalog_options import CatalogOptions
from lsmlake.core.object_store import S3Settings
from lsmlake.core.redact import redact_sql
from lsmlake.errors import InvalidOptionError, LsmlakeError
from lsmlake.metastore.jdbc_config import JdbcConfig
from lsmlake.metastore.rest_client import RestClient
from lsmlake.metastore.rest_env import RestPaths, RestTableEnv
from lsmlake.metastore.rest_stats import PartitionNaming
from lsmlake.sql import Session

TOKEN, HEADER, PASSWORD, S3_SECRET = "tok-8f3a9c", "hdr-77c1e0", "pw-5d2b41", "s3-90aa1f"
SECRETS = (TOKEN, HEADER, PASSWORD, S3_SECRET)


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text


def test_a_failed_create_catalog_does_not_print_its_token(tmp_path: Path) -> None:
    session = Session(lsmlake.Catalog(str(tmp_path / "wh")))
    statements = [
        # unknown option: refused after the options were read
        f"CREATE CATALOG r WITH ('metastore' = 'rest', 'uri' = 'http://127.0.0.1:9', 'token' = '{TOKEN}', "
        f"'header.X-Api-Key' = '{HEADER}', 'nope' = '1')",
        # the server cannot be reached
        f"CREATE CATALOG r WITH ('metastore' = 'rest', 'uri' = 'http://127.0.0.1:9', 'token' = '{TOKEN}')",
        # a syntax error right after the secret value
        f"CREATE CATALOG r WITH ('metastore' = 'rest', 'token' = '{TOKEN}' 'uri' = 'x')",
        f"CREATE CATALOG r WITH ('s3.secret-key' = '{S3_SECRET}', 'token' = '{TOKEN}",  # unterminated
    ]
    for statement in statements:
        with pytest.raises((LsmlakeError, ValueError)) as info:
            session.execute(statement)
        _no_secret(str(info.value))
        cause = info.value.__cause__
        assert cause is None or all(s not in str(cause) for s in SECRETS)


def test_a_create_catalog_result_masks_the_password(tmp_path: Path) -> None:
    session = Session(lsmlake.Catalog(str(tmp_path / "wh")))
    (result,) = session.execute(
        f"CREATE CATALOG j WITH ('warehouse' = '{tmp_path / 'j'}', 'metastore' = 'jdbc', "
        f"'uri' = 'jdbc:sqlite:{tmp_path / 'c.sqlite'}', 'jdbc.password' = '{PASSWORD}')"
    )
    _no_secret(result.statement)
    _no_secret(repr(result))
    assert "'jdbc.password' = '******'" in result.statement and "metastore" in result.statement


def test_reprs_hide_secrets(tmp_path: Path) -> None:
    options = CatalogOptions.of(
        "lake",
        {
            "metastore": "rest",
            "uri": "http://127.0.0.1:9",
            "token": TOKEN,
            "header.X-Api-Key": HEADER,
            "s3.secret-key": S3_SECRET,
        },
    )
    _no_secret(repr(options))
    assert "'uri': 'http://127.0.0.1:9'" in repr(options)  # the rest is still shown
    client = RestClient("http://127.0.0.1:9", (("Authorization", f"Bearer {TOKEN}"), ("X-Api-Key", HEADER)))
    _no_secret(repr(client))
    assert "Authorization" in repr(client)
    env = RestTableEnv(client, RestPaths(), "db", "t", "id", str(tmp_path), PartitionNaming())
    _no_secret(repr(env))
    _no_secret(repr(S3Settings.of({"s3.secret-key": S3_SECRET, "s3.session-token": TOKEN})))
    config = JdbcConfig.of(
        {"uri": f"jdbc:postgresql://h:5432/d?password={PASSWORD}", "jdbc.password": PASSWORD}
    )
    _no_secret(repr(config))


def test_redaction_leaves_other_text_alone() -> None:
    text = "SET 'token.provider' = 'bear'; SELECT 'token' = 'x' FROM t WHERE 'a' = 'token'"
    assert (
        redact_sql(text)
        == "SET 'token.provider' = 'bear'; SELECT 'token' = '******' FROM t WHERE 'a' = 'token'"
    )
    with pytest.raises(InvalidOptionError):
        CatalogOptions.of("lake", {"nope": TOKEN})
