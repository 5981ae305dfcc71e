"""`snapshot.ignore-empty-commit` false: a commit with nothing to write still publishes a snapshot (and
runs the after-commit work, automatic tags included); by default an empty commit publishes nothing, and
`commit.force-create-snapshot` (Flink streaming's) does not change that for lsmlake's batch commits, as
for Paimon's (tests/java/test_java_lifecycle.py checks both against Java)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core import clock
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


@pytest.fixture(autouse=True)
def _real_clock_after() -> Iterator[None]:
    yield
    clock.set_fixed_clock(None)


def _table(tmp_path: Path, **options: str) -> Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", **options})


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def test_an_empty_commit_publishes_nothing_by_default(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write(pa.table({"id": [1], "v": [1]}, schema=SCHEMA))
    assert t.writer().commit() is None
    assert t.snapshot_manager.latest_id() == 1


def test_force_create_snapshot_does_not_force_a_batch_commit(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"commit.force-create-snapshot": "true"})
    t.write(pa.table({"id": [1], "v": [1]}, schema=SCHEMA))
    assert t.writer().commit() is None
    assert t.snapshot_manager.latest_id() == 1


def test_an_empty_commit_is_kept_as_a_snapshot(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"snapshot.ignore-empty-commit": "false"})
    t.write(pa.table({"id": [1], "v": [7]}, schema=SCHEMA))
    before = t.snapshot_manager.latest()
    assert before is not None
    sid = t.writer().commit()
    assert sid == before.id + 1 == t.snapshot_manager.latest_id()
    snapshot = t.snapshot_manager.snapshot(sid)
    assert snapshot.commit_kind == "APPEND" and snapshot.delta_record_count == 0
    assert snapshot.total_record_count == before.total_record_count
    assert t.read().to_pylist() == [{"id": 1, "v": 7}]


def test_a_forced_snapshot_gets_the_automatic_tag_of_an_idle_period(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        **{
            "snapshot.ignore-empty-commit": "false",
            "tag.automatic-creation": "process-time",
            "tag.creation-period": "hourly",
            "sink.process-time-zone": "UTC",
        },
    )
    clock.set_fixed_clock(_ms("2024-01-02 10:10"))
    t.write(pa.table({"id": [1], "v": [1]}, schema=SCHEMA))
    clock.set_fixed_clock(_ms("2024-01-02 11:01"))
    sid = t.writer().commit()  # no data this hour, but the period's tag is made
    assert {tag.name: tag.snapshot.id for tag in t.list_tags()}["2024-01-02 10"] == sid


def test_the_ray_commit_of_no_messages_follows_the_same_rule(tmp_path: Path) -> None:
    """A Ray write whose workers sent nothing publishes through the same rule (no cluster needed)."""
    pytest.importorskip("ray.data", reason="ray[data] is not installed")
    from lsmlake.ray.write import commit_messages

    plain = _table(tmp_path / "plain")
    assert commit_messages(plain, [], [], base_snapshot_id=None) is None
    assert plain.snapshot_manager.latest_id() is None
    forced = _table(tmp_path / "forced", **{"snapshot.ignore-empty-commit": "false"})
    sid = commit_messages(forced, [], [], base_snapshot_id=None)
    assert sid == forced.snapshot_manager.latest_id() == 1
