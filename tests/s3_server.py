"""A moto S3 server on loopback for tests: one bucket, lsmlake's and pypaimon's storage options."""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import lsmlake

BUCKET = "lake"
_ACCESS_KEY = re.compile(r"Credential=([^/]+)/")  # the key id a SigV4 Authorization header names
_CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}


class RequestLog:
    """HTTP requests the server answered, by S3 operation: HEAD, GET, LIST, PUT, POST, DELETE; and the
    access key ids that signed them (moto checks no signature: ``access_keys`` shows whose they were)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._keys: Counter[str] = Counter()

    def record(self, environ: dict[str, Any]) -> None:
        method = str(environ.get("REQUEST_METHOD", "?"))
        query = str(environ.get("QUERY_STRING", ""))
        key = str(environ.get("PATH_INFO", "")).strip("/").partition("/")[2]
        if method == "GET" and (not key or "list-type" in query or "prefix=" in query):
            method = "LIST"
        signed = _ACCESS_KEY.search(str(environ.get("HTTP_AUTHORIZATION", "")))
        with self._lock:
            self._counts[method] += 1
            if signed:
                self._keys[signed.group(1)] += 1

    def access_keys(self) -> dict[str, int]:
        """How many requests each access key id signed."""
        with self._lock:
            return dict(self._keys)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self._keys.clear()


@dataclass(frozen=True)
class S3Endpoint:
    """A running S3-compatible endpoint with one bucket; ``requests`` counts what it answered."""

    url: str
    bucket: str = BUCKET
    requests: RequestLog = field(default_factory=RequestLog)

    @property
    def options(self) -> dict[str, str]:
        """lsmlake's catalog storage options (Paimon's ``s3.*`` names)."""
        return {
            "s3.endpoint": self.url,
            "s3.access-key": _CREDENTIALS["aws_access_key_id"],
            "s3.secret-key": _CREDENTIALS["aws_secret_access_key"],
            "s3.region": _CREDENTIALS["region_name"],
        }

    @property
    def pypaimon_options(self) -> dict[str, str]:
        """pypaimon's catalog options: the same keys, plus path-style addressing (moto has no DNS buckets)."""
        return {**self.options, "s3.path-style-access": "true"}

    def fresh_warehouse(self, prefix: str = "wh") -> str:
        """An ``s3://`` warehouse URI under a prefix no other test uses."""
        return f"s3://{self.bucket}/{prefix}-{uuid.uuid4().hex[:12]}"

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.url, **_CREDENTIALS)

    def download(self, prefix: str, target: str) -> None:
        """Copy every object below ``s3://bucket/prefix`` into the local directory ``target``."""
        client = self.client()
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix + "/")
        for page in pages:
            for obj in page.get("Contents", []):
                local = os.path.join(target, obj["Key"][len(prefix) + 1 :])
                os.makedirs(os.path.dirname(local), exist_ok=True)
                client.download_file(self.bucket, obj["Key"], local)


@dataclass(frozen=True)
class Warehouse:
    """Where a test's tables live: a local directory or a fresh prefix on the S3 endpoint."""

    backend: str
    uri: str
    options: dict[str, str]

    def catalog(self) -> lsmlake.Catalog:
        return lsmlake.Catalog(self.uri, options=self.options)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _counting(app: Callable[..., Iterable[bytes]], log: RequestLog) -> Callable[..., Iterable[bytes]]:
    """A WSGI app that records each request in ``log`` before ``app`` answers it."""

    def counted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        log.record(environ)
        return app(environ, start_response)

    return counted


def _counting_server(log: RequestLog, port: int) -> Any:
    """moto's threaded S3 server on loopback, its WSGI app wrapped to count requests in ``log``."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import make_server

    class CountingServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = _counting(DomainDispatcherApplication(create_backend_app), log)
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    return CountingServer(ip_address="127.0.0.1", port=port, verbose=False)


@contextmanager
def running_s3_server(bucket: str = BUCKET) -> Iterator[S3Endpoint]:
    """Start moto's threaded S3 server on a free loopback port, create ``bucket``, stop on exit."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    port = _free_port()
    log = RequestLog()
    server = _counting_server(log, port)
    server.start()
    try:
        endpoint = S3Endpoint(f"http://127.0.0.1:{port}", bucket, log)
        endpoint.client().create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()
