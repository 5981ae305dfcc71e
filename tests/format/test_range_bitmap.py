"""Range-bitmap file indexes: the codec round-trips every supported type, planning prunes files and
selects rows with them, compaction and rewrite_file_index rebuild them, and bad input is refused."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError, InvalidOptionError
from lsmlake.format.file_index.keys import array_keys
from lsmlake.format.file_index.range_bitmap import RangeBitmapIndex, write_range_bitmap
from lsmlake.scan.file_index_prune import file_index_blobs
from lsmlake.schema_change import set_option
from lsmlake.table import Table

CASES: list[tuple[DataType, pa.Array]] = [
    (DataType("INT", True), pa.array([5, None, 3, 3, -1, 2**31 - 1, None, -(2**31)], pa.int32())),
    (DataType("BIGINT", True), pa.array([2**62, None, -(2**63), 0, 7], pa.int64())),
    (DataType("TINYINT", True), pa.array([1, -128, 127, None, 1], pa.int8())),
    (DataType("SMALLINT", True), pa.array([300, -2, None, 300], pa.int16())),
    (DataType("DOUBLE", True), pa.array([0.0, -0.0, float("nan"), 1.5, None, -2.0, float("-inf")])),
    (DataType("FLOAT", True), pa.array([0.5, -0.0, None, 3.25, 0.5], pa.float32())),
    (DataType("VARCHAR", True), pa.array(["b", "a", None, "ab", "", "b", "é", "\x7f"])),
    (DataType("BOOLEAN", True), pa.array([True, None, False, True])),
    (DataType("DATE", True), pa.array([dt.date(2020, 1, 1), None, dt.date(1969, 12, 31)])),
    (
        DataType("DECIMAL", True, precision=12, scale=2),
        pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.00")], pa.decimal128(12, 2)),
    ),
    (
        DataType("TIMESTAMP", True, precision=6),
        pa.array(
            [dt.datetime(2021, 5, 1, 1, 2, 3, 456789), None, dt.datetime(1960, 1, 1)], pa.timestamp("us")
        ),
    ),
    (
        DataType("TIME", True, precision=3),
        pa.array([dt.time(1, 2, 3, 4000), None, dt.time(0)], pa.time32("ms")),
    ),
    (DataType("CHAR", True, precision=3), pa.array(["ab ", None, "abc"])),
    (DataType("INT", True), pa.array([None, None], pa.int32())),
    (DataType("VARCHAR", True), pa.array([None], pa.string())),
]


def _decoded(index: RangeBitmapIndex) -> list[Any]:
    keys = index.keys.to_pylist() if isinstance(index.keys, pa.Array) else index.keys.tolist()
    return [None if c < 0 else keys[c] for c in index.codes]


@pytest.mark.parametrize(("t", "values"), CASES)
@pytest.mark.parametrize("chunk_size", [0, 9, 16 * 1024])
def test_codec_round_trips_each_row(t: DataType, values: pa.Array, chunk_size: int) -> None:
    keys, nulls = array_keys(values, t)
    index = RangeBitmapIndex(write_range_bitmap(keys, nulls, t, chunk_size), t, source="test")
    assert index.row_count == len(values)
    got = _decoded(index)
    expected = [
        None if n else k
        for k, n in zip(
            np.asarray(keys).tolist() if not isinstance(keys, pa.Array) else keys.to_pylist(),
            nulls.tolist(),
            strict=True,
        )
    ]
    for g, e in zip(got, expected, strict=True):
        assert g == e or (g != g and e != e), (got, expected)  # NaN is one key
        if isinstance(e, float) and e == 0:
            assert str(g) == str(e)  # -0.0 keeps its sign: Java orders it before 0.0
    dictionary = index.keys.to_pylist() if isinstance(index.keys, pa.Array) else index.keys.tolist()
    assert len(dictionary) == len({repr(k) for k in dictionary})  # distinct keys, each once


def test_dictionary_is_in_javas_order() -> None:
    t = DataType("DOUBLE", True)
    keys, nulls = array_keys(pa.array([float("nan"), 1.0, -0.0, 0.0, float("-inf"), -1.0]), t)
    index = RangeBitmapIndex(write_range_bitmap(keys, nulls, t, 16), t, source="test")
    assert [repr(k) for k in index.keys.tolist()] == ["-inf", "-1.0", "-0.0", "0.0", "1.0", "nan"]
    s = DataType("VARCHAR", True)
    keys, nulls = array_keys(pa.array(["é", "z", "", "Z"]), s)  # bytes compared unsigned: é (0xc3) after z
    index = RangeBitmapIndex(write_range_bitmap(keys, nulls, s, 0), s, source="test")
    assert index.keys.to_pylist() == [b"", b"Z", b"z", "é".encode()]


def test_truncated_index_is_a_corrupt_file() -> None:
    t = DataType("BIGINT", True)
    keys, nulls = array_keys(pa.array(range(100), pa.int64()), t)
    data = write_range_bitmap(keys, nulls, t, 64)
    with pytest.raises(CorruptFileError, match="range-bitmap"):
        RangeBitmapIndex(data[: len(data) // 2], t, source="f.index")
    with pytest.raises(CorruptFileError, match="version 9"):
        RangeBitmapIndex(data[:4] + b"\x09" + data[5:], t, source="f.index")


SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("name", pa.string())])


def _table(tmp_path: Path, options: dict[str, str], primary_key: list[str] | None = None) -> Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table("db.t", schema=SCHEMA, primary_key=primary_key, options=options)


def _rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": pa.array([None if i % 17 == 0 else (i * 7919) % 10_007 for i in ids], pa.int64()),
            "name": [f"n{(i * 31) % 997:04d}" for i in ids],
        }
    )


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (
            {"file-index.range-bitmap.columns": "v", "file-index.range-bitmap.v.chunk-size": "lots"},
            "chunk-size",
        ),
    ],
)
def test_bad_chunk_size_is_refused(tmp_path: Path, options: dict[str, str], match: str) -> None:
    t = _table(tmp_path, options)
    with pytest.raises(InvalidOptionError, match=match):
        t.write(_rows(range(3)))


@pytest.mark.parametrize(
    ("arrow_type", "sql_type"),
    [(pa.timestamp("ns"), "TIMESTAMP(9)"), (pa.decimal128(20, 2), "DECIMAL(20, 2)"), (pa.binary(), "BYTES")],
)
def test_types_java_cannot_index_are_refused(tmp_path: Path, arrow_type: pa.DataType, sql_type: str) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", schema=pa.schema([("c", arrow_type)]), options={"file-index.range-bitmap.columns": "c"}
    )
    with pytest.raises(InvalidOptionError, match="does not support column 'c'"):
        t.write(pa.table({"c": pa.array([None], arrow_type)}))


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"])
def test_range_filters_prune_files_and_select_rows(tmp_path: Path, threshold: str) -> None:
    t = _table(
        tmp_path, {"file-index.range-bitmap.columns": "v,name", "file-index.in-manifest-threshold": threshold}
    )
    for part in range(6):
        t.write(_rows(range(part * 300, part * 300 + 300)))
    full = t.read()
    cases = {
        "v BETWEEN 5000 AND 5010": (pc.field("v") >= 5000) & (pc.field("v") <= 5010),
        "v < 40": pc.field("v") < 40,
        "v >= 10000": pc.field("v") >= 10_000,
        "v IS NULL": pc.field("v").is_null(),
        "v = 4": pc.field("v") == 4,
        "name > 'n0990'": pc.field("name") > "n0990",
        "v IN (1, 2, 3, 7919)": pc.field("v").isin([1, 2, 3, 7919]),
    }
    for text, model in cases.items():
        expected = sorted(full.filter(model).column("id").to_pylist())
        assert sorted(t.read(filter=text).column("id").to_pylist()) == expected, text
        counts = t.scan(filter=text).plan.counts
        pruned = {name for name, _ in counts.by_file_index}
        selected = {name: (kept, live) for name, kept, live in counts.rows_by_file_index}
        by_stats = counts.by_value_stats  # files whose min/max already exclude the range
        assert len(pruned) + len(selected) + by_stats == 6 and not pruned & set(selected), text
        assert sum(kept for kept, _ in selected.values()) == len(expected), text  # the index is exact
    explained = t.explain(filter="v BETWEEN 5000 AND 5010")
    assert "pruned by file index (range-bitmap)" in explained
    assert "file index selects 1 of 300 live rows" in explained


def test_row_mask_skips_row_groups_and_keeps_every_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Statistics cannot skip a row group here (every group spans the whole range); the index can."""
    t = _table(tmp_path, {"file-index.range-bitmap.columns": "v"})
    n = 5 * 4096  # five row groups of 4096 rows
    v = np.arange(n, dtype=np.int64) * 2  # even values across the range...
    v[2 * 4096 + 100] = 777  # ...and one odd value, in the third row group
    v[np.arange(0, n, 4096)] = [0, 0, 0, 0, 0]  # every group's minimum is 0
    v[np.arange(4095, n, 4096)] = 2 * n  # and its maximum the top
    t.write(pa.table({"id": pa.array(range(n), pa.int64()), "v": v, "name": ["x"] * n}))
    read_groups: list[list[int]] = []
    original = pq.ParquetFile.read_row_groups

    def recording(self: pq.ParquetFile, row_groups: list[int], *args: Any, **kwargs: Any) -> pa.Table:
        read_groups.append(list(row_groups))
        return original(self, row_groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", recording)
    assert t.read(filter="v = 777").column("id").to_pylist() == [2 * 4096 + 100]
    assert read_groups == [[2]]
    read_groups.clear()
    got = sorted(t.read(filter="v < 5 OR v = 777").column("id").to_pylist())
    assert got == sorted([i for i in range(n) if v[i] < 5 or v[i] == 777])  # the group minima and the odd one
    assert sorted(g for call in read_groups for g in call) == [0, 1, 2, 3, 4]


def test_deletion_vectors_and_row_masks_together(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        {"file-index.range-bitmap.columns": "v", "deletion-vectors.enabled": "true", "bucket": "1"},
        primary_key=["id"],
    )
    t.write(_rows(range(2000)))
    t.compact(full=True)
    changed = _rows(range(0, 2000, 7))
    changed = changed.set_column(1, "v", pa.array([5000] * changed.num_rows, pa.int64()))
    t.write(changed)
    t.compact()  # the old rows of the changed keys are deleted by deletion vectors
    t.delete("id < 50")
    full = t.read()
    for text, model in {
        "v BETWEEN 4000 AND 6000": (pc.field("v") >= 4000) & (pc.field("v") <= 6000),
        "v = 5000": pc.field("v") == 5000,
        "v < 100 OR v IS NULL": (pc.field("v") < 100) | pc.field("v").is_null(),
    }.items():
        expected = sorted(full.filter(model).column("id").to_pylist())
        assert sorted(t.read(filter=text).column("id").to_pylist()) == expected, text
        plan = t.scan(filter=text).plan
        assert all(s.raw_convertible for s in plan.splits)
        assert plan.counts.rows_by_file_index or plan.counts.by_file_index, text


def test_compaction_and_rewrite_file_index_build_range_bitmaps(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1"}, primary_key=["id"])
    t.write(_rows(range(500)))
    t = t.alter(set_option("file-index.range-bitmap.columns", "v"))
    t.write(_rows(range(500, 900)))
    kinds = {(r["file_path"], r["index_type"]) for r in _file_indexes(t)}
    assert {k for _, k in kinds} == {"range-bitmap"} and len(kinds) == 1  # only the file written after
    assert t.rewrite_file_index().rewritten == 1
    assert len(_file_indexes(t)) == 2
    t.compact(full=True)
    rows = _file_indexes(t)
    assert len(rows) == 1 and rows[0]["index_type"] == "range-bitmap"
    split = t.scan().splits()[0]
    blobs = file_index_blobs(t.io, split.files[0], split.bucket_path)
    assert blobs is not None
    assert [(b.column, b.index_type) for b in blobs[0]] == [("v", "range-bitmap")]
    expected = sorted(t.read().filter(pc.field("v") < 300).column("id").to_pylist())
    assert sorted(t.read(filter="v < 300").column("id").to_pylist()) == expected
    # a primary-key table without deletion vectors merges: its value indexes neither skip files nor rows
    counts = t.scan(filter="v < 300").plan.counts
    assert counts.rows_by_file_index == [] and counts.by_file_index == []


def _file_indexes(t: Table) -> list[dict[str, Any]]:
    catalog = lsmlake.Catalog(str(Path(t.root).parents[1]))
    rows: list[dict[str, Any]] = catalog.get_table("db.t$file_indexes").read().to_pylist()
    return rows


@pytest.mark.parametrize("distinct", [1, 2, 7, 64, 1000])
def test_key_selections_by_slices_equal_decoded_codes(distinct: int) -> None:
    """Bitmap operations on the slices (a few runs of keys) and decoded codes (many runs) agree."""
    rng = np.random.default_rng(distinct)
    t = DataType("BIGINT", True)
    values = pa.array(rng.integers(0, distinct, 5000) * 3, pa.int64()).to_pylist()
    values = pa.array([None if i % 9 == 0 else v for i, v in enumerate(values)], pa.int64())
    keys, nulls = array_keys(values, t)
    index = RangeBitmapIndex(write_range_bitmap(keys, nulls, t, 64), t, source="test")
    codes = index.codes
    for code in range(-1, index.cardinality + 1):
        assert sorted(index.slices.greater(code)) == np.flatnonzero(codes > code).tolist()
    for density in (0.05, 0.5, 0.95):
        mask = rng.random(index.cardinality) < density
        expected = np.flatnonzero(np.append(mask, False)[codes]).tolist()
        assert list(index.rows(mask)) == expected
        for low in range(0, index.cardinality, max(1, index.cardinality // 7)):  # one run: by the slices
            run = np.zeros(index.cardinality, dtype=bool)
            run[low : low + 3] = True
            assert list(index.rows(run)) == np.flatnonzero(np.append(run, False)[codes]).tolist()
    assert list(index.null_rows()) == np.flatnonzero(codes < 0).tolist()
