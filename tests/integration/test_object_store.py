"""Tables on S3 (moto's server): create-only snapshot publishes with conditional puts, no lost commits."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pyarrow as pa
import pytest

import lsmlake

moto_server = pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
boto3 = pytest.importorskip("boto3")

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_options() -> Iterator[dict[str, str]]:
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    options = {
        "s3.endpoint": f"http://127.0.0.1:{port}",
        "s3.access-key": "test",
        "s3.secret-key": "test",
        "s3.region": "us-east-1",
    }
    boto3.client(
        "s3",
        endpoint_url=options["s3.endpoint"],
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    ).create_bucket(Bucket="lake")
    yield options
    server.stop()


def test_write_read_compact_on_s3(s3_options: dict[str, str]) -> None:
    cat = lsmlake.Catalog("s3://lake/wh1", options=s3_options)
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "2", "deletion-vectors.enabled": "true"}
    )
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.write(pa.table({"k": [2], "v": ["b2"]}, schema=SCHEMA))
    t.delete(pa.table({"k": [3]}, schema=pa.schema([("k", pa.int64())])))
    assert sorted(t.read().to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "v": "a"}, {"k": 2, "v": "b2"}]
    again = lsmlake.Catalog("s3://lake/wh1", options=s3_options).open_table("db.t")
    assert again.read().num_rows == 2 and cat.list_tables("db") == ["t"]


def test_snapshot_publish_is_create_only(s3_options: dict[str, str]) -> None:
    cat = lsmlake.Catalog("s3://lake/wh2", options=s3_options)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA)
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    path = t.snapshot_manager.snapshot_path(1)
    assert t.io.write_if_absent(path, b"{}") is False
    assert t.read().num_rows == 1  # the snapshot was not overwritten


def test_concurrent_writers_lose_nothing_on_s3(s3_options: dict[str, str]) -> None:
    cat = lsmlake.Catalog("s3://lake/wh3", options=s3_options)
    cat.create_database("db")
    cat.create_table("db.t", schema=SCHEMA)  # append table: any number of writers
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            t = lsmlake.Catalog("s3://lake/wh3", options=s3_options).open_table("db.t")
            for i in range(5):
                t.write(pa.table({"k": [w * 100 + i], "v": [f"{w}"]}, schema=SCHEMA))
        except BaseException as e:  # pragma: no cover - reported by the assert
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    t = cat.open_table("db.t")
    assert t.snapshot_manager.snapshot_ids() == list(range(1, 21))
    assert sorted(t.read().column("k").to_pylist()) == sorted(w * 100 + i for w in range(4) for i in range(5))
