"""A REST commit whose answer is lost (HTTP 5xx, a timeout, a reset connection) after the server took the
snapshot: lsmlake raises CommitStateUnknownError and keeps every file, so the table still reads."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    LsmlakeError,
    MetastoreError,
    UnsupportedError,
)
from lsmlake.metadata.snapshot import snapshot_from_json
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.metastore.rest_client import RestClient
from lsmlake.metastore.rest_env import RestPaths, RestTableEnv
from lsmlake.metastore.rest_stats import PartitionNaming
from lsmlake.metastore.rest_token import TokenSource
from lsmlake.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
CLIENT_TIMEOUT_S = 0.5


@dataclass
class CommitServer:
    """A commit endpoint that publishes each snapshot as a REST server does, then answers per ``mode``:
    ``ok``, ``502``, ``timeout`` (answers after the client gave up) or ``reset`` (closes the connection);
    ``after`` commits are answered ``ok`` before the mode applies."""

    table: Table
    mode: str = "ok"
    after: int = 0
    commits: list[int] = field(default_factory=list)
    check_base: bool = False  # refuse a commit whose baseSnapshotUuid is not the latest's, as Paimon 2.0
    bases: list[str | None] = field(default_factory=list)

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        body = json.loads(request.rfile.read(int(request.headers["Content-Length"])))
        if request.path.endswith("/rollback"):  # as Paimon's server when fromSnapshot is not its latest
            latest = SnapshotManager(self.table.io, self.table.root).latest_id()
            self.answer(request, 500, {"message": f"Latest snapshot {latest} is not {body['fromSnapshot']}"})
            return
        snapshot = snapshot_from_json(body["snapshot"])
        self.bases.append(body["baseSnapshotUuid"])
        if self.check_base:
            latest = SnapshotManager(self.table.io, self.table.root).latest()
            if body["baseSnapshotUuid"] != (latest.uuid if latest is not None else None):
                self.answer(request, 200, {"success": False})
                return
        published = SnapshotManager(self.table.io, self.table.root).try_publish(snapshot)
        self.commits.append(snapshot.id)
        mode = "ok" if len(self.commits) <= self.after or not published else self.mode
        if mode == "timeout":  # the client gives up first; then the connection closes unanswered
            time.sleep(CLIENT_TIMEOUT_S * 4)
        if mode in ("reset", "timeout"):
            request.close_connection = True
            request.connection.close()
            return
        status, answer = (
            (502, {"message": "bad gateway", "code": 502}) if mode == "502" else (200, {"success": published})
        )
        self.answer(request, status, answer)

    @staticmethod
    def answer(request: BaseHTTPRequestHandler, status: int, answer: dict[str, object]) -> None:
        data = json.dumps(answer).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)


@contextmanager
def commit_server(tmp_path: Path, **options: str) -> Iterator[tuple[CommitServer, Table]]:
    """A filesystem table whose commits go to a CommitServer through lsmlake's REST client."""
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    plain = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", **options})
    fake = CommitServer(plain)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            fake.handle(self)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = RestClient(f"http://127.0.0.1:{server.server_address[1]}", timeout=CLIENT_TIMEOUT_S)
        env = RestTableEnv(client, RestPaths(), "db", "t", "id-1", plain.root, PartitionNaming())
        yield fake, Table("db.t", plain.io, plain.root, plain.schema, catalog_env=env)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["502", "timeout", "reset"])
def test_a_write_whose_commit_answer_is_lost_keeps_its_files(tmp_path: Path, mode: str) -> None:
    with commit_server(tmp_path) as (fake, table):
        assert table.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA)) == 1
        fake.mode = mode
        with pytest.raises(CommitStateUnknownError, match="every file the commit wrote was kept") as info:
            table.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
        assert "table db.t" in str(info.value) and isinstance(info.value, LsmlakeError)
        assert fake.commits == [1, 2]
        assert table.latest_snapshot() is not None and table.latest_snapshot().id == 2  # type: ignore[union-attr]
        # the server published snapshot 2: its data files must still be there
        assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "v": "a"},
            {"id": 2, "v": "b"},
        ]


def test_a_compaction_whose_commit_answer_is_lost_keeps_its_files(tmp_path: Path) -> None:
    with commit_server(tmp_path, **{"write-only": "true"}) as (fake, table):
        table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
        table.write(pa.table({"id": [2], "v": ["B"]}, schema=SCHEMA))
        fake.mode = "502"
        with pytest.raises(CommitStateUnknownError):
            table.compact(full=True)
        latest = table.latest_snapshot()
        assert latest is not None and latest.commit_kind == "COMPACT"
        assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "v": "a"},
            {"id": 2, "v": "B"},
        ]


