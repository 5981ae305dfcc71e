"""Marking partitions done with `_SUCCESS` files (Paimon's success-file action): after a batch write with
`partition.end-input-to-done`, and by CALL sys.mark_partition_done."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core import clock
from lsmlake.errors import InvalidPartitionSpecError, UnsupportedError
from lsmlake.sql import Session
from lsmlake.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string()), ("hh", pa.int32())])
T0 = 1_700_000_000_000


@pytest.fixture(autouse=True)
def _real_clock_after() -> Iterator[None]:
    yield
    clock.set_fixed_clock(None)


def _table(tmp_path: Path, name: str = "db.t", **options: str) -> Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table(
        name,
        schema=SCHEMA,
        primary_key=["id", "dt", "hh"],
        partition_keys=["dt", "hh"],
        options={"bucket": "1", **options},
    )


def _success(t: Table, partition: str) -> dict[str, int] | None:
    path = Path(t.root) / partition / "_SUCCESS"
    return json.loads(path.read_text()) if path.exists() else None


def test_a_batch_write_marks_its_partitions_done(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"partition.end-input-to-done": "true"})
    clock.set_fixed_clock(T0)
    t.write(
        pa.table({"id": [1, 2], "dt": ["20240101", "2024 01/02"], "hh": pa.array([1, 2], pa.int32())}, schema=SCHEMA)
    )
    assert _success(t, "dt=20240101/hh=1") == {"creationTime": T0, "modificationTime": T0}
    assert _success(t, "dt=2024 01%2F02/hh=2") == {"creationTime": T0, "modificationTime": T0}
    clock.set_fixed_clock(T0 + 5000)
    t.write(pa.table({"id": [3], "dt": ["20240101"], "hh": pa.array([1], pa.int32())}, schema=SCHEMA))
    assert _success(t, "dt=20240101/hh=1") == {"creationTime": T0, "modificationTime": T0 + 5000}
    assert _success(t, "dt=2024 01%2F02/hh=2") == {"creationTime": T0, "modificationTime": T0}
    # orphan cleaning leaves the markers alone, and reads do not see them
    assert not [p for p in t.remove_orphan_files(older_than_ms=2**62, dry_run=True) if p.endswith("_SUCCESS")]
    assert t.read().num_rows == 3
    plain = _table(tmp_path, "db.plain")
    plain.write(pa.table({"id": [1], "dt": ["x"], "hh": pa.array([1], pa.int32())}, schema=SCHEMA))
    assert _success(plain, "dt=x/hh=1") is None


def test_mark_partition_done_procedure(tmp_path: Path) -> None:
    t = _table(tmp_path)
    clock.set_fixed_clock(T0)
    s = Session(lsmlake.Catalog(str(tmp_path / "wh")), database="db")
    s.execute(
        "CALL sys.mark_partition_done(`table` => 'db.t', partitions => 'dt=20240101,hh=1;dt=20240102,hh=0')"
    )
    assert _success(t, "dt=20240101/hh=1") == {"creationTime": T0, "modificationTime": T0}
    assert _success(t, "dt=20240102/hh=0") is not None
    with pytest.raises(InvalidPartitionSpecError, match="partition keys"):
        t.mark_partitions_done({"id": "1"})


def test_other_mark_done_actions_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match="only success-file"):
        _table(tmp_path, **{"partition.mark-done-action": "success-file,done-partition"})
