"""LATEST and EARLIEST hints: reading the latest snapshot trusts LATEST never to lie below EARLIEST."""

from __future__ import annotations

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