def test_a_write_compaction_whose_commit_answer_is_lost_keeps_its_files(tmp_path: Path) -> None:
    """The write's APPEND lands; its own COMPACT snapshot's answer is lost: both keep their files."""
    with commit_server(tmp_path, **{"num-sorted-run.compaction-trigger": "2"}) as (fake, table):
        table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
        table.write(pa.table({"id": [2], "v": ["B"]}, schema=SCHEMA))
        fake.mode, fake.after = "timeout", len(fake.commits) + 1  # the next APPEND answers, its COMPACT not
        with pytest.raises(CommitStateUnknownError) as info:
            table.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
        assert info.value.published_snapshot_ids == (fake.commits[-2],)
        latest = table.latest_snapshot()
        assert latest is not None and latest.commit_kind == "COMPACT" and latest.id == fake.commits[-1]
        assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "v": "a"},
            {"id": 2, "v": "B"},
            {"id": 3, "v": "c"},
        ]


def test_a_catalog_commit_writes_no_hint_files(tmp_path: Path) -> None:
    """As Java's CatalogSnapshotCommit: the server publishes, the client writes no LATEST/EARLIEST
    (``write-only``: no expiry after the commits, which keeps EARLIEST as in Java)."""
    with commit_server(tmp_path, **{"write-only": "true"}) as (fake, table):
        table.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
        table.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
        snapshot_dir = Path(table.snapshot_manager.snapshot_dir)
        assert sorted(p.name for p in snapshot_dir.iterdir()) == ["snapshot-1", "snapshot-2"]
        assert fake.commits == [1, 2] and table.read().num_rows == 2


def test_a_rollback_the_server_refuses_as_stale_is_a_commit_conflict(tmp_path: Path) -> None:
    with commit_server(tmp_path) as (_, table):
        table.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
        table.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
        assert table.catalog_env is not None
        stale = r"another commit landed after snapshot 1 .*Latest snapshot 2 is not 1"
        with pytest.raises(CommitConflictError, match=stale):
            table.catalog_env.rollback(table.root, snapshot_id=1, tag=None, from_snapshot=1)


def test_each_commit_names_the_snapshot_it_was_built_on(tmp_path: Path) -> None:
    """A server that refuses a commit whose baseSnapshotUuid is not its latest snapshot's (Paimon 2.0's
    CatalogSnapshotCommit check) takes every commit: each names the uuid of the snapshot it follows."""
    with commit_server(tmp_path) as (fake, table):
        fake.check_base = True
        for i in range(3):
            assert table.write(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA)) == i + 1
        uuids = [table.snapshot(i).uuid for i in (1, 2)]
        assert None not in uuids and fake.bases == [None, *uuids]
        assert fake.commits == [1, 2, 3]


def test_a_root_outside_the_table_is_refused_before_writing(tmp_path: Path) -> None:
    """The REST catalog commits the table and its branches (``<table>$branch_<name>``, as the REST API
    names a branch); a root that is neither is refused up front, before any file is written."""
    with commit_server(tmp_path) as (fake, table):
        env = table.catalog_env
        assert env is not None
        env.check_commit(table.root)
        env.check_commit(table.root + "/branch/branch-b")
        with pytest.raises(UnsupportedError, match="is not this table's directory"):
            env.check_commit(str(tmp_path / "elsewhere"))
        with pytest.raises(UnsupportedError, match="is not this table's directory"):
            replace(table, root=str(tmp_path / "elsewhere")).writer()
        assert fake.commits == []


@pytest.mark.parametrize(
    "listing", [[1, 2], "databases", {"databases": "db"}, {"databases": [], "nextPageToken": 3}]
)
def test_a_listing_that_is_not_a_page_is_refused_naming_the_endpoint(listing: object) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = {"defaults": {}, "overrides": {}} if self.path.startswith("/v1/config") else listing
            CommitServer.answer(self, 200, answer)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cat = lsmlake.Catalog(f"http://127.0.0.1:{server.server_address[1]}", options={"metastore": "rest"})
        with pytest.raises(MetastoreError, match=r"GET /v1/databases answered .*not a page of 'databases'"):
            cat.list_databases()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("answer", "ask", "message"),
    [
        ({"token": {"s3.access-key": "k"}}, "token", "not a GetTableTokenResponse"),
        ({"token": "k", "expiresAtMillis": 1}, "token", "not a GetTableTokenResponse"),
        ({"snapshot": {"recordCount": 1}}, "latest", "not a GetTableSnapshotResponse"),
    ],
)
def test_a_malformed_token_or_latest_snapshot_answer_is_refused(
    answer: object, ask: str, message: str
) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            CommitServer.answer(self, 200, answer)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = RestClient(f"http://127.0.0.1:{server.server_address[1]}", timeout=5)
        with pytest.raises(MetastoreError, match=message):
            if ask == "token":
                TokenSource(client, RestPaths().token("db", "t"), "table db.t").fetch()
            else:
                env = RestTableEnv(client, RestPaths(), "db", "t", "id", "/wh/db.db/t", PartitionNaming())
                env.latest_snapshot("/wh/db.db/t")
    finally:
        server.shutdown()
        server.server_close()
