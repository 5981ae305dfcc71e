"""One write buffer budget per writer: shared by its buckets, largest first, spills, background errors."""

from __future__ import annotations

import glob
import os
import time

import numpy as np
import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError, LsmlakeError

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])
SMALL = {"write-buffer-size": "256 kb", "page-size": "4 kb", "write-only": "true"}


def batch(start: int, n: int, *, seed: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(seed + start)
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "v": rng.random(n)}, schema=SCHEMA)


def data_files(table: lsmlake.Table) -> list[str]:
    return sorted(glob.glob(os.path.join(table.root, "**", "data-*"), recursive=True))


def create(catalog: lsmlake.Catalog, name: str, **options: str) -> lsmlake.Table:
    t = catalog.create_table(f"db.{name}", schema=SCHEMA, primary_key=["id"], options=options)
    assert isinstance(t, lsmlake.Table)
    return t


def test_budget_is_shared_by_all_buckets(catalog: lsmlake.Catalog) -> None:
    t = create(catalog, "t", bucket="16", **SMALL, **{"write-buffer-spillable": "false"})
    w = t.writer()
    largest_part = 0
    for i in range(40):
        rows = batch(i * 2_000, 2_000)
        w.write(rows)
        # a batch becomes at most one key-value part per bucket, each rounded up to a page
        largest_part = max(largest_part, 2 * rows.nbytes + 16 * 4096)
        assert w.memory.used <= w.memory.budget + largest_part
    assert w.memory.budget == 256 * 1024
    assert w.memory.peak <= w.memory.budget + largest_part
    w.wait_for_flushes()
    flushed = data_files(t)
    # 16 per-bucket buffers of 256 kb would never have flushed: the shared budget did, many times
    assert len(flushed) > 16
    assert t.latest_snapshot() is None  # flushed level-0 files are committed at commit time
    sid = w.commit()
    assert sid == 1 and t.latest_snapshot() is not None and t.latest_snapshot().id == 1  # type: ignore[union-attr]
    assert set(flushed) <= set(data_files(t))
    got = t.read().sort_by("id")
    assert got.column("id").to_pylist() == list(range(80_000))
    # every flushed file is referenced by the one snapshot: nothing is an orphan
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


def test_largest_buffer_flushes_first(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.p",
        schema=pa.schema([("p", pa.string()), *SCHEMA]),
        primary_key=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "1", **SMALL, "write-buffer-spillable": "false"},
    )
    assert isinstance(t, lsmlake.Table)
    w = t.writer()
    small, big = batch(0, 300), batch(0, 2_500)
    w.write(small.add_column(0, "p", pa.array(["small"] * small.num_rows)))
    assert w.memory.buffered * 2 < w.memory.budget  # below half the budget: nothing flushes
    w.write(big.add_column(0, "p", pa.array(["big"] * big.num_rows)))
    w.wait_for_flushes()
    assert [os.path.basename(os.path.dirname(os.path.dirname(f))) for f in data_files(t)] == ["p=big"]
    assert w.memory.buffered > 0 and w.memory.in_flight == 0  # the small partition is still buffered
    w.commit()
    assert t.read().num_rows == 2_800


def write_mix(t: lsmlake.Table) -> None:
    """Upserts that overwrite earlier batches' keys and deletes, through one writer."""
    with t.writer() as w:
        for i in range(30):
            w.write(batch((i % 10) * 1_500, 3_000, seed=i))
            if i % 7 == 3:
                w.delete(pa.table({"id": pa.array(np.arange(i * 100, i * 100 + 50), pa.int64())}))


@pytest.mark.parametrize(
    "spill",
    [
        {"write-buffer-spillable": "true"},
        {"write-buffer-spillable": "true", "sort-spill-threshold": "2"},
        {"write-buffer-spillable": "true", "write-buffer-spill.max-disk-size": "100 kb"},
    ],
    ids=["spill", "threshold-2", "disk-full"],
)
def test_spilling_writes_the_same_table(catalog: lsmlake.Catalog, spill: dict[str, str]) -> None:
    # 32 buckets: runs of ~1/64 of the budget, and a commit merges up to 1/16 of it per file
    sizes = {**SMALL, "write-buffer-size": "1 mb"}
    plain = create(catalog, "plain", bucket="32", **sizes, **{"write-buffer-spillable": "false"})
    spilled = create(catalog, "spilled", bucket="32", **sizes, **spill)
    write_mix(plain)
    write_mix(spilled)
    assert spilled.read().sort_by("id").equals(plain.read().sort_by("id"))
    assert spilled.read().num_rows > 10_000
    if "write-buffer-spill.max-disk-size" not in spill:  # spilled runs are merged: fewer, larger files
        assert len(data_files(spilled)) < len(data_files(plain))


def test_spill_happens_locally_before_commit(catalog: lsmlake.Catalog) -> None:
    t = create(catalog, "t", bucket="2", **SMALL)  # spillable is Paimon's default
    w = t.writer()
    for i in range(20):
        w.write(batch(i * 2_000, 2_000))
    w.wait_for_flushes()
    assert data_files(t) == []  # full buffers went to local spill files, not to the table
    assert w.memory.used <= w.memory.budget
    w.commit()
    assert len(data_files(t)) >= 2
    assert t.read().num_rows == 40_000


def test_background_flush_failure_surfaces_and_nothing_is_committed(catalog: lsmlake.Catalog) -> None:
    t = create(catalog, "t", bucket="4", **SMALL, **{"write-buffer-spillable": "false"})
    with open(os.path.join(t.root, "bucket-2"), "w") as f:  # a file where a bucket directory must go
        f.write("in the way")
    with pytest.raises(LsmlakeError, match="background flush"), t.writer() as w:
        for i in range(40):
            w.write(batch(i * 2_000, 2_000))
        w.commit()
    assert t.latest_snapshot() is None
    assert data_files(t) == []  # the other buckets' flushed files were deleted by the abort


def test_abandoned_writer_leaves_orphans_that_cleanup_removes(catalog: lsmlake.Catalog) -> None:
    t = create(catalog, "t", bucket="4", **SMALL, **{"write-buffer-spillable": "false"})
    t.write(batch(0, 10))
    kept = data_files(t)
    w = t.writer()
    for i in range(30):
        w.write(batch(i * 2_000, 2_000))
    w.wait_for_flushes()
    assert len(data_files(t)) > len(kept)
    del w  # never committed nor aborted
    removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert len(removed) >= 1
    assert data_files(t) == kept
    assert t.read().num_rows == 10


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"page-size": "0 b"}, "page-size"),
        ({"write-buffer-size": "16 kb", "page-size": "64 kb"}, "at least one 'page-size'"),
        ({"sort-spill-threshold": "1"}, "sort-spill-threshold"),
        ({"write-buffer-spill.max-disk-size": "lots"}, "write-buffer-spill.max-disk-size"),
    ],
)
def test_write_buffer_options_are_validated_at_create(
    catalog: lsmlake.Catalog, options: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        create(catalog, "t", bucket="1", **options)
    assert not catalog.table_exists("db.t")


def test_dynamic_options_are_validated_when_writing(catalog: lsmlake.Catalog) -> None:
    t = create(catalog, "t", bucket="1")
    with pytest.raises(InvalidOptionError, match="page-size"):
        t.with_options({"write-buffer-size": "1 kb", "page-size": "4 kb"}).writer()
