"""Streaming reads yield batches of at most `read.batch-size` rows and merge in bounded key-range steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError
from lsmlake.format.data_file_writer import ROW_GROUP_ROWS
from lsmlake.read.merge_cursor import MERGE_STATS

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])


def _rows(ids: np.ndarray, tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": pa.array([f"{tag}{i}" for i in ids]), "n": ids * 10}, schema=SCHEMA)


def _table(
    tmp_path: Path, options: dict[str, str], schema: pa.Schema = SCHEMA, **kw: object
) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", schema=schema, options=options, **kw)  # type: ignore[arg-type]


def _overlapping(tmp_path: Path, rows: int, runs: int, **options: str) -> lsmlake.Table:
    """A primary-key table (one bucket) of ``runs`` overlapping level-0 files: merge splits."""
    t = _table(tmp_path, {"bucket": "1", "write-only": "true", **options}, primary_key=["id"])
    rng = np.random.default_rng(7)
    for r, part in enumerate(np.array_split(rng.permutation(rows), runs)):
        t.write(_rows(np.sort(part), f"r{r}-"))
    rng2 = np.random.default_rng(8)
    t.write(_rows(np.sort(rng2.choice(rows, rows // 10, replace=False)), "new-"))  # updates
    return t


def _streamed(t: lsmlake.Table, batch: int, **read: object) -> tuple[pa.Table, list[int]]:
    tt = t.with_dynamic_options({"read.batch-size": str(batch)})
    batches = list(tt.scan(**read).to_batches())  # type: ignore[arg-type]
    assert batches, "no batches"
    return pa.Table.from_batches(batches, schema=batches[0].schema), [b.num_rows for b in batches]


def _same_rows(a: pa.Table, b: pa.Table) -> None:
    assert a.num_rows == b.num_rows
    assert a.sort_by("id").equals(b.sort_by("id"))


@pytest.mark.parametrize("batch", [1000, 4096, 10_000])
def test_merged_splits_stream_in_small_batches(tmp_path: Path, batch: int) -> None:
    t = _overlapping(tmp_path, 30_000, 4)
    assert t.scan().plan_summary["merge_splits"] == 1
    whole = t.read()
    streamed, sizes = _streamed(t, batch)
    assert max(sizes) <= batch and sum(sizes) == 30_000
    _same_rows(streamed, whole)
    assert streamed.column("id").to_pylist() == sorted(streamed.column("id").to_pylist())  # key order
    assert whole.filter(pa.compute.starts_with(whole.column("v"), "new-")).num_rows == 3_000


def test_a_merge_step_holds_a_few_pieces_per_file_not_the_files(tmp_path: Path) -> None:
    """5 overlapping files of 80k rows: each merge step holds at most two pieces (of whole row groups,
    ``read.batch-size`` rounded up to ``ROW_GROUP_ROWS``) per file, and a consumer that stops after one
    batch made the merge run only a few steps."""
    t = _overlapping(tmp_path, 80_000, 4)
    files = t.scan().plan_summary["files"]
    assert files == 5
    batch = 4096
    piece = max(batch, ROW_GROUP_ROWS)
    MERGE_STATS.reset()
    streamed, sizes = _streamed(t, batch)
    assert max(sizes) <= batch
    assert 0 < MERGE_STATS.largest_step_rows <= 2 * files * piece
    assert MERGE_STATS.steps >= 80_000 // (files * piece)
    _same_rows(streamed, t.read())

    MERGE_STATS.reset()
    reader = t.with_dynamic_options({"read.batch-size": str(batch)}).scan().to_batches()
    first = reader.read_next_batch()
    assert first.num_rows <= batch
    assert MERGE_STATS.steps <= 8  # the background reader runs two pieces ahead, no further
    reader.close()


def test_raw_splits_stream_with_deletion_vectors_and_filters(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1", "deletion-vectors.enabled": "true"}, primary_key=["id"])
    t.write(_rows(np.arange(20_000), "a"))
    t.compact(full=True)
    t.write(_rows(np.arange(0, 20_000, 7), "b"))  # updates: DV marks the old rows
    t.compact()
    plan = t.scan().plan_summary
    assert plan["deletion_files"] >= 1 and plan["raw_splits"] >= 1
    for read in ({}, {"filter": "n >= 50000 AND n < 150000"}, {"columns": ["v", "id"]}):
        whole = t.read(**read)  # type: ignore[arg-type]
        streamed, sizes = _streamed(t, 3000, **read)
        assert max(sizes) <= 3000
        _same_rows(streamed, whole)
    assert t.read().num_rows == 20_000


def test_append_orc_table_streams(tmp_path: Path) -> None:
    t = _table(tmp_path, {"file.format": "orc"})
    t.write(_rows(np.arange(25_000), "x"))
    streamed, sizes = _streamed(t, 2048, filter="id >= 100")
    assert max(sizes) <= 2048
    _same_rows(streamed, t.read(filter="id >= 100"))


def test_keys_that_cannot_stream_merge_still_read_in_batches(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.float64()), ("v", pa.string())])
    t = _table(tmp_path, {"bucket": "1", "write-only": "true"}, schema=schema, primary_key=["id"])
    for r in range(3):
        t.write(
            pa.table({"id": np.arange(5000, dtype=float) + r * 1000, "v": [str(r)] * 5000}, schema=schema)
        )
    streamed, sizes = _streamed(t, 1000)
    assert max(sizes) <= 1000
    _same_rows(streamed, t.read())


def test_composite_keys_stream_merge(tmp_path: Path) -> None:
    schema = pa.schema([("g", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    t = _table(tmp_path, {"bucket": "1", "write-only": "true"}, schema=schema, primary_key=["g", "id"])
    for r in range(3):
        ids = np.arange(r * 500, r * 500 + 6000)
        t.write(pa.table({"g": [f"g{i % 3}" for i in ids], "id": ids, "v": ids * 0 + r}, schema=schema))
    MERGE_STATS.reset()
    streamed, sizes = _streamed(t, 1500)
    assert max(sizes) <= 1500 and MERGE_STATS.steps > 3
    whole = t.read()
    assert streamed.sort_by([("g", "ascending"), ("id", "ascending")]).equals(
        whole.sort_by([("g", "ascending"), ("id", "ascending")])
    )
    assert whole.num_rows == 7000


def test_limit_and_iteration(tmp_path: Path) -> None:
    t = _overlapping(tmp_path, 20_000, 3).with_dynamic_options({"read.batch-size": "2500"})
    assert [b.num_rows for b in t.scan(limit=6000)] == [2500, 2500, 1000]
    assert sum(b.num_rows for b in t.scan()) == 20_000


def test_batch_size_must_be_positive(tmp_path: Path) -> None:
    t = _overlapping(tmp_path, 100, 2).with_dynamic_options({"read.batch-size": "0"})
    with pytest.raises(InvalidOptionError, match=r"read\.batch-size"):
        t.scan().to_batches()
