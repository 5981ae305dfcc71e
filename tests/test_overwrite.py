"""INSERT OVERWRITE and TRUNCATE: one OVERWRITE snapshot replacing whole partitions."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lsmlake

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def rows(t: lsmlake.Table) -> list[tuple[str, int, int]]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.read().to_pylist())


@pytest.mark.parametrize("dv", ["false", "true"])
def test_overwrite_replaces_only_the_written_partitions(catalog: lsmlake.Catalog, dv: str) -> None:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "deletion-vectors.enabled": dv},
    )
    t.write(pa.table({"id": [1, 2, 1], "dt": ["a", "a", "b"], "v": [1, 2, 3]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "dt": ["a"], "v": [20]}, schema=SCHEMA))
    sid = t.overwrite(pa.table({"id": [9], "dt": ["a"], "v": [90]}, schema=SCHEMA))
    kinds = [t.snapshot(i).commit_kind for i in t.snapshot_manager.snapshot_ids()]
    assert "OVERWRITE" in kinds and kinds[-1] in ("OVERWRITE", "COMPACT")  # DV tables compact the new files
    assert rows(t) == [("a", 9, 90), ("b", 1, 3)]
    t.overwrite(pa.table({"id": [], "dt": [], "v": []}, schema=SCHEMA), partitions={"dt": "b"})
    assert rows(t) == [("a", 9, 90)]
    t.write(pa.table({"id": [9, 5], "dt": ["a", "c"], "v": [91, 5]}, schema=SCHEMA))
    assert rows(t) == [("a", 9, 91), ("c", 5, 5)]
    t.truncate()
    assert rows(t) == []
    assert t.read(snapshot_id=sid).num_rows == 2  # time travel still sees the past


def test_overwrite_unpartitioned_replaces_everything(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table("db.u", schema=schema)
    t.write(pa.table({"id": [1, 2], "v": [1, 2]}, schema=schema))
    t.overwrite(pa.table({"id": [3], "v": [3]}, schema=schema))
    assert t.read().to_pylist() == [{"id": 3, "v": 3}]
