"""What both campaigns share: fsynced acknowledgement logs, the key-value model, a moto S3 server."""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("w", pa.int32())])
KEY_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False)])
TABLE = "db.t"
Model = dict[int, int]  # key -> value of the write that set it last


@dataclass(frozen=True)
class Write:
    """One commit's rows: ``upserts`` key -> value (values are unique per write), ``deletes`` keys."""

    upserts: Mapping[int, int]
    deletes: tuple[int, ...] = ()

    def rows(self, writer: int) -> pa.Table:
        keys = list(self.upserts)
        return pa.table(
            {"k": keys, "v": [self.upserts[k] for k in keys], "w": [writer] * len(keys)}, schema=SCHEMA
        )

    def delete_rows(self) -> pa.Table:
        return pa.table({"k": list(self.deletes)}, schema=KEY_SCHEMA)


def apply(model: Model, writes: Iterable[Write]) -> Model:
    """``model`` with ``writes`` applied in order (a copy)."""
    out = dict(model)
    for w in writes:
        out.update(w.upserts)
        for k in w.deletes:
            out.pop(k, None)
    return out


def table_model(table: pa.Table) -> Model:
    """key -> value of a read of the campaign table."""
    return dict(zip(table.column("k").to_pylist(), table.column("v").to_pylist(), strict=True))


class AckLog:
    """An append-only log of acknowledged commits: one JSON line each, fsynced before the caller goes on,
    so a line on disk means the commit was acknowledged (a torn last line means it was not)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, record: Mapping[str, Any]) -> None:
        os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)

    @staticmethod
    def read(path: Path) -> list[dict[str, Any]]:
        """The complete lines of ``path`` (none if it does not exist)."""
        if not path.exists():
            return []
        out = []
        for line in path.read_bytes().split(b"\n"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # the torn last line of a killed writer, or the empty tail
        return out


def write_of(record: Mapping[str, Any]) -> Write:
    """The Write an acknowledgement line records (JSON keys are strings)."""
    return Write({int(k): int(v) for k, v in record["up"].items()}, tuple(record.get("del", ())))


def ack_record(write: Write, **extra: Any) -> dict[str, Any]:
    return {"up": {str(k): v for k, v in write.upserts.items()}, "del": list(write.deletes), **extra}


def differences(got: Model, want: Model, limit: int = 5) -> str:
    """A short text of how two models differ (for failure lines)."""
    keys = sorted(set(got) | set(want))
    diff = [f"k={k}: table {got.get(k)} model {want.get(k)}" for k in keys if got.get(k) != want.get(k)]
    more = f" (+{len(diff) - limit} more)" if len(diff) > limit else ""
    return "; ".join(diff[:limit]) + more


@dataclass
class S3Server:
    """A moto S3 server on loopback with one bucket (moto is in the dev extras)."""

    url: str
    bucket: str = "lake"
    _server: Any = field(default=None, repr=False)

    def options(self) -> dict[str, str]:
        return {
            "s3.endpoint": self.url,
            "s3.access-key": "test",
            "s3.secret-key": "test",
            "s3.region": "us-east-1",
        }

    def warehouse(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}"


@contextmanager
def moto_server() -> Iterator[S3Server]:
    """Start moto's threaded S3 server on a free loopback port, create the bucket, stop on exit."""
    import boto3  # the dev extras; only the --s3 variants need them
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        found = S3Server(f"http://127.0.0.1:{port}", _server=server)
        client = boto3.client(
            "s3",
            endpoint_url=found.url,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=found.bucket)
        yield found
    finally:
        server.stop()
