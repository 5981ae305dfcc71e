"""The REST client's kept-alive connections: GETs share one connection, a kept connection the server
closed while idle is replaced without the caller seeing it, and requests that change state (a commit)
never go over a kept connection nor are sent twice."""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lsmlake.errors import CommitStateUnknownError, NoSuchTableError
from lsmlake.metastore.rest_client import RestClient


@dataclass
class Server:
    """Answers GET with the request's number, POST with {} (or drops the connection: ``drop_posts``);
    ``close_after_get``: closes each connection after answering a GET without saying so (as a server's
    idle timeout does). ``seen``: (client port, method, path) of every request received."""

    close_after_get: bool = False
    drop_posts: bool = False
    seen: list[tuple[int, str, str]] = field(default_factory=list)


@contextmanager
def serve(spec: Server) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            spec.seen.append((self.client_address[1], "GET", self.path))
            if self.path.endswith("/missing"):
                self._answer(404, {"message": "no", "resourceType": "TABLE", "resourceName": "db.missing"})
            else:
                self._answer(200, {"n": len(spec.seen)})
            if spec.close_after_get:
                self.close_connection = True

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            spec.seen.append((self.client_address[1], "POST", self.path))
            if spec.drop_posts:
                self.close_connection = True
                return
            self._answer(200, {"success": True})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_gets_share_one_kept_connection_and_posts_open_their_own() -> None:
    spec = Server()
    with serve(spec) as url:
        client = RestClient(url, (("Authorization", "Bearer t"),))
        assert [client.get("/v1/x")["n"] for _ in range(3)] == [1, 2, 3]
        with pytest.raises(NoSuchTableError, match=r"db\.missing"):
            client.get("/v1/missing", what="table db.missing")  # an error answer keeps the connection
        assert client.get("/v1/x")["n"] == 5
        client.post("/v1/c", {"a": 1})
        client.post("/v1/c", {"a": 2})
        gets = {port for port, method, _ in spec.seen if method == "GET"}
        posts = [port for port, method, _ in spec.seen if method == "POST"]
        assert len(gets) == 1 and len(set(posts)) == 2 and not gets & set(posts)
        copy = pickle.loads(pickle.dumps(client))  # another process opens its own connections
        assert copy == client and copy.get("/v1/x")["n"] == 8
        assert len({port for port, method, _ in spec.seen if method == "GET"}) == 2
        client.pool.close()


def test_a_kept_connection_the_server_closed_is_replaced() -> None:
    spec = Server(close_after_get=True)
    with serve(spec) as url:
        client = RestClient(url)
        assert [client.get("/v1/x")["n"] for _ in range(3)] == [1, 2, 3]  # each on a new connection
        assert len({port for port, _, _ in spec.seen}) == 3 and len(spec.seen) == 3


def test_a_commit_whose_connection_drops_is_sent_once() -> None:
    spec = Server(drop_posts=True)
    with serve(spec) as url:
        client = RestClient(url)
        client.get("/v1/x")  # a kept connection is idle
        with pytest.raises(CommitStateUnknownError):
            client.post("/v1/c", {"a": 1}, what="table db.t", commit=True)
        assert [m for _, m, _ in spec.seen] == ["GET", "POST"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_never_shares_the_parents_kept_connection() -> None:
    """A child forked while a connection is idle in the pool opens its own: two processes on one socket
    would read each other's answers."""
    spec = Server()
    with serve(spec) as url:
        client = RestClient(url)
        assert client.get("/v1/parent")["n"] == 1  # its connection is now idle in the pool
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                os.write(write, json.dumps(client.get("/v1/child")).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as f:
            answer = f.read()
        assert os.waitpid(pid, 0)[1] == 0
        assert json.loads(answer) == {"n": 2}
        assert client.get("/v1/parent")["n"] == 3
        ports = {path: port for port, _, path in spec.seen}
        assert ports["/v1/child"] != ports["/v1/parent"]
