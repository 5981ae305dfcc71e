"""lsmlake.ray pieces that need Ray installed but no cluster: expression translation, read-task planning."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("ray.data", reason="ray[data] is not installed (pip install '.[ray]')")

from ray.data.expressions import col, lit

import lsmlake
from lsmlake.expr import And, Compare, In, IsNotNull, IsNull, Not, Or
from lsmlake.ray import LsmlakeDatasource, read
from lsmlake.ray._common import Storage
from lsmlake.ray._expr import to_predicate
from lsmlake.ray.write import _add_group_keys, _write_group, commit_messages, group_key


def test_expressions_that_translate() -> None:
    assert to_predicate(col("a") > 3) == Compare("a", ">", 3)
    assert to_predicate(lit(3) > col("a")) == Compare("a", "<", 3)
    assert to_predicate(col("s") == "x") == Compare("s", "=", "x")
    assert to_predicate(col("a") != np.int64(4)) == Compare("a", "!=", 4)
    assert to_predicate(col("a").is_null()) == IsNull("a")
    assert to_predicate(col("a").is_not_null()) == IsNotNull("a")
    assert to_predicate(col("a").is_in([1, 2])) == In("a", (1, 2))
    assert to_predicate((col("a") > 1) & (col("b") < 2)) == And((Compare("a", ">", 1), Compare("b", "<", 2)))
    assert to_predicate((col("a") > 1) | col("b").is_null()) == Or((Compare("a", ">", 1), IsNull("b")))
    assert to_predicate(~(col("a") > 1)) == Not(Compare("a", ">", 1))


def test_expressions_that_stay_in_ray() -> None:
    # arithmetic, column-to-column comparisons, null literals
    assert to_predicate(col("a") + 1 > 3) is None
    assert to_predicate(col("a") > col("b")) is None
    assert to_predicate(col("a") == lit(None)) is None
    # NOT over IN: Ray keeps null rows (is_in is false for null), SQL drops them
    assert to_predicate(~col("a").is_in([1])) is None
    assert to_predicate(col("a").not_in([1])) is None
    assert to_predicate(col("a").is_in([1, None])) is None
    # one untranslatable side makes the whole conjunction stay
    assert to_predicate((col("a") > 1) & (col("a") + 1 > 3)) is None


def test_group_key_is_stable_and_non_negative() -> None:
    keys = {group_key(p, b) for p in (b"", b"\x00" * 12, b"\x01" * 12) for b in range(64)}
    assert len(keys) == 3 * 64
    assert all(0 <= k < 2**63 for k in keys)
    assert group_key(b"abc", 3) == group_key(b"abc", 3)


def _merge_table(tmp_path: Path) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
        primary_key=["id"],
        options={"bucket": "2", "write-only": "true"},
    )
    rng = np.random.default_rng(3)
    for i in range(4):  # overlapping level-0 files: merge splits with several sections and runs
        ids = rng.choice(2000, 600, replace=False)
        t.write(pa.table({"id": ids, "v": [f"w{i}-{x}" for x in ids]}))
    t.write(pa.table({"id": np.arange(5000, 5100), "v": ["tail"] * 100}))  # key-disjoint: its own section
    return t


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([(n, "ascending") for n in t.column_names])


def test_read_tasks_cover_the_table_whatever_the_parallelism(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = _merge_table(tmp_path)
    expected = _sorted(t.read())
    source = LsmlakeDatasource(t)
    assert any(not s.raw_convertible for s in source.splits())
    monkeypatch.setattr(read, "MIN_TASK_BYTES", 0)  # cut splits into pieces as far as they go
    for parallelism in (1, 2, 3, 50):
        tasks = source.get_read_tasks(parallelism)
        assert 1 <= len(tasks) <= max(parallelism, len(source.splits()))
        got = pa.concat_tables([b for task in tasks for b in task()])
        assert _sorted(got).equals(expected), parallelism
    assert len(source.get_read_tasks(50)) > len(source.splits())


def test_pieces_keep_deletion_files_aligned(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("v", pa.int64())]),
        primary_key=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    t.write(pa.table({"id": np.arange(100), "v": np.zeros(100, dtype=np.int64)}))
    t.write(pa.table({"id": np.arange(0, 100, 3), "v": np.ones(34, dtype=np.int64)}))
    (split,) = LsmlakeDatasource(t).splits()
    assert split.raw_convertible and any(d is not None for d in split.deletion_files)
    parts = read.pieces(split)
    assert [p.files[0] for p in parts] == list(split.files)
    assert [p.deletion_files[0] for p in parts] == list(split.deletion_files)


def test_projection_and_predicate_pushdown_on_the_datasource(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.float64())]),
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    t.write(pa.table({"id": np.arange(200), "dt": ["a", "b"] * 100, "v": np.arange(200) / 2}))
    source = LsmlakeDatasource(t)
    pushed = source.apply_predicate((col("dt") == "a") & (col("v") >= 50))
    assert pushed is not source and len(pushed.splits()) < len(source.splits())  # partition pruned
    projected = pushed.apply_projection({"id": "id"})
    assert projected.schema.names == ["id"]
    got = pa.concat_tables([b for task in projected.get_read_tasks(4) for b in task()])
    assert _sorted(got).equals(_sorted(t.read(filter="dt = 'a' AND v >= 50", columns=["id"])))
    assert source.apply_predicate(col("v") + 1 > 3) is source  # not translatable: Ray keeps its filter
    assert source.apply_predicate(col("v") > "not a number") is source  # literal does not fit the column
    assert source.estimate_inmemory_data_size() == 200 * (8 + read.VARIABLE_WIDTH_BYTES + 8)


def test_compact_rejects_an_unknown_executor(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=pa.schema([("id", pa.int64())]), primary_key=["id"], options={"bucket": "1"}
    )
    with pytest.raises(ValueError, match="executor"):
        t.compact(executor="dask")


def test_a_filesystem_handle_that_cannot_travel_is_left_behind(tmp_path: Path) -> None:
    import threading

    import pyarrow.fs as pafs

    from lsmlake.core.fileio import FileIO
    from lsmlake.ray._common import Storage, open_source, portable_io

    lock = threading.Lock()  # like a used S3 client: cannot be pickled

    def put(path: str, data: bytes) -> bool:
        with lock:
            return True

    io = FileIO(pafs.LocalFileSystem(), local=True, conditional_put=put)
    shipped = portable_io(io)
    assert shipped is not io and shipped.fs is io.fs and shipped.local
    plain = FileIO(pafs.LocalFileSystem(), local=True)
    assert portable_io(plain) is plain

    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    cat.create_table(
        "db.t", schema=pa.schema([("id", pa.int64())]), primary_key=["id"], options={"bucket": "1"}
    )
    table, storage = open_source((str(tmp_path / "wh"), "db.t"))
    assert table.name == "db.t" and storage == Storage(warehouse=str(tmp_path / "wh"))
    assert storage.get() is storage.get()  # one FileIO per process
    with pytest.raises(TypeError, match="warehouse"):
        open_source("db.t")  # type: ignore[arg-type]


def _worker_output(t: lsmlake.Table, rows: pa.Table, base: int | None) -> tuple[list[Any], list[str]]:
    """What one bucket's Ray task reports (run in this process: no cluster needed)."""
    batch = _add_group_keys(rows, name=t.name, schema=t.schema, num_buckets=t.options.bucket)
    out = _write_group(
        batch,
        storage=Storage(io=t.io),
        root=t.root,
        name=t.name,
        schema=t.schema,
        options=t.options,
        snapshot_id=base,
        compact=True,
    )
    assert out["error_text"][0].as_py() is None
    return pickle.loads(out["messages"][0].as_py()), pickle.loads(out["written"][0].as_py())


