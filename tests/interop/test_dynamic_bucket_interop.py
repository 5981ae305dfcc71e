"""Dynamic-bucket (``bucket = -1``) tables shared with pypaimon 2.1.0: each reads the other's tables
(HASH index files included), and after both write one table every key is still in one bucket."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pypaimon_env import PypaimonBatch, pypaimon_read, pypaimon_write

import lsmlake
from lsmlake.metadata.index_manifest import HASH_INDEX, read_index_manifest
from lsmlake.read.split_read import ReadContext, read_split_table

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
PK, PARTS = ["id", "dt"], ["dt"]
OPTIONS = {"dynamic-bucket.target-row-num": "40"}


def rows(ids: np.ndarray, tag: str) -> pa.Table:
    dts = np.where(ids % 3 == 0, "2024-01-01", "2024-01-02")
    return pa.table({"id": ids, "dt": dts, "v": [f"{tag}-{i}" for i in ids]}, schema=SCHEMA)


def as_dict(table: pa.Table) -> dict[tuple[int, str], str]:
    return {(r["id"], r["dt"]): r["v"] for r in table.to_pylist()}


def key_buckets(table: lsmlake.Table) -> Counter[tuple[int, str]]:
    """How many (partition, bucket) splits hold each live key."""
    ctx = ReadContext(table.io, table.root, table.schema, table.options, ("id", "dt"))
    seen: Counter[tuple[int, str]] = Counter()
    for split in table.scan().splits():
        part = read_split_table(ctx, split)
        seen.update(set(zip(part.column("id").to_pylist(), part.column("dt").to_pylist(), strict=True)))
    return seen


def hash_entries(table: lsmlake.Table) -> int:
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.index_manifest
    entries = read_index_manifest(table.io, table.paths.manifest(snapshot.index_manifest))
    return sum(1 for e in entries if e.index_file.index_type == HASH_INDEX)


def test_pypaimon_reads_lsmlake_dynamic_bucket_table(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path))
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=PK, partition_keys=PARTS, options=OPTIONS)
    assert table.options.bucket == -1
    table.write(rows(np.arange(200), "a"))
    table.write(rows(np.arange(150, 260), "b"))
    table.delete(pa.table({"id": [3, 4], "dt": ["2024-01-01", "2024-01-02"]}))
    expected = as_dict(table.read())
    assert len({s.bucket for s in table.scan().splits()}) > 2 and hash_entries(table) > 2
    assert as_dict(pypaimon_read(tmp_path, "db.t")) == expected


def test_lsmlake_and_pypaimon_share_a_dynamic_bucket_table(tmp_path: Path) -> None:
    batch = PypaimonBatch()
    batch.create_table(tmp_path, "db.t", SCHEMA, PK, PARTS, OPTIONS)
    batch.write(tmp_path, "db.t", rows(np.arange(120), "p1"))
    batch.run()
    table = lsmlake.Catalog(str(tmp_path)).get_table("db.t")
    assert isinstance(table, lsmlake.Table)
    model = as_dict(rows(np.arange(120), "p1"))
    assert as_dict(table.read()) == model  # lsmlake reads pypaimon's table
    assert hash_entries(table) >= 2

    table.write(rows(np.arange(80, 200), "l1"))  # overwrites pypaimon's keys, adds new ones
    model.update(as_dict(rows(np.arange(80, 200), "l1")))
    pypaimon_write(tmp_path, "db.t", rows(np.arange(0, 260, 2), "p2"))  # and back
    model.update(as_dict(rows(np.arange(0, 260, 2), "p2")))
    table.write(rows(np.arange(250, 300), "l2"))
    model.update(as_dict(rows(np.arange(250, 300), "l2")))

    assert as_dict(table.read()) == model
    assert as_dict(pypaimon_read(tmp_path, "db.t")) == model
    counts = key_buckets(table)
    assert set(counts) == set(model)
    assert max(counts.values()) == 1, "a key is live in two buckets"


def test_pypaimon_reads_lsmlake_postpone_table_before_and_after_compaction(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path))
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table(
        "db.p",
        schema=SCHEMA,
        primary_key=PK,
        partition_keys=PARTS,
        options={"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"},
    )
    table.write(rows(np.arange(100), "a"))
    table.write(rows(np.arange(50, 120), "b"))
    assert pypaimon_read(tmp_path, "db.p").num_rows == 0  # postponed rows are invisible to batch reads
    table.compact()
    expected = as_dict(rows(np.arange(50), "a")) | as_dict(rows(np.arange(50, 120), "b"))
    assert as_dict(table.read()) == expected
    assert as_dict(pypaimon_read(tmp_path, "db.p")) == expected


def test_lsmlake_compacts_pypaimon_postpone_files(tmp_path: Path) -> None:
    """pypaimon's postpone files (Avro, sequence numbers restarting per writer) replay in write order."""
    batch = PypaimonBatch()
    batch.create_table(tmp_path, "db.p", SCHEMA, PK, PARTS, {"bucket": "-2"})
    batch.write(tmp_path, "db.p", rows(np.arange(100), "p1"))
    batch.write(tmp_path, "db.p", rows(np.arange(10), "p2"))
    batch.run()
    table = lsmlake.Catalog(str(tmp_path)).get_table("db.p")
    assert isinstance(table, lsmlake.Table)
    assert table.read().num_rows == 0
    table.compact()
    expected = as_dict(rows(np.arange(100), "p1")) | as_dict(rows(np.arange(10), "p2"))
    assert as_dict(table.read()) == expected
    assert as_dict(pypaimon_read(tmp_path, "db.p")) == expected
