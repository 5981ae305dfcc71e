"""Consumers and long-lived changelogs: `consumer.expiration-time` after commits, reset_consumer,
clear_consumers and expire_changelogs (methods and procedures), on a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core import clock
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.metadata.consumers import read_consumers
from lsmlake.sql import Session
from lsmlake.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
HOUR_MS = 3_600_000


@pytest.fixture(autouse=True)
def _real_clock_after() -> Iterator[None]:
    yield
    clock.set_fixed_clock(None)


def _table(tmp_path: Path, **options: str) -> Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", **options})


def _write(t: Table, key: int) -> int:
    sid = t.write(pa.table({"id": [key], "v": [key]}, schema=SCHEMA))
    assert sid is not None
    return sid


def _consumers(t: Table) -> dict[str, int]:
    return read_consumers(t.io, t.root)


def test_consumers_expire_after_commits_and_release_snapshots(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        **{
            "consumer.expiration-time": "1 h",
            "snapshot.num-retained.min": "1",
            "snapshot.time-retained": "1 h",
        },
    )
    first = _write(t, 1)
    t.reset_consumer("reader", first)  # the consumer holds snapshot 1 and later
    for key in range(2, 5):
        _write(t, key)
    assert _consumers(t) == {"reader": first}
    assert t.snapshot_manager.earliest_id() == first
    clock.set_fixed_clock(clock.epoch_millis() + 2 * HOUR_MS)  # the consumer's file is now 2 hours old
    _write(t, 9)
    assert _consumers(t) == {}  # expired before the snapshot expiry of the same commit, which goes on
    earliest = t.snapshot_manager.earliest_id()
    assert earliest is not None and earliest > first


def test_consumers_without_expiration_time_stay(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.reset_consumer("reader", _write(t, 1))
    clock.set_fixed_clock(clock.epoch_millis() + 1000 * HOUR_MS)
    _write(t, 2)
    assert "reader" in _consumers(t)


def test_consumer_procedures(tmp_path: Path) -> None:
    t = _table(tmp_path)
    s1, s2 = _write(t, 1), _write(t, 2)
    s = Session(lsmlake.Catalog(str(tmp_path / "wh")), database="db")
    s.execute(f"CALL sys.reset_consumer(`table` => 'db.t', consumer_id => 'a', next_snapshot_id => {s1})")
    s.execute(f"CALL sys.reset_consumer('db.t', 'b', {s2})")
    for name in ("keep-1", "job-1", "job-2"):
        t.reset_consumer(name, s2)
    assert _consumers(t) == {"a": s1, "b": s2, "job-1": s2, "job-2": s2, "keep-1": s2}
    with pytest.raises(NoSuchSnapshotError):
        s.execute("CALL sys.reset_consumer('db.t', 'a', 99)")
    s.execute("CALL sys.reset_consumer(`table` => 'db.t', consumer_id => 'a')")  # no snapshot: delete
    assert "a" not in _consumers(t)
    s.execute(
        "CALL sys.clear_consumers(`table` => 'db.t', including_consumers => 'job-.*', excluding_consumers => 'job-2')"
    )
    assert sorted(_consumers(t)) == ["b", "job-2", "keep-1"]
    assert t.clear_consumers("job") == []  # the pattern must match the whole id
    s.execute("CALL sys.clear_consumers('db.t')")
    assert _consumers(t) == {}


def test_expire_changelogs(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        **{
            "changelog-producer": "input",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
            "snapshot.time-retained": "1 ms",
            "changelog.num-retained.min": "1",
            "changelog.num-retained.max": "10",
            "changelog.time-retained": "1 d",
        },
    )
    for key in range(6):
        _write(t, key)
    root = Path(t.root)
    kept = sorted(int(p.name.split("-")[1]) for p in (root / "changelog").glob("changelog-*"))
    assert len(kept) >= 3
    s = Session(lsmlake.Catalog(str(tmp_path / "wh")), database="db")
    out = s.execute("CALL sys.expire_changelogs(`table` => 'db.t', retain_max => 2)")[0].table
    left = sorted(int(p.name.split("-")[1]) for p in (root / "changelog").glob("changelog-*"))
    assert out.column("result").to_pylist() == [str(len(kept) - len(left))] and left == kept[-len(left) :]
    assert len(left) < len(kept)
    out = s.execute("CALL sys.expire_changelogs(`table` => 'db.t', delete_all => true)")[0].table
    assert out.column("result").to_pylist() == ["Delete all separated changelogs success."]
    assert list((root / "changelog").glob("changelog-*")) == []
    assert t.read().num_rows == 6
