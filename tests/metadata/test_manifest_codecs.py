"""Manifest, manifest-list and index-manifest codecs against every Java-written fixture file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures import (
    FIXTURES,
    fixture_id,
    index_manifest_files,
    manifest_files,
    manifest_list_files,
)

from lsmlake.errors import CorruptFileError
from lsmlake.metadata.avro_container import (
    AVRO_MAGIC,
    ORC_MAGIC,
    decode_avro_container,
    encode_avro_container,
)
from lsmlake.metadata.index_manifest import (
    INDEX_MANIFEST_SCHEMA_JSON,
    decode_index_manifest,
    encode_index_manifest,
)
from lsmlake.metadata.manifest import MANIFEST_SCHEMA_JSON, decode_manifest, encode_manifest
from lsmlake.metadata.manifest_list import (
    MANIFEST_LIST_SCHEMA_JSON,
    decode_manifest_list,
    encode_manifest_list,
)

Decode = Callable[..., list[Any]]
Encode = Callable[..., bytes]

CODECS: dict[str, tuple[Decode, Encode, str]] = {
    "manifest": (
        lambda data, name: decode_manifest(data, name=name),
        lambda entries, sync: encode_manifest(entries, sync_marker=sync),
        MANIFEST_SCHEMA_JSON,
    ),
    "list": (
        lambda data, name: decode_manifest_list(data, name),
        lambda metas, sync: encode_manifest_list(metas, sync_marker=sync),
        MANIFEST_LIST_SCHEMA_JSON,
    ),
    "index": (
        lambda data, name: decode_index_manifest(data, name=name),
        lambda entries, sync: encode_index_manifest(entries, sync_marker=sync),
        INDEX_MANIFEST_SCHEMA_JSON,
    ),
}

ALL_FILES: list[tuple[str, Path]] = (
    [("manifest", p) for p in manifest_files()]
    + [("list", p) for p in manifest_list_files()]
    + [("index", p) for p in index_manifest_files()]
)
AVRO_FILES = [(k, p) for k, p in ALL_FILES if p.read_bytes()[:4] == AVRO_MAGIC]
ORC_FILES = [(k, p) for k, p in ALL_FILES if p.read_bytes()[:3] == ORC_MAGIC]


def _header_schema(p: Path) -> str:
    return decode_avro_container(p.read_bytes(), name=str(p)).schema_json


MODERN_FILES = [(k, p) for k, p in AVRO_FILES if _header_schema(p) == CODECS[k][2]]


def _ids(items: list[tuple[str, Path]]) -> list[str]:
    return [f"{k}:{fixture_id(p)}" for k, p in items]


pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")


def test_fixture_inventory() -> None:
    """Every manifest-kind file is Avro or ORC, and each kind has modern (Java 2.x header) files."""
    assert len(AVRO_FILES) + len(ORC_FILES) == len(ALL_FILES) > 300
    assert ORC_FILES, "expected the legacy ORC manifests of append_09 & co"
    assert {k for k, _ in MODERN_FILES} == {"manifest", "list", "index"}


@pytest.mark.parametrize(("kind", "path"), ALL_FILES, ids=_ids(ALL_FILES))
def test_decode_then_reencode_is_field_identical(kind: str, path: Path) -> None:
    """Comparison: decoded records of our (modern-layout, zstd) re-encoding equal the decoded original."""
    decode, encode, _ = CODECS[kind]
    original = decode(path.read_bytes(), str(path))
    again = decode(encode(original, None), "re-encoded")
    assert again == original


@pytest.mark.parametrize(("kind", "path"), MODERN_FILES, ids=_ids(MODERN_FILES))
def test_modern_files_reencode_byte_identically(kind: str, path: Path) -> None:
    """Comparison: whole-file bytes, reusing the original's random 16-byte sync marker.

    The header schema JSON equals Java 2.x's exactly, and our zstd frames (streaming, level 1, no
    content size) match zstd-jni's, so the files are byte-identical apart from the sync marker.
    """
    data = path.read_bytes()
    decode, encode, schema_json = CODECS[kind]
    contents = decode_avro_container(data, name=str(path))
    assert contents.schema_json == schema_json
    assert encode(decode(data, str(path)), contents.sync_marker) == data


@pytest.mark.parametrize(("kind", "path"), AVRO_FILES, ids=_ids(AVRO_FILES))
def test_container_roundtrip_in_original_layout(kind: str, path: Path) -> None:
    """Comparison: bytes for zstandard files, decoded records for snappy ones (other snappy encoder).

    Re-encodes the raw records with the file's own header schema (0.9 unions, 1.x layouts) and codec.
    """
    data = path.read_bytes()
    c = decode_avro_container(data, name=str(path))
    again = encode_avro_container(c.schema_json, c.records, codec=c.codec, sync_marker=c.sync_marker)
    if c.codec == "zstandard":
        assert again == data
    else:
        assert c.codec == "snappy"
        assert decode_avro_container(again, name="again").records == c.records


def test_old_layouts_decode() -> None:
    """0.9 files wrap the top-level and nested records in ["null", record]; they still decode."""
    p09 = FIXTURES / "alibaba-paimon-cpp/test/test_data/avro/manifest/avro_manifest_09"
    if not p09.exists():
        pytest.skip("0.9 manifest fixture absent")
    assert _header_schema(p09).startswith('["null",')
    entries = decode_manifest(p09.read_bytes(), name=str(p09))
    assert entries and all(e.file.value_stats_cols is None and e.file.first_row_id is None for e in entries)
    assert all(e.file.file_source is not None for e in entries)
    rust = FIXTURES / "apache-paimon-rust/crates/paimon/tests/fixtures/manifest"
    for p in sorted(rust.glob("*")):
        assert decode_avro_container(p.read_bytes(), name=str(p)).codec == "snappy"
        decode = decode_manifest_list if p.name.startswith("manifest-list") else decode_manifest
        assert decode(p.read_bytes(), name=str(p))


def test_orc_manifest_creation_time_is_raw_wall_clock() -> None:
    """ORC `_CREATION_TIME` reads as raw millis: writer's UTC+8 wall clock, ~8 h after timeMillis."""
    table = FIXTURES / "alibaba-paimon-cpp/test/test_data/parquet/append_09.db/append_09"
    if not table.exists():
        pytest.skip("append_09 fixture absent")
    from lsmlake.metadata.snapshot import decode_snapshot

    snap = decode_snapshot((table / "snapshot/snapshot-1").read_text())
    metas = decode_manifest_list((table / "manifest" / snap.delta_manifest_list).read_bytes(), "delta")
    (meta,) = metas
    raw = (table / "manifest" / meta.file_name).read_bytes()
    assert raw[:3] == ORC_MAGIC
    entries = decode_manifest(raw, name=meta.file_name)
    assert len(entries) == meta.num_added_files
    for e in entries:
        assert e.file.creation_time_millis is not None
        assert abs(e.file.creation_time_millis - snap.time_millis - 8 * 3600_000) < 60_000


