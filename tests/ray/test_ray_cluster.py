"""lsmlake.ray on a local two-CPU Ray cluster: writes, reads, failures and compaction."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("ray.data", reason="ray[data] is not installed (pip install '.[ray]')")

import ray
import ray.data
from ray.data.expressions import col

import lsmlake
import lsmlake.commit.compaction as compaction
import lsmlake.ray as lray
from lsmlake.commit.committer import FileStoreCommit
from lsmlake.core.fileio import FileIO
from lsmlake.errors import CorruptFileError, UnsupportedError
from lsmlake.table.compact import compact_table

# a local Ray cluster takes seconds to start and the module ~30 s on two CPUs
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("score", pa.float64())])


@pytest.fixture(scope="module", autouse=True)
def ray_cluster() -> Iterator[None]:
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
            object_store_memory=256 * 1024 * 1024,
        )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    yield
    if started:
        ray.shutdown()


def _catalog(tmp_path: Path) -> lsmlake.Catalog:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _rows(ids: np.ndarray, tag: str) -> pa.Table:
    return pa.table(
        {
            "id": ids.astype(np.int64),
            "dt": np.where(ids % 3 == 0, "2024-01-01", "2024-01-02"),
            "name": [f"{tag}-{i}" for i in ids],
            "score": ids / 7.0,
        },
        schema=SCHEMA,
    )


def _sorted(t: pa.Table) -> pa.Table:
    """Rows in key order, every field nullable (reads mark key columns NOT NULL, literals do not)."""
    t = t.cast(pa.schema([f.with_nullable(True) for f in t.schema]))
    return t.sort_by([(n, "ascending") for n in t.column_names])


def _ray_rows(ds: ray.data.Dataset, schema: pa.Schema) -> pa.Table:
    tables = [ray.get(ref) for ref in ds.to_arrow_refs()]
    tables = [t for t in tables if t.num_rows]
    return pa.concat_tables(tables).cast(schema) if tables else schema.empty_table()


def _files(root: str) -> set[str]:
    return {str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file()}


def _pk_table(cat: lsmlake.Catalog, name: str = "db.t", **options: str) -> lsmlake.Table:
    return cat.create_table(
        name,
        schema=SCHEMA,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "4", **options},
    )


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="plain"),
        pytest.param({"deletion-vectors.enabled": "true"}, id="deletion-vectors"),
        pytest.param({"write-only": "true"}, id="write-only"),
    ],
)
def test_ray_write_then_ray_read_equals_table_read(tmp_path: Path, options: dict[str, str]) -> None:
    cat = _catalog(tmp_path)
    t, twin = _pk_table(cat, **options), _pk_table(cat, "db.twin", **options)
    for table in (t, twin):
        table.write(_rows(np.arange(0, 3000), "local"))
    before = t.latest_snapshot()
    update = _rows(np.arange(2000, 6000), "ray")  # 1000 updated keys, 3000 new ones
    sid = lray.write_table(ray.data.from_arrow(update).repartition(5), t)
    twin_id = twin.write(update)
    # the same snapshots and the same files per bucket and level as a local write of the same rows
    assert sid is not None and before is not None and sid > before.id and sid == twin_id
    kinds = [t.snapshot(i).commit_kind for i in range(1, sid + 1)]
    assert kinds == [twin.snapshot(i).commit_kind for i in range(1, sid + 1)]
    assert _levels(t) == _levels(twin)

    expected = _sorted(pa.concat_tables([_rows(np.arange(0, 2000), "local"), update]))
    local = _sorted(t.read())
    assert local.equals(expected)
    if options.get("write-only"):
        assert any(not s.raw_convertible for s in t.scan().splits())  # the read below merges
    assert _sorted(_ray_rows(lray.read_table(t), SCHEMA)).equals(local)
    assert _sorted(_ray_rows(lray.read_table(t, parallelism=1), SCHEMA)).equals(local)


def test_ray_read_pushes_filters_and_projection(tmp_path: Path) -> None:
    t = _pk_table(_catalog(tmp_path), **{"deletion-vectors.enabled": "true"})
    t.write(_rows(np.arange(0, 4000), "a"))
    t.write(_rows(np.arange(0, 4000, 5), "b"))  # deletion vectors on the first files
    schema = pa.schema([SCHEMA.field("id"), SCHEMA.field("name")])
    where = "dt = '2024-01-01' AND id < 1000"
    expected = _sorted(t.read(filter=where, columns=["id", "name"]))
    assert expected.num_rows > 0

    got = lray.read_table(t, filter=where, columns=["id", "name"])
    assert _sorted(_ray_rows(got, schema)).equals(expected)
    assert got.count() == expected.num_rows

    # Ray's own filter and select are pushed into the datasource when they translate
    ds = (
        lray.read_table(t)
        .filter(expr=(col("dt") == "2024-01-01") & (col("id") < 1000))
        .select_columns(["id", "name"])
    )
    assert _sorted(_ray_rows(ds, schema)).equals(expected)
    assert ds.count() == expected.num_rows
    # and stay a Ray filter when they do not
    ds = lray.read_table(t).filter(expr=col("id") % 2 == 0)
    assert ds.count() == t.read(filter="id < 4000").num_rows // 2


def test_ray_read_of_an_older_snapshot_and_by_warehouse(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = _pk_table(cat)
    first = t.write(_rows(np.arange(100), "one"))
    t.write(_rows(np.arange(50, 150), "two"))
    source = (str(tmp_path / "wh"), "db.t")
    old = _ray_rows(lray.read_table(source, snapshot_id=first), SCHEMA)
    assert _sorted(old).equals(_sorted(t.read(snapshot_id=first)))
    assert lray.read_table(source).count() == 150


def test_empty_table_and_empty_dataset(tmp_path: Path) -> None:
    t = _pk_table(_catalog(tmp_path))
    ds = lray.read_table(t)
    assert ds.count() == 0
    assert ds.schema().names == SCHEMA.names
    assert lray.write_table(ray.data.from_arrow(SCHEMA.empty_table()), t) is None
    assert t.latest_snapshot() is None


def test_ray_write_by_warehouse_and_without_compaction(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = _pk_table(cat)
    sid = lray.write_table(
        ray.data.from_arrow(_rows(np.arange(500), "w")), (str(tmp_path / "wh"), "db.t"), compact=False
    )
    assert sid is not None and t.snapshot(sid).commit_kind == "APPEND"
    assert all(f.level == 0 for s in t.scan().splits() for f in s.files)
    assert _sorted(t.read()).equals(_sorted(_rows(np.arange(500), "w")))


def test_a_ray_write_runs_the_after_commit_steps(tmp_path: Path) -> None:
    """As a local write: partition expiry, snapshot expiry and the batch tag follow the commit."""
    cat = _catalog(tmp_path)
    options = {
        "partition.expiration-time": "1 d",
        "partition.timestamp-formatter": "yyyyMMdd",
        "tag.automatic-creation": "batch",
        "tag.batch.customized-name": "ray-load",
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1",
    }
    t = _pk_table(cat, **options)
    old = _rows(np.arange(5), "old").set_column(1, "dt", pa.array(["20000101"] * 5))
    t.with_options({"write-only": "true"}).write(old)  # no after-commit steps: the Ray write's do it
    rows = _rows(np.arange(100), "new").set_column(1, "dt", pa.array(["29991231"] * 100))
    sid = lray.write_table(ray.data.from_arrow(rows), t)
    assert sid is not None
    assert set(t.read(columns=["dt"]).column("dt").to_pylist()) == {"29991231"}
    latest = t.snapshot_manager.latest_id()
    assert latest is not None and latest > sid  # partition expiry committed after the write
    assert [(x.name, x.snapshot.id) for x in t.list_tags()] == [("ray-load", latest)]
    assert t.snapshot_manager.earliest_id() == sid  # the older snapshot expired (retain max 1)


def test_ray_write_needs_fixed_buckets(tmp_path: Path) -> None:
    t = _catalog(tmp_path).create_table("db.d", schema=SCHEMA, primary_key=["id", "dt"])
    with pytest.raises(UnsupportedError, match="fixed bucket"):
        lray.write_table(ray.data.from_arrow(_rows(np.arange(10), "x")), t)


def _record_driver_deletes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths the driver deletes (workers run in other processes: only the driver's calls are seen)."""
    deleted: list[str] = []
    original = FileIO.delete_file

    def delete_file(self: FileIO, path: str) -> None:
        deleted.append(path)
        original(self, path)

    monkeypatch.setattr(FileIO, "delete_file", delete_file)
    return deleted


