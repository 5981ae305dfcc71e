"""lsmlake reads (and compacts) what pypaimon writes, parquet or avro: many level-0 files merged on read,
deletes via rowkind.field."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon_env import pypaimon_create_table, pypaimon_write

import lsmlake

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), ("op", pa.string())])


@pytest.mark.parametrize(("buckets", "fmt"), [(1, "parquet"), (3, "parquet"), (3, "avro")])
def test_lsmlake_reads_pypaimon_upserts_and_deletes(tmp_path: Path, buckets: int, fmt: str) -> None:
    warehouse = tmp_path / "wh"
    pypaimon_create_table(
        warehouse,
        "db.t",
        SCHEMA,
        primary_keys=["id"],
        partition_keys=[],
        options={"bucket": str(buckets), "rowkind.field": "op", "file.format": fmt},
    )
    rng = random.Random(buckets)
    model: dict[int, tuple[str, float]] = {}
    history = []
    for commit in range(5):
        rows = []
        for k in rng.sample(range(300), 80):
            if rng.random() < 0.2:
                rows.append((k, None, None, "-D"))
                model.pop(k, None)
            else:
                value = (f"c{commit}-{k}", float(k * commit))
                rows.append((k, value[0], value[1], "+I"))
                model[k] = value
        table = pa.table(
            dict(zip(SCHEMA.names, map(list, zip(*rows, strict=True)), strict=True)), schema=SCHEMA
        )
        history.append((pypaimon_write(warehouse, "db.t", table), dict(model)))
    t = lsmlake.Catalog(str(warehouse)).open_table("db.t")
    assert all(not s.raw_convertible for s in t.scan().splits())  # pypaimon writes level 0 only: merged
    for snapshot_id, expected in history:
        got = t.read(snapshot_id=snapshot_id).to_pylist()
        assert {r["id"]: (r["name"], r["amount"]) for r in got} == expected
        assert all(r["op"] == "+I" for r in got)
    assert {r["id"] for r in t.read(filter="amount > 100").to_pylist()} == {
        k for k, (_, amount) in model.items() if amount > 100
    }
    assert {p.suffix for p in warehouse.rglob("data-*")} == {f".{fmt}"}
    t.compact(full=True)  # lsmlake compacts pypaimon's files into its own
    assert {r["id"]: (r["name"], r["amount"]) for r in t.read().to_pylist()} == model