@pytest.mark.parametrize(
    "path",
    [p for k, p in ALL_FILES if k == "index"],
    ids=[fixture_id(p) for k, p in ALL_FILES if k == "index"],
)
def test_dv_index_entries_have_cardinalities(path: Path) -> None:
    """DV ranges decode; files written with `_CARDINALITY` carry it and it matches the bitmap."""
    pyroaring = pytest.importorskip("pyroaring")
    has_cardinality = "_CARDINALITY" in _header_schema(path)
    table_root = path.parents[1]
    for e in decode_index_manifest(path.read_bytes(), name=str(path)):
        f = e.index_file
        if f.index_type != "DELETION_VECTORS":
            assert f.dv_ranges is None and f.global_index is not None
            continue
        assert f.dv_ranges is not None and len(f.dv_ranges) == f.row_count
        located = [q for q in table_root.rglob(f.file_name) if q.is_file()]
        blob = located[0].read_bytes() if located else None
        for dv in f.dv_ranges:
            assert (dv.cardinality is not None) == has_cardinality
            assert dv.offset + 4 + dv.length + 4 <= f.file_size
            if blob is None:
                continue
            assert len(blob) == f.file_size and blob[0] == 1
            size = int.from_bytes(blob[dv.offset : dv.offset + 4], "big")
            assert size == dv.length and blob[dv.offset + 4 : dv.offset + 8] == bytes.fromhex("5e43f2d0")
            bitmap = pyroaring.BitMap.deserialize(blob[dv.offset + 8 : dv.offset + 4 + size])
            if dv.cardinality is not None:
                assert len(bitmap) == dv.cardinality


def test_dv_cardinalities_present() -> None:
    """At least the 1.x DV tables expose non-null cardinalities (e.g. pk_table_with_dv-style 1/2/3)."""
    seen = [
        dv.cardinality
        for k, p in ALL_FILES
        if k == "index"
        for e in decode_index_manifest(p.read_bytes(), name=str(p))
        for dv in e.index_file.dv_ranges or ()
    ]
    assert {1, 2, 3} <= {c for c in seen if c is not None}


# --------------------------------------------------------------------------- bad input


def _a_modern(kind: str) -> Path:
    for k, p in MODERN_FILES:
        if k == kind and os.path.getsize(p) > 200:
            return p
    pytest.skip(f"no modern {kind} fixture")


@pytest.mark.parametrize("kind", ["manifest", "list", "index"])
def test_truncated_files_raise_corrupt_file_error_naming_the_file(kind: str) -> None:
    decode, _, _ = CODECS[kind]
    data = _a_modern(kind).read_bytes()
    for cut in (3, 20, len(data) // 2, len(data) - 5):
        with pytest.raises(CorruptFileError, match="broken-file"):
            decode(data[:cut], "broken-file")


def test_garbage_and_wrong_version_raise() -> None:
    with pytest.raises(CorruptFileError, match="junk"):
        decode_manifest(b"not a manifest at all", name="junk")
    index_bytes = _a_modern("index").read_bytes()
    with pytest.raises(CorruptFileError, match="version"):
        decode_manifest(index_bytes, name="index-as-manifest")