def _corrupt_one_data_file(root: str, bucket_dir: str) -> str:
    (path,) = [p for p in (Path(root) / bucket_dir).glob("data-*") if p.is_file()][:1]
    path.write_bytes(b"not a parquet file")
    return str(path)


@pytest.mark.parametrize("how", ["blocked-bucket-directory", "corrupt-file-read-by-compaction"])
def test_failed_ray_write_leaves_no_snapshot_and_no_files(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    t = _pk_table(_catalog(tmp_path), **{"deletion-vectors.enabled": "true"})
    t.write(_rows(np.arange(0, 2000), "base"))
    before_snapshot = t.latest_snapshot()
    if how == "blocked-bucket-directory":
        # a file where a new bucket directory must go: that bucket's writer fails, the others succeed
        (Path(t.root) / "dt=2024-01-03").write_bytes(b"")
        blocked = _rows(np.arange(10), "x").set_column(1, "dt", pa.array(["2024-01-03"] * 10))
        data = pa.concat_tables([_rows(np.arange(2000, 4000), "new"), blocked])
        error: type[BaseException] = Exception
    else:
        # the writer of this bucket writes its level-0 file, then its compaction hits the corrupt file
        _corrupt_one_data_file(t.root, "dt=2024-01-02/bucket-1")
        data = _rows(np.arange(0, 4000), "new")
        error = CorruptFileError
    files_before = _files(t.root)
    deleted = _record_driver_deletes(monkeypatch)
    with pytest.raises(error):
        lray.write_table(ray.data.from_arrow(data).repartition(4), t)
    assert t.latest_snapshot() == before_snapshot
    assert _files(t.root) == files_before
    assert deleted  # the buckets that were written fine were written, then removed by the driver


def test_failed_commit_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _pk_table(_catalog(tmp_path))
    t.write(_rows(np.arange(0, 500), "base"))
    before_snapshot, files_before = t.latest_snapshot(), _files(t.root)

    def refuse(self: FileStoreCommit, messages: object, **kwargs: object) -> list[int]:
        raise RuntimeError("commit refused")

    monkeypatch.setattr(FileStoreCommit, "commit", refuse)  # the driver's commit; workers never commit
    with pytest.raises(RuntimeError, match="commit refused"):
        lray.write_table(ray.data.from_arrow(_rows(np.arange(0, 1000), "new")), t)
    assert t.latest_snapshot() == before_snapshot
    assert _files(t.root) == files_before


def _levels(t: lsmlake.Table) -> list[tuple[object, ...]]:
    return sorted(
        (s.partition_values, s.bucket, f.level, f.row_count) for s in t.scan().splits() for f in s.files
    )


@pytest.mark.parametrize("full", [False, True], ids=["strategy", "full"])
@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"write-only": "true", "num-sorted-run.compaction-trigger": "3"}, id="merge"),
        pytest.param({"deletion-vectors.enabled": "true", "write-only": "true"}, id="deletion-vectors"),
    ],
)
def test_ray_compaction_equals_local_compaction(tmp_path: Path, full: bool, options: dict[str, str]) -> None:
    cat = _catalog(tmp_path)
    local, remote = _pk_table(cat, "db.local", **options), _pk_table(cat, "db.remote", **options)
    rng = np.random.default_rng(7)
    for i in range(5):
        ids = rng.choice(3000, 800, replace=False)
        for t in (local, remote):
            t.write(_rows(ids, f"round{i}"))
    assert _sorted(local.read()).equals(_sorted(remote.read()))
    local_id = local.compact(full=full)
    remote_id = remote.compact(full=full, executor="ray")
    assert local_id == remote_id and remote_id is not None
    assert remote.snapshot(remote_id).commit_kind == "COMPACT"
    assert _sorted(remote.read()).equals(_sorted(local.read()))
    assert _levels(remote) == _levels(local)
    assert lray.compact_table(remote, full=True) == local.compact(full=True)  # a second round agrees too
    assert _levels(remote) == _levels(local)


