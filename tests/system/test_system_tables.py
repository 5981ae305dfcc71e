"""System tables: each one's rows checked against the snapshots, manifests and index files they show."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest
from fixtures import CPP_TEST_DATA, FIXTURES, copy_fixture

import lsmlake
from lsmlake.core.binary_row import Timestamp
from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import read_schema, schema_to_json
from lsmlake.core.types import DataType
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.maintenance import create_tag
from lsmlake.metadata.index_manifest import read_index_manifest
from lsmlake.metadata.live_files import live_entries, snapshot_manifests
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.system.registry import SYSTEM_TABLES, SystemTable, read_system_table
from lsmlake.system.render import (
    cast_to_string,
    duration_string,
    internal_string,
    java_double,
    utc_to_local_millis,
)
from lsmlake.table import Table

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("dt", pa.date32()),
        ("v", pa.float64()),
        ("s", pa.string()),
    ]
)
D1, D2 = dt.date(2024, 1, 1), dt.date(2024, 1, 2)


def _rows(n: int, start: int, day: dt.date, v: float) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "dt": [day] * n, "v": [v] * n, "s": [f"s{i}" for i in ids]},
        schema=SCHEMA,
    )


def _history(catalog: lsmlake.Catalog, **options: str) -> Table:
    """Four writes over two partitions, a delete, with compactions in between."""
    opts = {"bucket": "2", "num-sorted-run.compaction-trigger": "2", **options}
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options=opts,
    )
    t.write(pa.concat_tables([_rows(4, 0, D1, 1.0), _rows(3, 0, D2, 2.0)]))
    t.write(_rows(4, 2, D1, 3.0))
    keys = pa.schema([("id", pa.int64()), ("dt", pa.date32())])
    t.delete(pa.table({"id": [0, 1], "dt": [D1, D2]}, schema=keys))
    t.write(_rows(2, 10, D2, 0.5))
    return t


def _live(t: Table, snapshot_id: int | None = None) -> list[ManifestEntry]:
    snap = t.latest_snapshot() if snapshot_id is None else t.snapshot(snapshot_id)
    return live_entries(t.io, t.paths, snap)


def _partition_text(e: ManifestEntry) -> str:
    from lsmlake.core.binary_row import deserialize_row

    (day,) = deserialize_row(e.partition, [DataType("DATE", False)])
    assert isinstance(day, dt.date)
    return "{" + day.isoformat() + "}"


# --------------------------------------------------------------------------- names and handles


def test_unknown_name_lists_the_valid_ones(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    with pytest.raises(ValueError, match=r"valid names are: .*files"):
        read_system_table(t, "nope")
    assert {
        "snapshots",
        "schemas",
        "options",
        "files",
        "manifests",
        "partitions",
        "buckets",
        "table_indexes",
        "tags",
        "consumers",
    } <= set(SYSTEM_TABLES)


def test_system_table_handle(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    st = SystemTable(t, "FILES")
    assert st.name == "db.t$files"
    out = st.read(columns=["bucket", "level"], limit=2)
    assert out.column_names == ["bucket", "level"] and out.num_rows == 2
    assert st.with_options({"scan.snapshot-id": "1"}).read().num_rows == len(_live(t, 1))


def test_empty_table_gives_empty_tables_with_schemas(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.e", schema=SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    for name in SYSTEM_TABLES:
        out = read_system_table(t, name)
        if name in ("schemas", "options"):
            assert out.num_rows >= (1 if name == "schemas" else 0)
        else:
            assert out.num_rows == 0, name
    assert read_system_table(t, "files").column_names[:3] == ["partition", "bucket", "file_path"]


# --------------------------------------------------------------------------- $snapshots $schemas $options


def test_snapshots_rows_match_snapshot_files(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    out = read_system_table(t, "snapshots")
    assert out.column_names == [
        "snapshot_id",
        "schema_id",
        "commit_user",
        "commit_identifier",
        "commit_kind",
        "commit_time",
        "base_manifest_list",
        "delta_manifest_list",
        "changelog_manifest_list",
        "total_record_count",
        "delta_record_count",
        "changelog_record_count",
        "watermark",
        "next_row_id",
        "operation",
        "writer_version",
    ]
    assert out.schema.field("commit_time").type == pa.timestamp("ms")
    ids = t.snapshot_manager.snapshot_ids()
    assert out.column("snapshot_id").to_pylist() == ids
    assert "COMPACT" in out.column("commit_kind").to_pylist()
    for row in out.to_pylist():
        s = t.snapshot(row["snapshot_id"])
        assert (row["schema_id"], row["commit_user"], row["commit_identifier"], row["commit_kind"]) == (
            s.schema_id,
            s.commit_user,
            s.commit_identifier,
            s.commit_kind,
        )
        assert row["base_manifest_list"] == s.base_manifest_list
        assert row["delta_manifest_list"] == s.delta_manifest_list
        assert row["total_record_count"] == s.total_record_count
        assert row["delta_record_count"] == s.delta_record_count
        local = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=utc_to_local_millis(s.time_millis))
        assert row["commit_time"] == local


def test_schemas_and_options(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog, **{"deletion-vectors.enabled": "false"})
    (row,) = read_system_table(t, "schemas").to_pylist()
    assert row["schema_id"] == 0
    assert json.loads(row["fields"]) == schema_to_json(t.schema)["fields"]
    assert row["fields"].startswith('[{"id":0,"name":"id","type":"BIGINT NOT NULL"}')
    assert json.loads(row["partition_keys"]) == ["dt"] and json.loads(row["primary_keys"]) == ["id", "dt"]
    assert json.loads(row["options"]) == dict(t.schema.options)
    options = read_system_table(t, "options").to_pylist()
    assert {r["key"]: r["value"] for r in options} == dict(t.schema.options)


# --------------------------------------------------------------------------- $files


def test_files_match_live_entries(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    live = _live(t)
    out = read_system_table(t, "files")
    assert out.num_rows == len(live)
    assert out.schema.field("creation_time").type == pa.timestamp("ms")
    assert out.column_names[-4:] == ["deleteRowCount", "file_source", "first_row_id", "write_cols"]
    rows = {os.path.basename(r["file_path"]): r for r in out.to_pylist()}
    for e in live:
        f = e.file
        r = rows[f.file_name]
        assert os.path.exists(r["file_path"]) and r["file_path"].startswith(t.root)
        assert (r["bucket"], r["level"], r["record_count"], r["file_size_in_bytes"]) == (
            e.bucket,
            f.level,
            f.row_count,
            f.file_size,
        )
        assert r["min_sequence_number"] == f.min_sequence_number
        assert r["max_sequence_number"] == f.max_sequence_number
        assert r["partition"] == _partition_text(e)
        assert r["file_format"] == "parquet" and r["schema_id"] == 0
        assert r["deleteRowCount"] == f.delete_row_count
        assert r["file_source"] in ("APPEND", "COMPACT")
        assert r["min_key"].startswith("[") and r["max_key"].endswith("]")
        assert r["null_value_counts"].startswith("{dt=0, id=0, s=")
        day = (dt.date.fromisoformat(r["partition"][1:-1]) - dt.date(1970, 1, 1)).days
        assert f"dt={day}" in r["min_value_stats"]  # internal DATE value: days since epoch
    assert [(r["partition"], r["bucket"]) for r in out.to_pylist()] == sorted(
        (r["partition"], r["bucket"]) for r in out.to_pylist()
    )


def test_files_time_travel_by_id_option_and_tag(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    first = {e.file.file_name for e in _live(t, 1)}

    def names(table: pa.Table) -> set[str]:
        return {os.path.basename(p) for p in table.column("file_path").to_pylist()}

    assert names(read_system_table(t, "files", snapshot_id=1)) == first
    assert names(read_system_table(t.with_options({"scan.snapshot-id": "1"}), "files")) == first
    create_tag(t, "first", 1)
    assert names(read_system_table(t.with_options({"scan.tag-name": "first"}), "files")) == first
    with pytest.raises(NoSuchSnapshotError):
        read_system_table(t, "files", snapshot_id=999)


def test_files_key_and_stats_rendering(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("k", pa.string()), ("n", pa.int32()), ("f", pa.float32())])
    t = catalog.create_table("db.r", schema=schema, primary_key=["k"], options={"bucket": "1"})
    t.write(pa.table({"k": ["b", "a"], "n": [None, 7], "f": [0.1, 1e10]}, schema=schema))
    (r,) = read_system_table(t, "files").to_pylist()
    assert r["partition"] == "{}"
    assert (r["min_key"], r["max_key"]) == ("[a]", "[b]")
    assert r["null_value_counts"] == "{f=0, k=0, n=1}"
    assert r["min_value_stats"] == "{f=0.1, k=a, n=7}"
    assert r["max_value_stats"] == "{f=1.0E10, k=b, n=7}"


# --------------------------------------------------------------------------- $manifests $partitions $buckets


def test_manifests_match_manifest_lists(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    metas = snapshot_manifests(t.io, t.paths, t.latest_snapshot())
    out = read_system_table(t, "manifests").to_pylist()
    assert [r["file_name"] for r in out] == [m.file_name for m in metas]
    for r, m in zip(out, metas, strict=True):
        assert (r["file_size"], r["num_added_files"], r["num_deleted_files"]) == (
            m.file_size,
            m.num_added_files,
            m.num_deleted_files,
        )
        assert r["min_partition_stats"] in ("{2024-01-01}", "{2024-01-02}")
        assert r["min_partition_stats"] <= r["max_partition_stats"]


def test_partitions_and_buckets_sum_live_files(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    live = _live(t)
    by_part: dict[str, list[ManifestEntry]] = defaultdict(list)
    by_bucket: dict[tuple[str, int], list[ManifestEntry]] = defaultdict(list)
    for e in live:
        by_part[_partition_text(e)].append(e)
        by_bucket[(_partition_text(e), e.bucket)].append(e)
    parts = read_system_table(t, "partitions").to_pylist()
    assert [r["partition"] for r in parts] == ["dt=2024-01-01", "dt=2024-01-02"]
    for r in parts:
        entries = by_part["{" + r["partition"][3:] + "}"]
        assert r["record_count"] == sum(e.file.row_count for e in entries)
        assert r["file_size_in_bytes"] == sum(e.file.file_size for e in entries)
        assert r["file_count"] == len(entries) and r["total_buckets"] == 2 and r["done"] is False
        assert r["deleted_record_count"] == 0
    buckets = read_system_table(t, "buckets").to_pylist()
    assert [(r["partition"], r["bucket"]) for r in buckets] == sorted(by_bucket)
    for r in buckets:
        entries = by_bucket[(r["partition"], r["bucket"])]
        assert r["record_count"] == sum(e.file.row_count for e in entries)
        assert r["file_count"] == len(entries)
        newest = max(e.file.creation_time_millis or 0 for e in entries)
        assert r["last_update_time"] == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=newest)


# --------------------------------------------------------------------------- $table_indexes $tags $consumers


def test_table_indexes_of_a_dv_table(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog, **{"deletion-vectors.enabled": "true"})
    snap = t.latest_snapshot()
    if not snap.index_manifest:
        pytest.skip("the writer produced no deletion vectors for this history")
    entries = read_index_manifest(t.io, t.paths.manifest(snap.index_manifest))
    out = read_system_table(t, "table_indexes").to_pylist()
    assert [r["file_name"] for r in out] == [e.index_file.file_name for e in entries]
    for r, e in zip(out, entries, strict=True):
        assert r["index_type"] == "DELETION_VECTORS" and r["bucket"] == e.bucket
        assert r["row_count"] == len(r["dv_ranges"]) == len(e.index_file.dv_ranges or ())
        assert [d["f0"] for d in r["dv_ranges"]] == [d.data_file_name for d in e.index_file.dv_ranges or ()]
        assert r["row_range_start"] is None and r["index_field_name"] is None
    parts = read_system_table(t, "partitions").to_pylist()
    deleted = {r["partition"]: r["deleted_record_count"] for r in parts}
    dv_total = sum(d["_CARDINALITY"] for r in out for d in r["dv_ranges"])
    assert sum(deleted.values()) == dv_total


def test_tags_and_consumers(catalog: lsmlake.Catalog) -> None:
    t = _history(catalog)
    create_tag(t, "b", 2, time_retained_ms=5_400_000)
    create_tag(t, "a", 1)
    rows = read_system_table(t, "tags").to_pylist()
    assert [r["tag_name"] for r in rows] == ["a", "b"]
    a, b = rows
    assert (a["snapshot_id"], a["create_time"], a["time_retained"]) == (1, None, None)
    assert a["record_count"] == t.snapshot(1).total_record_count
    assert b["snapshot_id"] == 2 and b["time_retained"] == "PT1H30M"
    assert isinstance(b["create_time"], dt.datetime)
    consumer_dir = Path(t.root) / "consumer"
    consumer_dir.mkdir()
    (consumer_dir / "consumer-job1").write_text('{"nextSnapshot":3}')
    assert read_system_table(t, "consumers").to_pylist() == [{"consumer_id": "job1", "next_snapshot_id": 3}]


# --------------------------------------------------------------------------- Java-written fixtures


def _fixture_table(relpath: str, tmp_path: Path) -> Table:
    db = copy_fixture(CPP_TEST_DATA.relative_to(FIXTURES) / relpath, tmp_path)
    root = next(p for p in db.iterdir() if p.is_dir())
    io, path = FileIO.for_uri(str(root))
    ids = sorted(int(p.name.split("-")[1]) for p in (root / "schema").glob("schema-*"))
    return Table(root.name, io, path, read_schema(io, f"{path}/schema/schema-{ids[-1]}"))


def test_java_dv_table_files_snapshots_and_indexes(tmp_path: Path) -> None:
    t = _fixture_table("parquet/pk_table_scan_and_read_dv.db", tmp_path)
    snaps = read_system_table(t, "snapshots")
    assert snaps.column("snapshot_id").to_pylist() == t.snapshot_manager.snapshot_ids()
    assert snaps.column("commit_kind").to_pylist()[:2] == ["APPEND", "COMPACT"]
    files = read_system_table(t, "files").to_pylist()
    live = _live(t)
    assert sorted(os.path.basename(r["file_path"]) for r in files) == sorted(e.file.file_name for e in live)
    assert all(os.path.exists(r["file_path"]) for r in files)
    assert {r["partition"] for r in files} == {"{10}", "{20}"}
    assert 0 in {r["level"] for r in files}  # level 0 is listed even though DV readers skip it
    name = "data-f19db350-7c55-4686-8839-78d15aa17fc1-0.parquet"
    first = next(r for r in files if r["file_path"].endswith(name))
    assert first["min_key"] == "[Alice, 1]" and first["level"] == 5
    assert first["null_value_counts"] == "{f0=0, f1=0, f2=0, f3=0}"
    assert first["min_value_stats"] == "{f0=Alice, f1=10, f2=1, f3=11.0}"
    indexes = read_system_table(t, "table_indexes").to_pylist()
    entries = read_index_manifest(t.io, t.paths.manifest(t.latest_snapshot().index_manifest))
    assert len(indexes) == len(entries) == 2
    for r in indexes:
        assert r["index_type"] == "DELETION_VECTORS" and r["partition"] == "{10}"
        assert r["dv_ranges"] == [{"f0": r["dv_ranges"][0]["f0"], "f1": 1, "f2": 22, "_CARDINALITY": 1}]
    parts = read_system_table(t, "partitions").to_pylist()
    assert [(p["partition"], p["deleted_record_count"]) for p in parts] == [("f1=10", 2), ("f1=20", 0)]


def test_java_schema_evolution_stats(tmp_path: Path) -> None:
    t = _fixture_table("parquet/pk_table_with_alter_table.db", tmp_path)
    files = read_system_table(t, "files").to_pylist()
    old = [r for r in files if r["schema_id"] == 0]
    assert old
    for r in old:  # columns added later: all null, null count = row count
        assert f"d={r['record_count']}" in r["null_value_counts"]
        assert "d=null" in r["min_value_stats"] and "e=null" in r["max_value_stats"]
    assert read_system_table(t, "schemas").column("schema_id").to_pylist() == [0, 1]


def test_java_global_index_names(tmp_path: Path) -> None:
    t = _fixture_table("parquet/append_with_global_index_with_partition.db", tmp_path)
    rows = read_system_table(t, "table_indexes").to_pylist()
    assert rows and all(r["dv_ranges"] is None for r in rows)
    bitmap = [r for r in rows if r["index_type"] == "bitmap"]
    assert bitmap and bitmap[0]["index_field_name"] == "f0" and bitmap[0]["row_range_start"] == 0
    files = read_system_table(t, "files").to_pylist()
    assert files and all(r["min_key"] is None for r in files)  # append table: no key


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (1234567.0, "1234567.0"),
        (12345678.0, "1.2345678E7"),
        (1e10, "1.0E10"),
        (-2.5, "-2.5"),
        (0.0, "0.0"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text


def test_java_float_uses_single_precision_digits() -> None:
    assert java_double(0.10000000149011612, single=True) == "0.1"


def test_cast_and_internal_strings() -> None:
    ts3 = DataType("TIMESTAMP", precision=3)
    ts6 = DataType("TIMESTAMP", precision=6)
    value = Timestamp(1_704_110_400_000 + 120)  # 2024-01-01 12:00:00.120
    assert cast_to_string(value, ts3) == "2024-01-01 12:00:00.120"
    assert cast_to_string(value, DataType("TIMESTAMP", precision=0)) == "2024-01-01 12:00:00.12"
    assert cast_to_string(Timestamp(1_704_110_400_000), ts3) == "2024-01-01 12:00:00.000"
    assert cast_to_string(Timestamp(1_704_110_400_000), ts6) == "2024-01-01 12:00:00.000000"
    assert internal_string(value, ts3) == "2024-01-01T12:00:00.120"
    assert internal_string(Timestamp(1_704_110_400_000), ts3) == "2024-01-01T12:00"
    assert cast_to_string(dt.date(2024, 1, 1), DataType("DATE")) == "2024-01-01"
    assert internal_string(dt.date(2024, 1, 1), DataType("DATE")) == "19723"
    assert cast_to_string(True, DataType("BOOLEAN")) == "true"
    assert duration_string(86_400_000) == "PT24H" and duration_string(500) == "PT0.5S"
