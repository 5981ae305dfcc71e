"""FileEntry.mergeEntries semantics (merge_entries / live_files) and index-manifest combining."""

from __future__ import annotations

import pytest

from lsmlake.errors import CorruptFileError
from lsmlake.metadata.avro_container import decode_avro_container
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import (
    DeletionVectorMeta,
    IndexFileMeta,
    IndexManifestEntry,
    combine_index_entries,
)
from lsmlake.metadata.manifest import (
    FileKind,
    ManifestEntry,
    decode_manifest,
    encode_manifest,
    live_files,
    merge_entries,
)
from lsmlake.metadata.stats import EMPTY_ROW, EMPTY_STATS

ADD, DELETE = FileKind.ADD, FileKind.DELETE


def _file(name: str, level: int = 0, rows: int = 10) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=100,
        row_count=rows,
        min_key=EMPTY_ROW,
        max_key=EMPTY_ROW,
        key_stats=EMPTY_STATS,
        value_stats=EMPTY_STATS,
        min_sequence_number=0,
        max_sequence_number=rows - 1,
        schema_id=0,
        level=level,
    )


def _entry(kind: FileKind, name: str, level: int = 0, bucket: int = 0) -> ManifestEntry:
    return ManifestEntry(kind, EMPTY_ROW, bucket, 1, _file(name, level))


def _names(entries: list[ManifestEntry]) -> list[tuple[str, str, int]]:
    return [(e.kind.name, e.file.file_name, e.file.level) for e in entries]


def test_add_then_delete_cancels_and_order_is_kept() -> None:
    merged = merge_entries([_entry(ADD, "a"), _entry(ADD, "b"), _entry(DELETE, "a"), _entry(ADD, "c")])
    assert _names(merged) == [("ADD", "b", 0), ("ADD", "c", 0)]


def test_delete_without_add_is_kept_by_merge_but_rejected_by_live_files() -> None:
    merged = merge_entries([_entry(DELETE, "old"), _entry(ADD, "new")])
    assert _names(merged) == [("DELETE", "old", 0), ("ADD", "new", 0)]
    with pytest.raises(CorruptFileError, match="old"):
        live_files([_entry(DELETE, "old"), _entry(ADD, "new")])


def test_duplicate_add_is_an_error() -> None:
    with pytest.raises(CorruptFileError, match="already in the map"):
        merge_entries([_entry(ADD, "a"), _entry(ADD, "a")])
    # A DELETE parked in the map also blocks a later ADD of the same identifier (as in Java).
    with pytest.raises(CorruptFileError):
        merge_entries([_entry(DELETE, "a"), _entry(ADD, "a")])


def test_identifier_includes_level_bucket_and_partition() -> None:
    upgrade = [_entry(ADD, "a", level=0), _entry(DELETE, "a", level=0), _entry(ADD, "a", level=5)]
    assert _names(live_files(upgrade)) == [("ADD", "a", 5)]
    assert len(live_files([_entry(ADD, "a", bucket=0), _entry(ADD, "a", bucket=1)])) == 2
    other_partition = ManifestEntry(ADD, b"\x00\x00\x00\x01" + bytes(16), 0, 1, _file("a"))
    assert len(live_files([_entry(ADD, "a"), other_partition])) == 2


def test_upgrade_helper_and_identifiers() -> None:
    f = _file("a")
    assert f.upgrade(3).level == 3 and f.upgrade(3).file_name == "a" and f.level == 0
    e = _entry(ADD, "a")
    assert e.identifier() == (EMPTY_ROW, 0, 0, "a", (), None, None)
    assert f.identifier() == (0, "a", (), None, None)


# --------------------------------------------------------------------------- index manifests


def _index(
    kind: FileKind,
    name: str,
    *,
    bucket: int = 0,
    type_: str = "DELETION_VECTORS",
    dv: tuple[str, ...] = (),
    global_index: dict[str, object] | None = None,
) -> IndexManifestEntry:
    ranges = tuple(DeletionVectorMeta(d, 1, 22, 1) for d in dv) if type_ == "DELETION_VECTORS" else None
    f = IndexFileMeta(type_, name, 31, len(dv), ranges, None, global_index)
    return IndexManifestEntry(kind, EMPTY_ROW, bucket, f)


def _index_names(entries: list[IndexManifestEntry]) -> list[str]:
    return sorted(e.index_file.file_name for e in entries)


def test_bucketed_dv_add_replaces_and_delete_applies_first() -> None:
    prev = [_index(ADD, "dv-0", bucket=0), _index(ADD, "dv-1", bucket=1), _index(ADD, "h-0", type_="HASH")]
    # A compaction rewrote bucket 0's DV file: DELETE(old) + ADD(new), listed in either order.
    changes = [_index(ADD, "dv-0b", bucket=0), _index(DELETE, "dv-0", bucket=0)]
    assert _index_names(combine_index_entries(prev, changes)) == ["dv-0b", "dv-1", "h-0"]
    # An ADD alone also replaces the entry of its (partition, bucket, type).
    assert _index_names(combine_index_entries(prev, [_index(ADD, "dv-1b", bucket=1)])) == [
        "dv-0",
        "dv-1b",
        "h-0",
    ]
    # A DELETE alone drops the bucket's entry.
    assert _index_names(combine_index_entries(prev, [_index(DELETE, "dv-1", bucket=1)])) == ["dv-0", "h-0"]


def test_bucket_unaware_dv_is_keyed_by_file_name() -> None:
    prev = [_index(ADD, "dv-a", dv=("d1",)), _index(ADD, "dv-b", dv=("d2",))]
    out = combine_index_entries(prev, [_index(ADD, "dv-c", dv=("d3",))], bucket_unaware=True)
    assert _index_names(out) == ["dv-a", "dv-b", "dv-c"]
    with pytest.raises(CorruptFileError, match="d1"):
        combine_index_entries(prev, [_index(ADD, "dv-d", dv=("d1",))], bucket_unaware=True)
    out = combine_index_entries(
        prev, [_index(DELETE, "dv-a", dv=("d1",)), _index(ADD, "dv-e", dv=("d1",))], bucket_unaware=True
    )
    assert _index_names(out) == ["dv-b", "dv-e"]


def test_global_indexes_are_keyed_by_file_name() -> None:
    meta = {"_ROW_RANGE_START": 0, "_ROW_RANGE_END": 7, "_INDEX_FIELD_ID": 1}
    prev = [_index(ADD, "g1", type_="bitmap", global_index=meta)]
    out = combine_index_entries(prev, [_index(ADD, "g2", type_="bitmap", global_index=meta)])
    assert _index_names(out) == ["g1", "g2"]
    assert _index_names(combine_index_entries(prev, [_index(DELETE, "g1", type_="bitmap")])) == []
    with pytest.raises(CorruptFileError):
        combine_index_entries(prev, [_index(DELETE, "nope", type_="bitmap")])


def test_previous_index_manifest_must_hold_only_adds() -> None:
    with pytest.raises(CorruptFileError):
        combine_index_entries([_index(DELETE, "x")], [])


def test_codec_aliases_from_table_options() -> None:
    data = encode_manifest([_entry(ADD, "a")], codec="zstd")
    assert decode_avro_container(data, name="x").codec == "zstandard"
    assert decode_manifest(data) == [_entry(ADD, "a")]
    with pytest.raises(ValueError):
        encode_manifest([], codec="lz5")
