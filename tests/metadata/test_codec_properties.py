"""Hypothesis round trips: decode(encode(x)) == x for every metadata codec and Avro codec."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lsmlake.core.schema import TableSchema, decode_schema, encode_schema
from lsmlake.core.types import MAX_LENGTH, DataField, DataType
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import (
    GLOBAL_INDEX_KEYS,
    DeletionVectorMeta,
    IndexFileMeta,
    IndexManifestEntry,
    decode_index_manifest,
    encode_index_manifest,
)
from lsmlake.metadata.manifest import FileKind, ManifestEntry, decode_manifest, encode_manifest
from lsmlake.metadata.manifest_list import ManifestFileMeta, decode_manifest_list, encode_manifest_list
from lsmlake.metadata.snapshot import Snapshot, decode_snapshot, encode_snapshot
from lsmlake.metadata.stats import SimpleStats

LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=20)
BLOB = st.binary(max_size=40)
FILE_NAME = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="/\\%"), min_size=1, max_size=20
).filter(lambda n: n not in (".", ".."))
"""A plain file name (metadata naming a path elsewhere is refused: tests/reliability/test_path_confinement.py)."""
EXTERNAL_PATH = FILE_NAME.map(lambda n: f"s3://bucket/ext/{n}")
CODEC = st.sampled_from(["zstandard", "null", "deflate", "snappy"])


def opt(s: st.SearchStrategy) -> st.SearchStrategy:  # type: ignore[type-arg]
    return st.none() | s


names = st.lists(TEXT, max_size=4).map(tuple)
stats = st.builds(SimpleStats, BLOB, BLOB, opt(st.lists(opt(LONG), max_size=5).map(tuple)))
data_files = st.builds(
    DataFileMeta,
    file_name=FILE_NAME,
    file_size=LONG,
    row_count=LONG,
    min_key=BLOB,
    max_key=BLOB,
    key_stats=stats,
    value_stats=stats,
    min_sequence_number=LONG,
    max_sequence_number=LONG,
    schema_id=LONG,
    level=INT,
    extra_files=st.lists(FILE_NAME, max_size=4).map(tuple),
    creation_time_millis=opt(LONG),
    delete_row_count=opt(LONG),
    embedded_index=opt(BLOB),
    file_source=opt(st.sampled_from([0, 1])),
    value_stats_cols=opt(names),
    external_path=opt(EXTERNAL_PATH),
    first_row_id=opt(LONG),
    write_cols=opt(names),
)
kinds = st.sampled_from(list(FileKind))
manifest_entries = st.builds(ManifestEntry, kinds, BLOB, INT, INT, data_files)
manifest_metas = st.builds(
    ManifestFileMeta,
    FILE_NAME,
    LONG,
    LONG,
    LONG,
    stats,
    LONG,
    opt(INT),
    opt(INT),
    opt(INT),
    opt(INT),
    opt(LONG),
    opt(LONG),
)
dv_metas = st.builds(DeletionVectorMeta, TEXT, INT, INT, opt(LONG))
global_indexes = st.fixed_dictionaries(
    dict.fromkeys(GLOBAL_INDEX_KEYS[:2], LONG)
    | {
        "_INDEX_FIELD_ID": INT,
        "_EXTRA_FIELD_IDS": opt(st.lists(INT, max_size=3)),
        "_INDEX_META": opt(BLOB),
        "_SOURCE_META": opt(BLOB),
    }
)
index_files = st.builds(
    IndexFileMeta,
    st.sampled_from(["DELETION_VECTORS", "HASH", "btree"]),
    FILE_NAME,
    LONG,
    LONG,
    opt(st.lists(dv_metas, max_size=3).map(tuple)),
    opt(EXTERNAL_PATH),
    opt(global_indexes),
)
index_entries = st.builds(IndexManifestEntry, kinds, BLOB, INT, index_files)


@settings(max_examples=60, deadline=None)
@given(st.lists(manifest_entries, max_size=5), CODEC)
def test_manifest_roundtrip(entries: list[ManifestEntry], codec: str) -> None:
    assert decode_manifest(encode_manifest(entries, codec=codec)) == entries


@settings(max_examples=60, deadline=None)
@given(st.lists(manifest_metas, max_size=5), CODEC)
def test_manifest_list_roundtrip(metas: list[ManifestFileMeta], codec: str) -> None:
    assert decode_manifest_list(encode_manifest_list(metas, codec)) == metas


@settings(max_examples=60, deadline=None)
@given(st.lists(index_entries, max_size=5), CODEC)
def test_index_manifest_roundtrip(entries: list[IndexManifestEntry], codec: str) -> None:
    assert decode_index_manifest(encode_index_manifest(entries, codec=codec)) == entries


snapshots = st.builds(
    Snapshot,
    version=st.just(3),
    uuid=opt(TEXT),
    id=LONG,
    schema_id=LONG,
    base_manifest_list=FILE_NAME,
    base_manifest_list_size=opt(LONG),
    delta_manifest_list=FILE_NAME,
    delta_manifest_list_size=opt(LONG),
    changelog_manifest_list=opt(FILE_NAME),
    changelog_manifest_list_size=opt(LONG),
    index_manifest=opt(FILE_NAME),
    commit_user=TEXT,
    writer_version=opt(TEXT),
    commit_identifier=LONG,
    commit_kind=st.sampled_from(["APPEND", "COMPACT", "OVERWRITE", "ANALYZE"]),
    time_millis=LONG,
    total_record_count=LONG,
    delta_record_count=LONG,
    changelog_record_count=opt(LONG),
    watermark=opt(LONG),
    statistics=opt(FILE_NAME),
    properties=opt(st.dictionaries(TEXT, TEXT, min_size=1, max_size=3)),
    next_row_id=opt(LONG),
    operation=opt(st.sampled_from(["WRITE", "DELETE"])),
)


@settings(max_examples=100, deadline=None)
@given(snapshots)
def test_snapshot_roundtrip(s: Snapshot) -> None:
    assert decode_snapshot(encode_snapshot(s)) == s


atomic_types = st.one_of(
    st.sampled_from(["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE"]).map(
        DataType
    ),
    st.just(DataType("VARCHAR", length=MAX_LENGTH)),
    st.just(DataType("VARBINARY", length=MAX_LENGTH)),
    st.integers(1, 38).flatmap(
        lambda p: st.integers(0, p).map(lambda s: DataType("DECIMAL", precision=p, scale=s))
    ),
    st.integers(0, 9).map(lambda p: DataType("TIMESTAMP", precision=p)),
    st.integers(0, 9).map(lambda p: DataType("TIMESTAMP_LTZ", precision=p)),
    st.integers(1, 100).map(lambda n: DataType("CHAR", length=n)),
).flatmap(lambda t: st.booleans().map(lambda nullable: t.copy(nullable=nullable)))


@st.composite
def table_schemas(draw: st.DrawFn) -> TableSchema:
    col_names = draw(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True))
    fields = tuple(DataField(i, n, draw(atomic_types), draw(opt(TEXT))) for i, n in enumerate(col_names))
    pk = tuple(draw(st.lists(st.sampled_from(col_names), unique=True, max_size=2)))
    return TableSchema(
        version=draw(st.sampled_from([1, 2, 3])),
        id=draw(st.integers(0, 100)),
        fields=fields,
        highest_field_id=len(fields) - 1,
        partition_keys=(),
        primary_keys=pk,
        options=draw(st.dictionaries(TEXT, TEXT, max_size=4)),
        comment=draw(opt(TEXT)),
        time_millis=draw(LONG),
    )


@settings(max_examples=100, deadline=None)
@given(table_schemas())
def test_schema_roundtrip(s: TableSchema) -> None:
    assert decode_schema(encode_schema(s)) == s
