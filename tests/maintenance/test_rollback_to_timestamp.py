"""Rollback to a point in time (Paimon's rollback_to_timestamp, on a fixed clock) or a watermark."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core import clock
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.metadata.snapshot import encode_snapshot
from lsmlake.sql import Session

T0 = 1_700_000_000_000


@pytest.fixture(autouse=True)
def _real_clock_after() -> Iterator[None]:
    yield
    clock.set_fixed_clock(None)


def test_rollback_to_timestamp(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]),
        primary_key=["id"],
        options={"bucket": "1"},
    )
    ids = []
    for i in range(3):
        clock.set_fixed_clock(T0 + i * 60_000)
        ids.append(t.write({"id": [i]}))
    with pytest.raises(NoSuchSnapshotError):
        t.rollback_to_timestamp(T0 - 1)
    s = Session(cat, database="db")
    (r,) = s.execute(f"CALL sys.rollback_to_timestamp(`table` => 'db.t', `timestamp` => {T0 + 90_000})")
    assert r.table.to_pylist() == [{"previous_snapshot_id": ids[2], "current_snapshot_id": ids[1]}]
    assert sorted(t.read().column("id").to_pylist()) == [0, 1]
    assert t.rollback_to_timestamp(T0).snapshot_id == ids[0]  # a snapshot committed exactly then
    assert t.read().column("id").to_pylist() == [0]


def test_rollback_to_watermark(tmp_path: Path) -> None:
    """Snapshots carry watermarks when a Flink job wrote them; here they are set on the files."""
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.w",
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]),
        primary_key=["id"],
        options={"bucket": "1"},
    )
    ids = [t.write({"id": [i]}) for i in range(4)]
    manager = t.snapshot_manager
    for sid, mark in zip(ids, [None, 100, 200, 300], strict=True):
        s = dataclasses.replace(manager.snapshot(sid), watermark=mark)
        t.io.write_bytes(manager.snapshot_path(sid), encode_snapshot(s).encode("utf-8"))
    assert manager.earlier_or_equal_watermark(250).id == ids[2]  # type: ignore[union-attr]
    assert manager.earlier_or_equal_watermark(100).id == ids[1]  # type: ignore[union-attr]
    # before every watermark: no snapshot qualifies (Paimon once returned the first with one, a snapshot
    # newer than asked for; fixed in apache/paimon#9037), so the rollback is refused and changes nothing
    assert manager.earlier_or_equal_watermark(50) is None
    with pytest.raises(NoSuchSnapshotError, match="watermark"):
        t.rollback_to_watermark(50)
    assert manager.latest_id() == ids[3]
    s = Session(cat, database="db")
    (r,) = s.execute("CALL sys.rollback_to_watermark(`table` => 'db.w', watermark => 200)")
    assert r.table.to_pylist() == [{"result": f"Success roll back to snapshot: {ids[2]} ."}]
    assert sorted(t.read().column("id").to_pylist()) == [0, 1, 2]
