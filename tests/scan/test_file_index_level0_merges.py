"""File indexes on primary-key tables are used only where every read file stands alone (Java: batch reads
that skip level 0): reads that merge level-0 rows into deeper files (a stream's first plan,
`deletion-vectors.merge-on-read`) must not drop a deeper file whose rows fail the filter before merging."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.table import Table

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.int64()), ("w", pa.int64())])


def _table(tmp_path: Path, engine: dict[str, str], index: str) -> Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {
        "bucket": "1",
        "deletion-vectors.enabled": "true",
        f"file-index.{index}.columns": "v,w",
        **engine,
    }
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": [10, 20], "w": [7, 8]}, schema=SCHEMA))
    t.compact(full=True)  # deeper level: k=1 (v 10, w 7), k=2 (v 20, w 8)
    later = pa.table(
        {"k": pa.array([1], pa.int32()), "v": [5], "w": pa.array([None], pa.int64())}, schema=SCHEMA
    )
    t.with_options({"write-only": "true"}).write(later)  # stays in level 0
    return t


ENGINES = {
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "partial-update": {"merge-engine": "partial-update"},
}
# the merged row of key 1 each filter must return, by engine
CASES = {
    "aggregation": ("v = 15", {"k": 1, "v": 15, "w": 7}),
    "partial-update": ("v = 5", {"k": 1, "v": 5, "w": 7}),
}


def _stream_rows(t: Table, text: str) -> list[dict[str, object]]:
    parts = list(t.stream(filter=text, stop_when_caught_up=True))
    return [{k: v for k, v in r.items() if k != "rowkind"} for p in parts for r in p.to_pylist()]


@pytest.mark.parametrize("index", ["bitmap", "bsi", "range-bitmap"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_stream_first_plan_merges_level0_into_files_the_index_would_drop(
    tmp_path: Path, engine: str, index: str
) -> None:
    t = _table(tmp_path, ENGINES[engine], index)
    text, row = CASES[engine]
    assert _stream_rows(t, text) == [row]
    assert _stream_rows(t.with_options({"file-index.read.enabled": "false"}), text) == [row]


@pytest.mark.parametrize("index", ["bitmap", "bsi", "range-bitmap"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_merge_on_read_batch_merges_level0_into_files_the_index_would_drop(
    tmp_path: Path, engine: str, index: str
) -> None:
    t = _table(tmp_path, ENGINES[engine], index).with_options({"deletion-vectors.merge-on-read": "true"})
    text, row = CASES[engine]
    assert t.read(filter=text).to_pylist() == [row]
    assert "pruned by file index" not in t.explain(filter=text)


@pytest.mark.parametrize("stream", [False, True])
def test_value_stats_keep_a_bucket_whose_level0_rows_merge_into_a_passing_row(
    tmp_path: Path, stream: bool
) -> None:
    # no file's value range holds 14, but key 1 sums to it: the bucket's files are merged before filtering
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {"bucket": "1", "deletion-vectors.enabled": "true", **ENGINES["aggregation"]}
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": [10, 12], "w": [7, 8]}, schema=SCHEMA))
    t.compact(full=True)
    later = pa.table({"k": pa.array([1], pa.int32()), "v": [4], "w": [7]}, schema=SCHEMA)
    t.with_options({"write-only": "true"}).write(later)
    row = {"k": 1, "v": 14, "w": 7}
    if stream:
        assert _stream_rows(t, "v = 14") == [row]
    else:
        assert t.with_options({"deletion-vectors.merge-on-read": "true"}).read(
            filter="v = 14"
        ).to_pylist() == [row]
