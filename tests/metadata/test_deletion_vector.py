"""Deletion vectors: Java fixtures decode and re-encode byte for byte, round trips, corruption detection."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from fixtures import CPP_TEST_DATA, FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, FrozenBitMap, FrozenBitMap64

from lsmlake.core.fileio import FileIO
from lsmlake.errors import CorruptFileError
from lsmlake.metadata.deletion_vector import (
    BITMAP32_MAGIC,
    DeletionVector,
    check_cardinality,
    encode_deletion_vector,
    read_deletion_vector,
    read_deletion_vectors,
    write_deletion_index,
)
from lsmlake.metadata.index_manifest import (
    DELETION_VECTORS_INDEX,
    DeletionVectorMeta,
    IndexFileMeta,
    read_index_manifest,
)

COMPAT = FIXTURES / "apache-paimon/paimon-core/src/test/resources/compatibility"


def _fixture(name: str) -> bytes:
    path = COMPAT / name
    if not path.is_file():
        pytest.skip(f"fixture {path} not found")
    return path.read_bytes()


# --------------------------------------------------------------------------- Java compatibility fixtures


@pytest.mark.parametrize(
    ("name", "ranges", "bitmap64"),
    [
        ("dvindex-32", [(1, 24), (33, 22)], False),
        ("dvindex-64", [(1, 44), (45, 42)], True),
    ],
)
def test_java_fixture_decodes_and_reencodes_byte_identically(
    name: str, ranges: list[tuple[int, int]], bitmap64: bool
) -> None:
    data = _fixture(name)
    dvs = [read_deletion_vector(data, off, length, name=name) for off, length in ranges]
    assert [list(dv.to_numpy()) for dv in dvs] == [[2, 3], [1]]
    assert [dv.cardinality for dv in dvs] == [2, 1]
    assert all(dv.is_64bit == bitmap64 for dv in dvs)
    encoded, metas = write_deletion_index({"f1": dvs[0], "f2": dvs[1]}, bitmap64=bitmap64)
    assert encoded == data
    expected = [(o, n, c) for (o, n), c in zip(ranges, [2, 1], strict=True)]
    assert [(m.offset, m.length, m.cardinality) for m in metas] == expected


def test_32_bit_layout_matches_spec() -> None:
    data, metas = write_deletion_index({"data-0.parquet": DeletionVector.from_positions([1])})
    assert data[0] == 1 and len(data) == 31
    assert metas == [DeletionVectorMeta("data-0.parquet", 1, 22, 1)]
    assert struct.unpack_from(">ii", data, 1) == (22, BITMAP32_MAGIC)
    assert data[5:9] == bytes.fromhex("5e43f2d0")


def test_64_bit_block_starts_with_le_magic_and_counts_every_key() -> None:
    dv = DeletionVector.from_positions(np.array([5, 2**33 + 1], dtype=np.int64))
    assert dv.is_64bit
    block, length = encode_deletion_vector(dv, bitmap64=True)
    assert length == len(block)
    assert block[4:8] == bytes.fromhex("d1d33964")
    assert struct.unpack_from("<q", block, 8)[0] == 3  # keys 0, 1 (empty) and 2
    data = b"\x01" + block
    assert list(read_deletion_vector(data, 1, length, name="x").to_numpy()) == [5, 2**33 + 1]


def test_converting_between_encodings() -> None:
    data = _fixture("dvindex-64")
    dv64 = read_deletion_vector(data, 1, 44, name="dvindex-64")
    as32, metas = write_deletion_index({"f1": dv64})
    assert as32 == _fixture("dvindex-32")[: metas[0].offset + 4 + metas[0].length + 4]
    back = read_deletion_vector(as32, 1, metas[0].length, name="x")
    assert back == dv64 and not back.is_64bit
    assert dv64.contains(3) and not dv64.contains(2**40) and not back.contains(2**40)


def test_32_bit_rejects_positions_beyond_java_limit() -> None:
    with pytest.raises(ValueError, match="bitmap64"):
        encode_deletion_vector(DeletionVector.from_positions([2**31]))


# --------------------------------------------------------------------------- Java tables


def _dv_index_files() -> list[tuple[Path, IndexFileMeta]]:
    if not CPP_TEST_DATA.is_dir():
        return []
    out: dict[Path, IndexFileMeta] = {}
    for manifest in sorted(CPP_TEST_DATA.rglob("manifest/index-manifest-*")):
        io, path = FileIO.for_uri(str(manifest))
        db_dir = next(p for p in manifest.parents if p.name.endswith(".db"))
        for entry in read_index_manifest(io, path):
            meta = entry.index_file
            if meta.index_type != DELETION_VECTORS_INDEX:
                continue
            found = sorted(db_dir.rglob(meta.file_name))
            if found:
                out[found[0]] = meta
    return sorted(out.items())


_TABLE_DV_FILES = _dv_index_files()


@pytest.mark.skipif(not _TABLE_DV_FILES, reason="no DV index files in the fixtures")
@pytest.mark.parametrize(("path", "meta"), _TABLE_DV_FILES, ids=[p.name for p, _ in _TABLE_DV_FILES])
def test_java_table_dv_index_files(path: Path, meta: IndexFileMeta) -> None:
    io, p = FileIO.for_uri(str(path))
    data = io.read_bytes(p)
    ranges = meta.dv_ranges or ()
    assert len(data) == meta.file_size
    dvs = read_deletion_vectors(data, ranges, name=str(path))
    for r in ranges:
        dv = dvs[r.data_file_name]
        assert dv.cardinality >= 1
        if r.cardinality is not None:
            assert dv.cardinality == r.cardinality
    # Rewriting in range order reproduces Java's file exactly.
    encoded, metas = write_deletion_index({r.data_file_name: dvs[r.data_file_name] for r in ranges})
    assert encoded == data
    assert [(m.offset, m.length) for m in metas] == [(r.offset, r.length) for r in ranges]


def test_java_tables_cover_cardinality_and_data_dir_layouts() -> None:
    if not _TABLE_DV_FILES:
        pytest.skip("no DV index files in the fixtures")
    with_cardinality = [p for p, m in _TABLE_DV_FILES if any(r.cardinality for r in m.dv_ranges or ())]
    assert len(with_cardinality) >= 4
    assert any(p.parent.name.startswith("bucket-") for p in with_cardinality)  # index files kept in data dirs


# --------------------------------------------------------------------------- round trips


positions_st = st.lists(st.integers(0, 200_000), max_size=300) | st.lists(
    st.integers(0, 2**20), min_size=0, max_size=3000
).map(lambda xs: xs + list(range(1000, 1000 + len(xs))))


@settings(max_examples=150, deadline=None)
@given(
    files=st.dictionaries(st.text("abc0123-.", min_size=1, max_size=12), positions_st, max_size=5),
    bitmap64=st.booleans(),
)
def test_round_trip(files: dict[str, list[int]], bitmap64: bool) -> None:
    dvs = {k: DeletionVector.from_positions(v) for k, v in files.items()}
    data, metas = write_deletion_index(dvs, bitmap64=bitmap64)
    assert [m.data_file_name for m in metas] == list(files)
    back = read_deletion_vectors(data, metas, name="idx")
    for k, v in files.items():
        assert list(back[k].to_numpy()) == sorted(set(v))
        assert back[k] == dvs[k]
        assert back[k].is_64bit == bitmap64


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 500), max_size=200), st.lists(st.integers(0, 500), max_size=200))
def test_mask_contains_union(a: list[int], b: list[int]) -> None:
    da, db = DeletionVector.from_positions(a), DeletionVector.from_positions(np.array(b, dtype=np.int64))
    mask = da.to_numpy_mask(501)
    assert mask.dtype == np.bool_ and mask.shape == (501,)
    assert set(np.flatnonzero(mask).tolist()) == set(a)
    assert np.array_equal(da.keep_mask(501), ~mask)
    u = da.union(db)
    assert set(u.to_numpy().tolist()) == set(a) | set(b)
    assert all(u.contains(x) for x in a + b)
    assert not u.contains(501) and not u.contains(-1)
    assert u.cardinality == len(set(a) | set(b))
    assert u.is_empty == (not a and not b)


def test_wrapper_is_frozen_and_accepts_mutable_bitmaps() -> None:
    bm = BitMap([1, 2])
    dv = DeletionVector(bm)
    bm.add(3)
    assert isinstance(dv.positions, FrozenBitMap) and dv.cardinality == 2
    with pytest.raises(AttributeError):
        dv.positions = FrozenBitMap()  # type: ignore[misc]
    big = DeletionVector(FrozenBitMap64([2**40]))
    assert big.union(dv).to_numpy().tolist() == [1, 2, 2**40]
    assert DeletionVector.empty().to_numpy_mask(3).tolist() == [False] * 3
    with pytest.raises(CorruptFileError):
        dv.to_numpy_mask(2)
    with pytest.raises(ValueError):
        DeletionVector.from_positions([-1])


# --------------------------------------------------------------------------- corruption


def _one() -> tuple[bytes, DeletionVectorMeta]:
    data, metas = write_deletion_index({"f": DeletionVector.from_positions([3, 7, 100])})
    return data, metas[0]


def test_bad_crc() -> None:
    data, m = _one()
    bad = bytearray(data)
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptFileError, match=r"idx-file: checksum"):
        read_deletion_vector(bytes(bad), m.offset, m.length, name="idx-file")
    bad = bytearray(data)
    bad[12] ^= 0x01  # inside the bitmap body
    with pytest.raises(CorruptFileError, match="checksum"):
        read_deletion_vector(bytes(bad), m.offset, m.length, name="idx-file")


@pytest.mark.parametrize("cut", [1, 4, 9, 20])
def test_truncated(cut: int) -> None:
    data, m = _one()
    with pytest.raises(CorruptFileError, match="idx-file"):
        read_deletion_vector(data[:-cut], m.offset, m.length, name="idx-file")


def test_length_mismatch_version_and_magic() -> None:
    data, m = _one()
    with pytest.raises(CorruptFileError, match="size mismatch"):
        read_deletion_vector(data, m.offset, m.length + 8, name="idx-file")
    with pytest.raises(CorruptFileError, match="version"):
        read_deletion_vector(b"\x02" + data[1:], m.offset, m.length, name="idx-file")
    with pytest.raises(CorruptFileError, match="magic"):
        read_deletion_vector(data, m.offset + 1, m.length, name="idx-file")
    with pytest.raises(CorruptFileError, match="offset"):
        read_deletion_vector(data, 0, m.length, name="idx-file")


def test_malformed_bitmap_with_valid_crc() -> None:
    body = struct.pack(">i", BITMAP32_MAGIC) + b"\x99\x99\x00\x00junk"
    data = b"\x01" + struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    with pytest.raises(CorruptFileError, match="malformed"):
        read_deletion_vector(data, 1, len(body), name="idx-file")
    # trailing bytes after a valid bitmap are rejected too
    good = struct.pack(">i", BITMAP32_MAGIC) + BitMap([1]).serialize() + b"\x00\x00"
    data = b"\x01" + struct.pack(">i", len(good)) + good + struct.pack(">I", zlib.crc32(good))
    with pytest.raises(CorruptFileError, match="trailing"):
        read_deletion_vector(data, 1, len(good), name="idx-file")


def test_cardinality_check() -> None:
    data, m = _one()
    dv = read_deletion_vector(data, m.offset, m.length, name="idx-file")
    check_cardinality(dv, 3, name="idx-file")
    check_cardinality(dv, None, name="idx-file")
    with pytest.raises(CorruptFileError, match=r"holds 3 positions.*says 4"):
        check_cardinality(dv, 4, name="idx-file", data_file="data-1.parquet")
    with pytest.raises(CorruptFileError, match=r"data-1\.parquet"):
        read_deletion_vectors(data, [DeletionVectorMeta("data-1.parquet", m.offset, m.length, 5)], name="idx")
