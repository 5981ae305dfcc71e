"""A REST table whose files hold a snapshot its server never recorded (a commit that bypassed the server,
or one whose record was lost): every reader and writer of lsmlake follows the server's record, as Java's
RESTCatalog does, and none builds on, lists or travels to the stray snapshot."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import catalog_check
from rest_server import RestEndpoint, rest_server

import lsmlake
from lsmlake.errors import CommitConflictError, NoSuchSnapshotError, NoSuchTableError

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def data(rows: list[tuple[int, str]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA)


def ids(t: Any) -> list[int]:
    return sorted(t.read().column("id").to_pylist())


def _stray_snapshot(tmp_path: Path, ep: RestEndpoint) -> Any:
    """db.t through the server with snapshot 1 (id 1), then snapshot 2 (id 2) written to its files by a
    filesystem catalog on the server's warehouse directory: the server's record stays at snapshot 1."""
    cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(data([(1, "a")]))
    direct = lsmlake.Catalog(str(ep.data_path)).get_table("db.t")
    assert Path(direct.root) == Path(t.root)
    direct.write(data([(2, "stray")]))
    assert ids(direct) == [1, 2]
    return cat.get_table("db.t")


def test_a_snapshot_the_server_never_recorded_is_not_read_listed_or_built_on(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        t = _stray_snapshot(tmp_path, ep)
        assert t.latest_snapshot().id == 1  # type: ignore[union-attr]
        assert ids(t) == [1]
        # the system table and time travel by time list the server's snapshots only
        listed = lsmlake.Catalog(ep.warehouse, options=ep.options).get_table("db.t$snapshots").read()
        assert listed.column("snapshot_id").to_pylist() == [1]
        with pytest.raises(NoSuchSnapshotError):  # nor by its id
            t.with_options({"scan.snapshot-id": "2"}).read()
        late = t.with_options({"scan.timestamp-millis": str(2**62)})
        assert ids(late) == [1]
        # a tag from a time after snapshot 1 finds no snapshot (the stray one is not there)
        first_time = t.latest_snapshot().time_millis  # type: ignore[union-attr]
        with pytest.raises(NoSuchSnapshotError):
            t.create_tag_from_timestamp("late", first_time + 1)
        # a stream that caught up with snapshot 1 waits: the stray snapshot 2 is no change to follow
        stream = t.stream(mode="latest-full", stop_when_caught_up=True)
        assert [r["id"] for part in stream for r in part.to_pylist()] == [1]
        assert not t.snapshot_manager.snapshot_exists(2) and t.snapshot_manager.snapshot_exists(1)
        # a writer builds on the server's latest (1), never on the stray file: the server refuses id 2
        # (its file exists), so the commit fails loudly instead of publishing the stray rows as its own
        with pytest.raises(CommitConflictError):
            t.with_options({"commit.max-retries": "2", "commit.min-retry-wait": "1"}).write(data([(3, "c")]))
        assert ids(lsmlake.Catalog(ep.warehouse, options=ep.options).get_table("db.t")) == [1]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_commit_to_a_dropped_branch_fails_naming_it_and_leaves_no_files(tmp_path: Path) -> None:
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        t.write(data([(1, "a")]))
        b = t.create_branch("b")
        b.write(data([(2, "b")]))
        t.delete_branch("b")
        before = _files(Path(t.root))
        with pytest.raises(NoSuchTableError, match=r"t\$branch_b"):
            b.write(data([(3, "c")]))
        assert _files(Path(t.root)) - before == set()
        assert ids(cat.get_table("db.t")) == [1]


def test_concurrent_commits_to_main_and_a_branch_and_to_main_from_two_writers(tmp_path: Path) -> None:
    """Threads committing at once through the server (sharing the client's kept-alive connections):
    two to main, one to a branch. Every commit lands once, on its own object, and each reads what was
    committed to it; Java reads the same."""
    with rest_server(tmp_path / "data") as ep:
        cat = lsmlake.Catalog(ep.warehouse, options=ep.options)
        cat.create_database("db")
        t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        t.write(data([(0, "base")]))
        t.create_tag("base", 1)
        b = t.create_branch("b", tag="base")
        errors: list[BaseException] = []

        def run(target: Any, first: int) -> None:
            try:
                for i in range(first, first + 4):
                    target.with_options({"commit.max-retries": "50"}).write(data([(i, f"v{i}")]))
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [
            threading.Thread(target=run, args=(t, 100)),
            threading.Thread(target=run, args=(cat.get_table("db.t"), 200)),
            threading.Thread(target=run, args=(b, 300)),
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        main = cat.get_table("db.t")
        assert ids(main) == [0, *range(100, 104), *range(200, 204)]
        manager = main.snapshot_manager
        appends = [i for i in manager.snapshot_ids() if manager.snapshot(i).commit_kind == "APPEND"]
        assert len(appends) == 9  # the base and eight writes, each once (compactions besides)
        branch = cat.get_table("db.t$branch_b")
        assert ids(branch) == [0, *range(300, 304)]
        java = catalog_check(tmp_path, {"options": ep.options, "read": ["db.t", "db.t$branch_b"]})
        assert sorted(int(r[0]) for r in java["rows"]["db.t"]) == ids(main)
        assert sorted(int(r[0]) for r in java["rows"]["db.t$branch_b"]) == ids(branch)
