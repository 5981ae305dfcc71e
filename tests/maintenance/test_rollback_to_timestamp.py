"""Rollback to a point in time (Paimon's rollback_to_timestamp), on a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core import clock
from lsmlake.errors import NoSuchSnapshotError
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
