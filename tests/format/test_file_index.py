"""Paimon's file-index formats: Java-written bitmap/BSI indexes decode to the README's rows; lsmlake's round-trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError
from lsmlake.format.file_index.bitmap import BitmapIndex, write_bitmap
from lsmlake.format.file_index.bloom import BloomFilter, bloom_size, hash_values, write_bloom
from lsmlake.format.file_index.bsi import BsiIndex
from lsmlake.format.file_index.container import read_container, write_container
from lsmlake.format.file_index.keys import array_keys, distinct_live
from tests.fixtures import CPP_TEST_DATA, require_fixtures

STRING = DataType("VARCHAR", True)
INT = DataType("INT", True)


def _index_file(name: str) -> tuple[Path, bytes]:
    require_fixtures()
    found = sorted((CPP_TEST_DATA / "parquet" / f"{name}.db" / name / "bucket-0").glob("*.index"))
    assert found, name
    return found[0], found[0].read_bytes()


def test_java_bitmap_index_rows() -> None:
    path, data = _index_file("append_with_bitmap_no_embedding")
    blobs = {b.column: b for b in read_container(data, source=str(path))}
    assert {(b.column, b.index_type) for b in blobs.values()} == {
        ("f0", "bitmap"),
        ("f1", "bitmap"),
        ("f2", "bitmap"),
    }
    f0 = BitmapIndex(blobs["f0"].data or b"", STRING, source="f0")
    assert {k: list(f0.rows(k)) for k in f0.values()} == {
        b"Alice": [0, 7],
        b"Bob": [1, 5],
        b"Emily": [2],
        b"Lucy": [4],
        b"Tony": [3, 6],
    }
    f2 = BitmapIndex(blobs["f2"].data or b"", INT, source="f2")
    assert list(f2.rows(None)) == [7] and list(f2.rows(1)) == [0, 1, 4, 5] and list(f2.rows(9)) == []


def test_java_bsi_index_values() -> None:
    path, data = _index_file("append_with_bsi")
    blobs = {b.column: b for b in read_container(data, source=str(path))}
    f1 = BsiIndex(blobs["f1"].data or b"", source="f1")
    assert f1.values[f1.present].tolist() == [100, 200, 300, 50, 500, 100, 20]
    assert np.flatnonzero(~f1.present).tolist() == [6]
    f2 = BsiIndex(blobs["f2"].data or b"", source="f2")
    assert f2.values[f2.present].tolist() == [-2, -3, 1, 1, -1, 2, -2]
    f4 = BsiIndex(blobs["f4"].data or b"", source="f4")  # TIMESTAMP(9): microseconds
    assert f4.values[:3].tolist() == [1745542802000123, 1745542902000123, 1745542602000123]


def test_container_round_trip_and_corruption() -> None:
    data = write_container(
        {"a": {"bloom-filter": b"\x00\x00\x00\x01\xff", "bitmap": None}, "b": {"bsi": b"xyz"}}
    )
    blobs = read_container(data, source="t")
    assert [(b.column, b.index_type, b.data) for b in blobs] == [
        ("a", "bloom-filter", b"\x00\x00\x00\x01\xff"),
        ("a", "bitmap", None),
        ("b", "bsi", b"xyz"),
    ]
    with pytest.raises(CorruptFileError, match="bad magic"):
        read_container(b"\x00" * 32, source="t")
    with pytest.raises(CorruptFileError, match=r"truncated|outside"):
        read_container(data[:30], source="t")


def test_bloom_filter_contains_every_written_value() -> None:
    values = pa.array([f"k{i}" for i in range(2000)] + [None])
    keys, nulls = array_keys(values, STRING)
    hashes = hash_values(distinct_live(keys, nulls), STRING)
    bf = BloomFilter(write_bloom(hashes, 2000, 0.01), source="t")
    assert bf.might_contain(hashes).all()
    others = hash_values([f"x{i}".encode() for i in range(5000)], STRING)
    assert bf.might_contain(others).mean() < 0.03
    ints = hash_values(np.arange(-500, 500), INT)
    bfi = BloomFilter(write_bloom(ints, 1000, 0.05), source="t")
    assert (
        bfi.might_contain(ints).all()
        and bfi.might_contain(hash_values(np.arange(10**6, 10**6 + 2000), INT)).mean() < 0.1
    )
    assert bloom_size(1_000_000, 0.1) == (4792536, 3)  # Java's sizing: 4792529 bits rounded up past a byte


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        (STRING, ["b", "a", None, "b", "c", None, "a", "a"]),
        (INT, [3, 1, None, 3, -7, 2, 1, 1]),
        (DataType("DOUBLE", True), [0.0, -0.0, 1.5, None, 1.5, float("nan"), 2.0, 0.0]),
    ],
)
def test_bitmap_round_trip(dtype: DataType, values: list[object]) -> None:
    arrow = pa.array(
        values, type={"VARCHAR": pa.string(), "INT": pa.int32(), "DOUBLE": pa.float64()}[dtype.root]
    )
    keys, nulls = array_keys(arrow, dtype)
    index = BitmapIndex(write_bitmap(keys, nulls, dtype), dtype, source="t")
    assert index.row_count == len(values)
    assert list(index.rows(None)) == [i for i, v in enumerate(values) if v is None]
    for v in {v for v in values if v is not None and v == v}:
        key = v.encode() if isinstance(v, str) else v
        assert list(index.rows(key)) == [i for i, x in enumerate(values) if x is not None and x == v]
