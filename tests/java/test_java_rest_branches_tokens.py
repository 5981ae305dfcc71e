"""lsmlake's REST catalog client against Paimon's own REST server: branches, data tokens, DLF-signed requests
and the commit's base snapshot uuid; Java Paimon's RESTCatalog reads what lsmlake committed."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import catalog_check
from rest_server import RestEndpoint, rest_server
from s3_server import S3Endpoint

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.catalog_options import CatalogOptions
from lsmlake.errors import AlreadyExistsError, NoSuchTableError, NotAuthorizedError, UnsupportedError
from lsmlake.metastore.rest import RestCatalogClient
from lsmlake.metastore.rest_token import TokenFileIO, TokenSource

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
HOUR_MS = 3_600_000


def rows(data: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["v"]) for r in data)


def posts(ep: RestEndpoint, suffix: str) -> list[dict[str, Any]]:
    """The bodies of the POST requests whose path ends with ``suffix``."""
    return [
        json.loads(r["body"]) for r in ep.requests() if r["method"] == "POST" and r["path"].endswith(suffix)
    ]


def table(t: str, rows_: list[tuple[int, str]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows_], "v": [r[1] for r in rows_]}, schema=SCHEMA)


def test_branches_go_through_the_server_and_java_reads_them(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        first = t.write(table("t", [(1, "a")]))
        assert first is not None
        t.create_tag("one", first)
        t.write(table("t", [(9, "main")]))  # main moves on past the tag
        b = t.create_branch("b", tag="one")  # POST .../tables/t/branches: the server records it
        assert posts(ep, "/tables/t/branches") == [{"branch": "b", "fromTag": "one"}]
        assert rows(b.read().to_pylist()) == [(1, "a")]  # the tag's snapshot, not main's latest
        empty = t.create_branch("empty")
        assert empty.read().num_rows == 0 and empty.latest_snapshot() is None
        with pytest.raises(AlreadyExistsError):
            t.create_branch("b")
        b.write(table("t", [(2, "b")]))  # commits to the branch's own object, t$branch_b
        b.write(table("t", [(3, "c")]))
        commits = posts(ep, "/tables/t%24branch_b/commit")
        assert [c["snapshot"]["id"] for c in commits] == [2, 3]
        assert t.latest_snapshot().id == first + 1  # type: ignore[union-attr]  # main is untouched
        assert rows(cat.open_table("db.t$branch_b").read().to_pylist()) == [(1, "a"), (2, "b"), (3, "c")]
        java = catalog_check(
            tmp_path, {"options": ep.options, "read": ["db.t$branch_b", "db.t$branch_empty", "db.t"]}
        )
        assert sorted(java["rows"]["db.t$branch_b"]) == [["1", "a"], ["2", "b"], ["3", "c"]]
        assert java["rows"]["db.t$branch_empty"] == []
        assert sorted(java["rows"]["db.t"]) == [["1", "a"], ["9", "main"]]
        t.rename_branch("empty", "spare")  # POST .../branches/empty/rename
        assert t.list_branches() == ["b", "spare"]
        t.delete_branch("spare")  # DELETE .../branches/spare
        assert t.list_branches() == ["b"]
        assert [r["path"] for r in ep.requests() if r["method"] == "DELETE"] == [
            "/v1/paimon/databases/db/tables/t/branches/spare"
        ]
        with pytest.raises(NoSuchTableError):
            t.delete_branch("spare")
        with pytest.raises(UnsupportedError, match="roll back on a branch"):
            b.rollback_to(2)  # the 1.4.2 server would roll back main instead
        t.fast_forward("b")  # POST .../branches/b/forward: the server moves main and its record
        main = cat.open_table("db.t")
        assert main.latest_snapshot().id == 3  # type: ignore[union-attr]
        assert rows(main.read().to_pylist()) == [(1, "a"), (2, "b"), (3, "c")]
        main.write(table("t", [(4, "d")]))  # main commits on from the fast-forwarded state
        java = catalog_check(tmp_path, {"options": ep.options, "read": ["db.t"]})
        assert sorted(java["rows"]["db.t"]) == [["1", "a"], ["2", "b"], ["3", "c"], ["4", "d"]]
        with pytest.raises(UnsupportedError, match="alter the schema on a branch"):
            b.alter(sc.add_column("n", "INT"))


def test_commits_send_the_base_snapshot_uuid_which_a_1_4_server_ignores(tmp_path: Path) -> None:
    """CommitTableRequest.baseSnapshotUuid (Paimon 2.0) is sent with every commit; Paimon 1.4.2's
    server ignores it (and drops the snapshots' uuid: its Snapshot has none), and the commits land.
    tests/catalog/test_rest_commit_outcome.py checks the value against a server that validates it."""
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        t.write(table("t", [(1, "a")]))
        t.write(table("t", [(2, "b")]))
        first, second = posts(ep, "/tables/t/commit")
        assert first["baseSnapshotUuid"] is None  # the table had no snapshot
        assert first["snapshot"]["uuid"] is not None and t.snapshot(1).uuid is None  # dropped by 1.4.2
        assert "baseSnapshotUuid" in second and second["baseSnapshotUuid"] == t.snapshot(1).uuid
        assert rows(t.read().to_pylist()) == [(1, "a"), (2, "b")]


def test_data_tokens_are_fetched_and_refreshed(tmp_path: Path) -> None:
    """With data-token.enabled the table's files are reached through the token its server gives
    (GET .../tables/t/token), fetched again before each use once it is within an hour of expiring,
    as Java's RESTTokenFileIO does, and kept while it is further from expiry."""
    with rest_server(tmp_path / "data") as ep:
        token_path = "/v1/paimon/databases/db/tables/t/token"

        def token_gets() -> int:
            return sum(1 for r in ep.requests() if r["method"] == "GET" and r["path"] == token_path)

        soon = int(time.time() * 1000) + HOUR_MS // 2
        ep.set_data_token("db.t", {"s3.region": "region-1"}, soon)
        options = {**ep.options, "data-token.enabled": "true"}
        cat = lsmlake.Catalog(ep.warehouse, options=options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        assert isinstance(t.io, TokenFileIO) and t.io.token is not None
        assert t.io.token.options == (("s3.region", "region-1"),) and t.io.token.expires_at_ms == soon
        before = token_gets()
        t.write(table("t", [(1, "a")]))
        assert token_gets() > before + 1  # within the hour: fetched for each file operation
        ep.set_data_token("db.t", {"s3.region": "region-2"}, soon)
        t.io.current()
        assert t.io.token.options == (("s3.region", "region-2"),)
        later = int(time.time() * 1000) + 3 * HOUR_MS
        ep.set_data_token("db.t", {"s3.region": "region-3"}, later)
        t.io.current()
        assert t.io.token.expires_at_ms == later
        before = token_gets()
        assert rows(t.read().to_pylist()) == [(1, "a")]
        assert token_gets() == before  # three hours from expiry: kept
        assert "region-3" not in repr(t.io) and "region-3" not in repr(t.io.token)  # values hidden
        # the server's own token for a table it was given none for: OSS-style keys (akId, akSecret),
        # valid for 4,000 s; lsmlake's FileIO takes the token's s3.* keys only
        plain = cat.create_table("db.plain", schema=SCHEMA)
        assert isinstance(plain.io, TokenFileIO) and plain.io.token is not None
        assert [k for k, _ in plain.io.token.options] == ["akId", "akSecret"]
        assert plain.io.token.expires_at_ms - time.time() * 1000 > HOUR_MS
        plain.write(table("plain", [(5, "e")]))
        assert rows(plain.read().to_pylist()) == [(5, "e")]
        copy = pickle.loads(pickle.dumps(t.io))  # a copy in another process fetches its own token
        assert isinstance(copy, TokenFileIO) and copy.token is not None and copy.token.expires_at_ms == later
        java = catalog_check(tmp_path, {"options": options, "read": ["db.t"]})
        assert java["rows"]["db.t"] == [["1", "a"]]


def test_a_data_token_s3_keys_replace_the_catalogs(tmp_path: Path, s3_endpoint: S3Endpoint) -> None:
    """The server's token for a table carries S3 keys: the table's files are read and written with them,
    never with the catalog's own (moto records the key id that signed each request), and a refreshed
    token's new keys are used from then on."""
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")  # the server serves tokens for the tables it has
        cat.create_table("db.t", schema=SCHEMA)
        catalog_storage = {
            **s3_endpoint.options,
            "s3.access-key": "catalog-key",
            "s3.secret-key": "catalog-secret",
        }
        client = RestCatalogClient(None, CatalogOptions.of(ep.warehouse, ep.options), ep.options)
        source = TokenSource(client.client, client.paths.token("db", "t"), "table db.t")
        soon = int(time.time() * 1000) + HOUR_MS // 2  # refreshed before each use
        ep.set_data_token("db.t", {"s3.access-key": "token-key-1", "s3.secret-key": "x"}, soon)
        uri = s3_endpoint.fresh_warehouse("token")
        io = TokenFileIO(uri, catalog_storage, source)
        s3_endpoint.requests.reset()
        root = uri[len("s3://") :]
        io.write_bytes(f"{root}/a", b"one")
        assert io.read_bytes(f"{root}/a") == b"one"
        used = s3_endpoint.requests.access_keys()
        assert set(used) == {"token-key-1"}
        ep.set_data_token("db.t", {"s3.access-key": "token-key-2", "s3.secret-key": "y"}, soon)
        s3_endpoint.requests.reset()
        assert io.read_bytes(f"{root}/a") == b"one"
        assert set(s3_endpoint.requests.access_keys()) == {"token-key-2"}


DLF_KEY = {
    "access_key_id": "dlf-id",
    "access_key_secret": "dlf-secret",
    "security_token": "sts-token-value",
    "region": "cn-hangzhou",
}


def _dlf_options(ep: RestEndpoint, secret: str = "dlf-secret") -> dict[str, str]:
    return {
        "metastore": "rest",
        "uri": ep.url,
        "warehouse": ep.warehouse,
        "token.provider": "dlf",
        "dlf.access-key-id": "dlf-id",
        "dlf.access-key-secret": secret,
        "dlf.security-token": "sts-token-value",
        "dlf.region": "cn-hangzhou",
    }


def test_dlf_signed_requests_pass_javas_signature_check(tmp_path: Path) -> None:
    """The server accepts only requests whose Authorization header Java Paimon's DLF signer computes
    alike (tests/java/.../DlfCheckingAuth.java): every request lsmlake sends, GET, POST with a body,
    DELETE, and a query string, passes; a wrong secret is refused; Java reads the same catalog."""
    with rest_server(tmp_path / "data", dlf=DLF_KEY) as ep:
        options = _dlf_options(ep)
        cat = lsmlake.Catalog(ep.warehouse, options=options)  # GET /v1/config?warehouse=...
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        t.write(table("t", [(1, "a"), (2, "b")]))
        cat.create_table("db.gone", schema=SCHEMA)
        cat.drop_table("db.gone")
        assert cat.list_tables("db") == ["t"]
        sent = ep.received_headers()[-1]
        assert sent["authorization"].startswith("DLF4-HMAC-SHA256 Credential=dlf-id/")
        assert sent["x-dlf-security-token"] == "sts-token-value" and sent["x-dlf-version"] == "v1"
        with pytest.raises(NotAuthorizedError, match="HTTP 401"):
            lsmlake.Catalog(ep.warehouse, options=_dlf_options(ep, secret="wrong"))
        java = catalog_check(tmp_path, {"options": options, "read": ["db.t"]})
        assert sorted(java["rows"]["db.t"]) == [["1", "a"], ["2", "b"]]
        assert pickle.loads(pickle.dumps(t.catalog_env)) == t.catalog_env  # plain data: travels to workers
        shown = repr(cat) + repr(t.catalog_env)
        assert "dlf-secret" not in shown and "sts-token-value" not in shown


def test_dlf_signatures_of_awkward_paths_and_queries_pass_javas_check(tmp_path: Path) -> None:
    """The canonical request's edge cases, each checked by Java's signer on the server: non-ASCII
    database and table names (percent-encoded UTF-8 in the path), names holding characters Java's
    URLEncoder and Python's quoting treat differently ('~', '*', ' '), a branch's object ('$' sent as
    %24), a data-token GET, and a DELETE without a body."""
    with rest_server(tmp_path / "data", dlf=DLF_KEY) as ep:
        options = {**_dlf_options(ep), "data-token.enabled": "true"}
        cat = lsmlake.Catalog(ep.warehouse, options=options)
        cat.create_database("数据")
        for name in ("表", "t~x*y z"):
            t = cat.create_table(f"数据.{name}", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
            t.write(table(name, [(1, "a")]))
            b = t.create_branch("dév")
            b.write(table(name, [(2, "b")]))
            assert rows(b.read().to_pylist()) == [(2, "b")]  # an empty branch, then one commit
            t.delete_branch("dév")
        assert cat.list_tables("数据") == sorted(["表", "t~x*y z"])
        sent = [r["path"] for r in ep.requests()]
        assert any("%24branch_d%C3%A9v" in p for p in sent)  # the branch object, '$' and 'é' encoded
        java = catalog_check(tmp_path, {"options": options, "read": ["数据.表"]})
        assert java["rows"]["数据.表"] == [["1", "a"]]


def test_each_table_uses_its_own_data_token(tmp_path: Path) -> None:
    """Two tables, two tokens: each table's FileIO holds the token of its own table (GET .../tables/<its
    name>/token), and a token refreshed for one leaves the other's alone."""
    with rest_server(tmp_path / "data") as ep:
        soon = int(time.time() * 1000) + HOUR_MS // 2
        ep.set_data_token("db.a", {"s3.region": "region-a"}, soon)
        ep.set_data_token("db.b", {"s3.region": "region-b"}, soon)
        options = {**ep.options, "data-token.enabled": "true"}
        cat = lsmlake.Catalog(ep.warehouse, options=options)
        cat.create_database("db")
        a = cat.create_table("db.a", schema=SCHEMA)
        b = cat.create_table("db.b", schema=SCHEMA)
        assert isinstance(a.io, TokenFileIO) and isinstance(b.io, TokenFileIO)
        assert a.io.token is not None and a.io.token.options == (("s3.region", "region-a"),)
        assert b.io.token is not None and b.io.token.options == (("s3.region", "region-b"),)
        ep.set_data_token("db.a", {"s3.region": "region-a2"}, soon)
        a.write(table("a", [(1, "a")]))
        b.write(table("b", [(2, "b")]))
        assert a.io.token.options == (("s3.region", "region-a2"),)
        assert b.io.token.options == (("s3.region", "region-b"),)
        assert rows(a.read().to_pylist()) == [(1, "a")] and rows(b.read().to_pylist()) == [(2, "b")]
