"""Time travel from Python by snapshot id, tag and time; maintenance as Table methods."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import NoSuchSnapshotError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def test_read_by_id_tag_and_time(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1"})
    first = t.write(pa.table({"k": [1], "v": [1]}, schema=SCHEMA))
    assert first is not None
    t.create_tag("v1")
    time.sleep(0.01)
    middle = int(time.time() * 1000)
    time.sleep(0.01)
    t.write(pa.table({"k": [1, 2], "v": [10, 2]}, schema=SCHEMA))
    assert t.read(tag="v1").to_pylist() == [{"k": 1, "v": 1}]
    assert t.read(as_of_millis=middle).to_pylist() == [{"k": 1, "v": 1}]
    assert t.read(snapshot_id=first).to_pylist() == [{"k": 1, "v": 1}]
    assert t.read().num_rows == 2
    with pytest.raises(NoSuchSnapshotError):
        t.read(as_of_millis=0)
    with pytest.raises(ValueError, match="at most one"):
        t.read(tag="v1", snapshot_id=1)
    assert [tag.name for tag in t.list_tags()] == ["v1"]
    t.rollback_to(tag="v1")
    assert t.read().to_pylist() == [{"k": 1, "v": 1}]
    t.delete_tag("v1")
    assert t.list_tags() == []
    assert t.remove_orphan_files(dry_run=True) == []