def test_failed_ray_compaction_leaves_no_snapshot_and_no_files(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = _pk_table(_catalog(tmp_path), **{"write-only": "true"})
    for i in range(3):
        t.write(_rows(np.arange(i * 100, 2000 + i * 100), f"r{i}"))
    _corrupt_one_data_file(t.root, "dt=2024-01-01/bucket-2")
    before_snapshot, files_before = t.latest_snapshot(), _files(t.root)
    deleted = _record_driver_deletes(monkeypatch)
    with pytest.raises(CorruptFileError):
        t.compact(full=True, executor="ray")
    assert t.latest_snapshot() == before_snapshot
    assert _files(t.root) == files_before
    assert deleted  # the other buckets' compaction outputs, removed by the driver


def test_ray_compaction_that_loses_a_race_redoes_only_the_changed_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _pk_table(_catalog(tmp_path), **{"write-only": "true"})
    for i in range(3):
        t.write(_rows(np.arange(i * 100, 2000 + i * 100), f"r{i}"))
    expected = _sorted(t.read())
    rival = lsmlake.Catalog(str(tmp_path / "wh")).get_table("db.t").with_options({"write-only": "false"})
    target = next(s for s in t.scan().splits())
    commit, calls = compaction.commit_compaction, []

    def rival_first(table: lsmlake.Table, messages: list[object], user: object, **kw: Any) -> object:
        calls.append(len(messages))
        if len(calls) == 1:  # another process compacts one bucket just before the first commit
            compact_table(rival, full=True, only={(target.partition, target.bucket)})
        return commit(table, messages, user, **kw)

    monkeypatch.setattr(compaction, "commit_compaction", rival_first)
    before = t.latest_snapshot()
    assert before is not None
    sid = t.with_options({"write-only": "false"}).compact(full=True, executor="ray")

    buckets = len({(s.partition, s.bucket) for s in t.scan(snapshot_id=before.id).splits()})
    assert calls[0] == buckets and len(calls) == 3  # ours, the rival's, then ours again
    assert sid == before.id + 2 and t.snapshot(sid).commit_kind == "COMPACT"
    assert all(f.level > 0 for s in t.scan().splits() for f in s.files)
    assert _sorted(t.read()).equals(expected)
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


@pytest.mark.interop
def test_ray_write_read_by_lsmlake_and_pypaimon(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    from pypaimon_env import pypaimon_read, pypaimon_write

    t = _pk_table(_catalog(tmp_path), **{"deletion-vectors.enabled": "true"})
    warehouse = str(tmp_path / "wh")
    # pypaimon places keys 0..1999 in buckets by its hash; the Ray write must pick the same buckets
    pypaimon_write(warehouse, "db.t", _rows(np.arange(0, 2000), "pypaimon"))
    update = _rows(np.arange(1000, 3000), "ray")
    assert lray.write_table(ray.data.from_arrow(update).repartition(3), t) is not None

    expected = _sorted(pa.concat_tables([_rows(np.arange(0, 1000), "pypaimon"), update]))
    assert _sorted(t.read()).equals(expected)
    theirs = pypaimon_read(warehouse, "db.t").select(SCHEMA.names).cast(SCHEMA)
    assert theirs.num_rows == 3000  # one row per key: no key landed in two buckets
    assert _sorted(theirs).equals(expected)
    assert _sorted(_ray_rows(lray.read_table(t), SCHEMA)).equals(expected)


def test_no_module_outside_lsmlake_ray_imports_ray() -> None:
    src = Path(lsmlake.__file__).parent
    offenders = [
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if "ray" not in p.relative_to(src).parts[:1]
        and any(line.strip().startswith(("import ray", "from ray")) for line in p.read_text().splitlines())
    ]
    assert offenders == []
    assert os.path.isdir(src / "ray")
