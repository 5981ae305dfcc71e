"""A writer that restored a partition under one bucket count and commits after another writer rewrote
that partition into another count (ALTER TABLE ... 'bucket' then a rescale, or a first write of the
partition under the new count) is refused: its files would sit next to files of the other count, where a
key lives in two buckets (two live rows) and a compaction merges files of two layouts as one bucket."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import CommitConflictError
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.restore import RestoredState
from lsmlake.sql import execute

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("v", pa.int64()),
    ]
)


def _rows(dt: str, ids: range, base: int) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [base + i for i in ids]}, schema=SCHEMA)


def _table(tmp_path: Path, *, pk: bool) -> tuple[lsmlake.Catalog, lsmlake.Table]:
    catalog = lsmlake.Catalog(str(tmp_path))
    catalog.create_database("db")
    options = {"bucket": "2"} if pk else {"bucket": "2", "bucket-key": "id"}
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["dt", "id"] if pk else None,
        partition_keys=["dt"],
        options=options,
    )
    t.write(_rows("a", range(20), 0))
    return catalog, t


def _totals(t: lsmlake.Table) -> dict[str, set[int]]:
    snapshot = t.snapshot_manager.latest()
    assert snapshot is not None
    locator = FileLocator(t)
    out: dict[str, set[int]] = {}
    for (partition, _), entries in RestoredState.load(t.io, t.paths, snapshot).files.items():
        out.setdefault(str(locator.partition_values(partition)[0]), set()).update(
            e.total_buckets for e in entries
        )
    return out


@pytest.mark.parametrize("pk", [True, False])
@pytest.mark.parametrize("new_count", [1, 3])
def test_a_write_racing_a_rescale_of_its_partition_is_refused(
    tmp_path: Path, pk: bool, new_count: int
) -> None:
    catalog, t = _table(tmp_path, pk=pk)
    writer = t.writer()
    writer.write(_rows("a", range(20), 100))  # restored partition a under 2 buckets
    execute(catalog, f"ALTER TABLE db.t SET ('bucket' = '{new_count}')")
    catalog.get_table("db.t").rescale()
    before = t.snapshot_manager.latest_id()
    with pytest.raises(CommitConflictError, match="bucket"):
        writer.commit()
    fresh = catalog.get_table("db.t")
    assert fresh.snapshot_manager.latest_id() == before
    assert _totals(fresh) == {"a": {new_count}}
    assert sorted(fresh.read().column("v").to_pylist()) == list(range(20))


@pytest.mark.parametrize("pk", [True, False])
def test_a_write_racing_a_first_write_of_another_count_is_refused(tmp_path: Path, pk: bool) -> None:
    catalog, t = _table(tmp_path, pk=pk)
    writer = t.writer()
    writer.write(_rows("b", range(10), 100))  # partition b is new: 2 buckets, the schema's count then
    execute(catalog, "ALTER TABLE db.t SET ('bucket' = '3')")
    catalog.get_table("db.t").write(_rows("b", range(5, 15), 200))  # b now holds 3-bucket files
    with pytest.raises(CommitConflictError, match="bucket"):
        writer.commit()
    fresh = catalog.get_table("db.t")
    assert _totals(fresh) == {"a": {2}, "b": {3}}
    assert fresh.read().num_rows == 30


def test_writes_of_other_partitions_still_commit(tmp_path: Path) -> None:
    catalog, t = _table(tmp_path, pk=True)
    t.write(_rows("c", range(5), 0))
    writer = t.writer()
    writer.write(_rows("c", range(5), 50))  # partition c keeps 2 buckets
    execute(catalog, "ALTER TABLE db.t SET ('bucket' = '3')")
    catalog.get_table("db.t").rescale(partitions={"dt": "a"})
    assert writer.commit() is not None
    fresh = catalog.get_table("db.t")
    assert _totals(fresh) == {"a": {3}, "c": {2}}
    assert fresh.read().num_rows == 25