def test_a_ray_commit_from_an_older_base_is_rebased_onto_the_rival(tmp_path: Path) -> None:
    """The driver passes the snapshot the workers restored to the committer: another writer's data in
    those buckets since is found (the snapshots after the base are read) and the workers' files are
    rebased above it, so the result is that of the two commits run one after the other."""
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table(
        "db.t", schema=schema, primary_key=["id"], options={"bucket": "1", "write-only": "true"}
    )
    t.write(pa.table({"id": np.arange(10), "v": ["base"] * 10}, schema=schema))
    base = t.latest_snapshot()
    assert base is not None
    messages, written = _worker_output(
        t, pa.table({"id": np.arange(5), "v": ["ray"] * 5}, schema=schema), base.id
    )
    assert written and all(Path(p).exists() for p in written)
    rival = t.write(pa.table({"id": np.arange(3), "v": ["rival"] * 3}, schema=schema))  # same bucket
    assert rival == base.id + 1

    assert commit_messages(t, messages, written, base_snapshot_id=base.id) == rival + 1
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        *({"id": i, "v": "ray"} for i in range(5)),  # published after the rival: its rows win
        *({"id": i, "v": "base"} for i in range(5, 10)),
    ]
    assert not any(Path(p).exists() for p in written)  # the workers' files were replaced by rebased copies
