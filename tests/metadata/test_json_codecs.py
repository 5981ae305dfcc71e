"""Schema and snapshot JSON files against the fixtures, and the SnapshotManager's hint rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fixtures import FIXTURES, GOLDEN_WAREHOUSE, copy_fixture, fixture_id, schema_files, snapshot_files

from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import TableSchema, decode_schema, encode_schema, read_schema, schema_file_name
from lsmlake.core.types import DataField, DataType
from lsmlake.errors import CorruptFileError, NoSuchSnapshotError, UnsupportedError
from lsmlake.metadata.snapshot import Snapshot, decode_snapshot, encode_snapshot, snapshot_file_name
from lsmlake.metadata.snapshot_manager import SnapshotManager

SCHEMAS = schema_files()
SNAPSHOTS = snapshot_files()
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")


@needs_fixtures
@pytest.mark.parametrize("path", SCHEMAS, ids=[fixture_id(p) for p in SCHEMAS])
def test_schema_reencodes_byte_identically(path: Path) -> None:
    """Comparison: exact text (Jackson pretty-print reproduced), hence also the same parsed dict."""
    text = path.read_text()
    schema = decode_schema(text, name=str(path))
    assert schema.id == int(path.name.removeprefix("schema-"))
    assert encode_schema(schema) == text
    assert json.loads(encode_schema(schema)) == json.loads(text)


def _without_nulls(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None and k != "logOffsets"}


@needs_fixtures
@pytest.mark.parametrize("path", SNAPSHOTS, ids=[fixture_id(p) for p in SNAPSHOTS])
def test_snapshot_reencodes_to_the_same_dict(path: Path) -> None:
    """Comparison: parsed dicts, after dropping explicit nulls and legacy `logOffsets` from the original.

    Java 2.x files (no nulls, no logOffsets) must also match byte for byte.
    """
    text = path.read_text()
    original = json.loads(text)
    snap = decode_snapshot(text, name=str(path))
    again = encode_snapshot(snap)
    assert json.loads(again) == _without_nulls(original)
    assert decode_snapshot(again) == snap
    if original == _without_nulls(original) and text.startswith('{\n  "version" : '):
        assert again == text


@needs_fixtures
def test_some_snapshots_are_byte_identical() -> None:
    same = [p for p in SNAPSHOTS if encode_snapshot(decode_snapshot(p.read_text())) == p.read_text()]
    assert len(same) >= 10


@needs_fixtures
def test_schema_properties_on_fixtures() -> None:
    io = FileIO.for_uri("/")[0]
    append09 = FIXTURES / "alibaba-paimon-cpp/test/test_data/parquet/append_09.db/append_09/schema/schema-0"
    s = read_schema(io, str(append09))
    assert s.partition_keys == ("f1",) and s.primary_keys == ()
    assert s.bucket_keys == ["f2"] and s.trimmed_primary_keys == []
    assert s.field_names == ["f0", "f1", "f2", "f3"] and s.field("f3").type.root == "DOUBLE"
    assert s.logical_arrow_schema().names == s.field_names
    vector = decode_schema(
        (GOLDEN_WAREHOUSE / "default.db/test_pk_vector_golden/schema/schema-0").read_text()
    )
    assert vector.field("embedding").type == DataType("VECTOR", True, length=4, element=DataType("FLOAT"))
    assert vector.bucket_keys == ["id"] and vector.comment == ""
    with pytest.raises(UnsupportedError):
        vector.logical_arrow_schema()


def test_schema_model_rules() -> None:
    fields = (
        DataField(0, "dt", DataType("VARCHAR", False, length=2147483647)),
        DataField(1, "id", DataType("BIGINT", False)),
        DataField(2, "v", DataType("DECIMAL", precision=10, scale=2)),
    )
    s = TableSchema(
        id=0,
        fields=fields,
        highest_field_id=2,
        partition_keys=("dt",),
        primary_keys=("dt", "id"),
        options={"bucket": "2"},
        time_millis=5,
    )
    assert s.trimmed_primary_keys == ["id"] and s.bucket_keys == ["id"]
    assert s.logical_arrow_schema().field("v").type == pa.decimal128(10, 2)
    text = encode_schema(s)
    assert '"type" : "DECIMAL(10, 2)"' in text and '"comment"' not in text
    assert decode_schema(text) == s
    assert schema_file_name(7) == "schema-7"
    legacy = decode_schema(
        '{"id": 0, "fields": [], "highestFieldId": -1, "partitionKeys": [], "primaryKeys": [], "options": {}}'
    )
    assert legacy.version == 1 and legacy.time_millis == 0
    assert legacy.effective_options == {"bucket": "1", "file.format": "orc"}
    with pytest.raises(CorruptFileError, match="bad-schema"):
        decode_schema('{"id": 0}', name="bad-schema")


def test_snapshot_codec_rules() -> None:
    s = Snapshot(
        id=3,
        schema_id=0,
        base_manifest_list="b",
        delta_manifest_list="d",
        commit_user="u",
        commit_identifier=9223372036854775807,
        commit_kind="APPEND",
        time_millis=1,
        total_record_count=5,
        delta_record_count=2,
        next_row_id=0,
        properties={},
    )
    text = encode_snapshot(s)
    keys = list(json.loads(text))
    assert keys == [
        "version",
        "id",
        "schemaId",
        "baseManifestList",
        "deltaManifestList",
        "commitUser",
        "commitIdentifier",
        "commitKind",
        "timeMillis",
        "totalRecordCount",
        "deltaRecordCount",
        "nextRowId",
    ]
    assert decode_snapshot(text) == Snapshot(**{**s.__dict__, "properties": None})
    assert snapshot_file_name(3) == "snapshot-3"
    with pytest.raises(CorruptFileError, match="snap-x"):
        decode_snapshot("{", name="snap-x")
    with pytest.raises(CorruptFileError, match="baseManifestList"):
        decode_snapshot('{"id": 1}', name="snap-y")


# --------------------------------------------------------------------------- SnapshotManager


@needs_fixtures
def test_snapshot_manager_hints_and_publish(tmp_path: Path) -> None:
    root = copy_fixture(
        "alibaba-paimon-cpp/test/test_data/parquet/pk_table_scan_and_read_dv.db/pk_table_scan_and_read_dv",
        tmp_path,
    )
    io = FileIO.for_uri(str(root))[0]
    sm = SnapshotManager(io, str(root))
    ids = sm.snapshot_ids()
    assert ids == list(range(1, len(ids) + 1))
    assert sm.latest_id() == ids[-1] == int((root / "snapshot/LATEST").read_text())
    assert sm.earliest_id() == 1
    latest = sm.latest()
    assert latest is not None and latest.id == ids[-1]

    sm.write_latest_hint(1)  # stale: snapshot-2 exists, so listing wins
    assert (root / "snapshot/LATEST").read_text() == "1" and sm.latest_id() == ids[-1]
    (root / "snapshot/LATEST").unlink()
    (root / "snapshot/EARLIEST").write_text("garbage")
    assert sm.latest_id() == ids[-1] and sm.earliest_id() == 1

    (root / "snapshot/snapshot-1").unlink()  # as if expired, with a stale EARLIEST hint
    sm.write_earliest_hint(1)
    assert sm.earliest_id() == 2
    with pytest.raises(NoSuchSnapshotError):
        sm.snapshot(1)

    nxt = Snapshot(**{**latest.__dict__, "id": latest.id + 1, "delta_record_count": 0})
    assert sm.try_publish(nxt)
    assert sm.try_publish(nxt)  # the very same bytes: a retried publish counts as done
    rival = Snapshot(**{**nxt.__dict__, "commit_user": "someone-else"})
    assert not sm.try_publish(rival)
    assert sm.latest_id() == nxt.id and sm.snapshot(nxt.id) == nxt


def test_snapshot_manager_on_empty_table(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))[0]
    sm = SnapshotManager(io, str(tmp_path / "t"))
    assert sm.latest_id() is None and sm.earliest_id() is None and sm.latest() is None
    assert sm.snapshot_ids() == []
    (tmp_path / "t/snapshot").mkdir(parents=True)
    (tmp_path / "t/snapshot/.snapshot-1.abc.tmp").write_text("{}")
    assert sm.snapshot_ids() == []
