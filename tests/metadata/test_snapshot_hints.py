"""LATEST and EARLIEST hints: reading the latest snapshot trusts LATEST never to lie below EARLIEST."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import NoSuchSnapshotError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _table(tmp_path: Path, commits: int) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "write-only": "true"}
    )
    for i in range(commits):
        t.write(pa.table({"k": [i], "v": [str(i)]}, schema=SCHEMA))
    return t


def test_expiry_moves_a_stale_latest_hint_up_before_it_deletes(tmp_path: Path) -> None:
    """A stale LATEST (a hint write that failed) whose successor an expiry deletes would otherwise
    be taken as the latest snapshot: it is below EARLIEST, its files partly gone."""
    t = _table(tmp_path, 6)
    manager = t.snapshot_manager
    manager.write_latest_hint(1)  # stale: a later commit's hint write was lost
    result = t.expire_snapshots(retain_min=2, retain_max=2)
    assert result.expired_snapshot_ids == (1, 2, 3, 4)
    assert manager.latest_id() == 6 and manager.earliest_id() == 5
    latest = manager.latest()
    assert latest is not None and latest.id == 6
    assert sorted(t.read().column("k").to_pylist()) == list(range(6))


def test_a_snapshot_below_earliest_still_reads_as_expired(tmp_path: Path) -> None:
    t = _table(tmp_path, 4)
    manager = t.snapshot_manager
    manager.write_earliest_hint(3)  # as an interrupted expiry leaves it: files 1 and 2 still listed
    assert manager.snapshot_ids() == [3, 4]
    assert not manager.snapshot_exists(2) and manager.snapshot_exists(3)
    with pytest.raises(NoSuchSnapshotError, match="has expired"):
        manager.snapshot(2)
    latest = manager.latest()
    assert latest is not None and latest.id == 4


def test_walking_from_a_known_snapshot_finds_those_published_since(tmp_path: Path) -> None:
    t = _table(tmp_path, 5)
    manager = t.snapshot_manager
    newer = manager.published_after(2)
    assert newer is not None and [s.id for s in newer] == [3, 4, 5]
    assert manager.published_after(5) == []
    known = manager.snapshot(3)
    latest = manager.latest_after(known)
    assert latest is not None and latest.id == 5
    assert manager.latest_after(manager.snapshot(5)) == manager.snapshot(5)


def test_a_walk_that_stops_at_an_expired_gap_is_not_taken_for_the_latest(tmp_path: Path) -> None:
    """Snapshots 2 and 3 expired after a writer read snapshot 1: snapshot-2 is missing, but 1 is not the
    latest. EARLIEST (moved before the files went) says so, and the latest is found from LATEST."""
    t = _table(tmp_path, 5)
    manager = t.snapshot_manager
    old = manager.snapshot(1)
    manager.write_earliest_hint(4)
    for sid in (1, 2, 3):
        t.io.delete_file(manager.snapshot_path(sid))
    assert manager.published_after(1) is None
    latest = manager.latest_after(old)
    assert latest is not None and latest.id == 5


def test_a_lost_publish_returns_the_snapshot_that_took_the_id(tmp_path: Path) -> None:
    t = _table(tmp_path, 2)
    manager = t.snapshot_manager
    mine = manager.snapshot(2)
    rival = dataclasses.replace(mine, commit_user="someone else")
    assert manager.publish_or_read(mine) == (True, None)  # the same bytes: a retried publish
    published, holder = manager.publish_or_read(rival)
    assert not published and holder == mine


def test_a_walk_from_far_behind_gives_way_to_latest(tmp_path: Path) -> None:
    t = _table(tmp_path, 6)
    manager = t.snapshot_manager
    assert manager.published_after(1, limit=3) is None  # 5 snapshots follow: LATEST is cheaper
    newer = manager.published_after(1, limit=5)
    assert newer is not None and [s.id for s in newer] == [2, 3, 4, 5, 6]
    latest = manager.latest_after(manager.snapshot(1))
    assert latest is not None and latest.id == 6
