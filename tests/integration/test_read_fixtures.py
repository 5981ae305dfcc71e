"""Read Java-written Paimon tables: exactly the rows their READMEs imply, and how they are planned."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fixtures import CPP_TEST_DATA, FIXTURES, GOLDEN_WAREHOUSE, copy_fixture

import lsmlake
from lsmlake.errors import NoSuchSnapshotError, NoSuchTagError, UnsupportedError
from lsmlake.expr import parse_filter
from lsmlake.read.table_read import read_table, scan_table
from lsmlake.table import Table
from lsmlake.table.explain import explain_table

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")

TWO_ROADS = (
    "Two roads diverged in a wood, and I took the one less traveled by, And that has made all the difference."
)
WHETHER = "Whether I shall turn out to be the hero of my own life."


def open_cpp_table(tmp_path: Path, name: str, kind: str = "parquet") -> Table:
    """Copy ``<kind>/<name>.db`` into a fresh warehouse and open ``<name>.<name>``."""
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    src = CPP_TEST_DATA / kind / f"{name}.db"
    copy_fixture(src.relative_to(FIXTURES), warehouse)
    return lsmlake.Catalog(str(warehouse)).get_table(f"{name}.{name}")


def rows(t: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of a table as sorted tuples (reads are unordered across splits)."""
    return sorted(tuple(r.values()) for r in t.to_pylist())


# f0, f1, f2, f3 rows of the pk_table_scan_and_read_* family
BASE = {
    (TWO_ROADS, 10, 1, 11.0),
    ("Alice", 10, 1, 11.1),
    ("Bob", 10, 0, 12.1),
    ("Emily", 10, 0, 13.1),
    ("Tony", 10, 0, 14.1),
    ("Alex", 10, 0, 16.1),
    ("David", 10, 0, 17.1),
    ("Lucy", 20, 1, 14.1),
    ("Paul", 20, 1, 18.1),
}
AFTER_DELETE = (BASE - {("Tony", 10, 0, 14.1), ("Alice", 10, 1, 11.1)}) | {("Alice", 10, 1, 19.1)}
FINAL = (AFTER_DELETE - {("Alex", 10, 0, 16.1)}) | {
    ("Skye", 10, 0, 21.0),
    ("Marco", 10, 0, 21.1),
    ("Skye2", 10, 0, 31.0),
    ("Marco2", 10, 0, 31.1),
}


# --------------------------------------------------------------------------- deletion vectors


def test_dv_table_reads_compacted_rows_raw(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_dv")
    scan = scan_table(t)
    assert scan.snapshot_id == 6
    # snapshots 5 and 6 only wrote level-0 files, which DV batch reads do not see yet
    assert rows(scan.to_arrow()) == sorted(AFTER_DELETE)
    splits = scan.splits()
    assert splits and all(s.raw_convertible for s in splits)
    assert all(f.level > 0 for s in splits for f in s.files)
    dvs = [d for s in splits for d in s.deletion_files if d is not None]
    assert len(dvs) == 2 and all(d.cardinality == 1 and d.path.endswith(d.path.split("/")[-1]) for d in dvs)
    assert all("/index/index-" in d.path for d in dvs)
    assert scan.plan_summary["entries_skipped_level0"] > 0


@pytest.mark.parametrize(("snapshot", "expected"), [(1, set()), (2, BASE), (3, BASE), (4, AFTER_DELETE)])
def test_dv_table_time_travel(tmp_path: Path, snapshot: int, expected: set[tuple[Any, ...]]) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_dv")
    assert rows(read_table(t, snapshot_id=snapshot)) == sorted(expected)
    assert rows(read_table(t.with_options({"scan.snapshot-id": str(snapshot)}))) == sorted(expected)


def test_dv_merge_on_read_sees_level0_and_applies_dvs_in_merges(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_dv")
    t = t.with_options({"deletion-vectors.merge-on-read": "true"})
    scan = scan_table(t)
    assert rows(scan.to_arrow()) == sorted(FINAL)
    merged = [s for s in scan.splits() if not s.raw_convertible]
    assert merged and any(d is not None for s in merged for d in s.deletion_files)


@pytest.mark.parametrize("name", ["pk_dv_index_not_in_data_no_external", "pk_dv_index_in_data_no_external"])
def test_dv_index_file_locations(tmp_path: Path, name: str) -> None:
    t = open_cpp_table(tmp_path, name)
    scan = scan_table(t)
    assert rows(scan.to_arrow()) == sorted(AFTER_DELETE)
    dvs = [d for s in scan.splits() for d in s.deletion_files if d is not None]
    assert len(dvs) == 2
    in_data = name == "pk_dv_index_in_data_no_external"
    assert all(("/bucket-" in d.path) == in_data and ("/index/" in d.path) != in_data for d in dvs)


def test_pk_09_with_legacy_dv_cardinality(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_09")
    scan = scan_table(t)
    assert scan.snapshot_id == 8
    expected = {
        ("Alex", 10, 0, 16.1),
        ("Bob", 10, 0, 12.1),
        ("David", 10, 0, 17.1),
        ("Emily", 10, 0, 13.1),
        ("Alice", 10, 1, 21.1),
        (TWO_ROADS, 10, 1, 11.0),
        (WHETHER, 10, 1, 19.1),
        ("Lucy", 20, 1, 14.1),
        ("Paul", 20, 1, 18.1),
    }
    assert rows(scan.to_arrow()) == sorted(expected)
    assert all(s.raw_convertible for s in scan.splits())
    dvs = [d for s in scan.splits() for d in s.deletion_files if d is not None]
    assert dvs and all(d.cardinality is None for d in dvs)  # 0.9 index manifests had no cardinality


def test_pk_with_bitmap_dv(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_with_bitmap_dv")
    expected = [
        (1, "Bob", 10, 1, 12.1),
        (2, "Emily", 10, 0, 13.1),
        (3, "Tony", 10, 0, 14.1),
        (5, "Bob", 10, 1, 16.1),
        (6, "Tony", 20, 0, 17.1),
        (7, "Alice", 20, None, 18.1),
    ]
    assert rows(read_table(t)) == expected
    assert rows(read_table(t, filter="f2 IS NULL")) == [expected[-1]]
    assert rows(read_table(t, filter="f0 = 'Tony' AND f1 = 20")) == [expected[4]]


def test_schema_evolution_with_dv(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_with_alter_table")
    assert t.schema.field_names == ["key1", "k", "key_2", "c", "d", "a", "key0", "e"]
    expected = [
        (1, "Alex", 52, 514, 518, 516, 1, 519),
        (1, "Alice", 12, 94, None, 96, 0, None),
        (1, "Bob", 22, 24, None, 26, 1, None),
        (1, "David", 62, 64, None, 66, 1, None),
        (1, "Emily", 32, 34, None, 36, 1, None),
        (1, "Paul", 502, 504, 508, 506, 0, 509),
        (1, TWO_ROADS, 2, 4, None, 6, 0, None),
        (1, WHETHER, 72, 74, None, 76, 1, None),
    ]
    assert rows(read_table(t)) == expected
    # renamed primary-key column and an added column, filtered and projected
    got = read_table(t, filter="key_2 > 50 AND e IS NOT NULL", columns=["k", "e"])
    assert got.column_names == ["k", "e"]
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [{"k": "Alex", "e": 519}, {"k": "Paul", "e": 509}]


# --------------------------------------------------------------------------- merge on read


def test_mor_table_merges_level0(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    scan = scan_table(t)
    assert rows(scan.to_arrow()) == sorted(FINAL)
    by_bucket = {(s.partition_values, s.bucket): s for s in scan.splits()}
    assert not by_bucket[((10,), 1)].raw_convertible  # the bucket with level-0 files merges
    assert by_bucket[((10,), 0)].raw_convertible and by_bucket[((20,), 0)].raw_convertible
    text = explain_table(t)
    assert "f1=10 bucket 1: merge" in text and "f1=10 bucket 0: raw" in text
    assert "level-0" in text and "one level 5" in text


@pytest.mark.parametrize(("snapshot", "expected"), [(1, BASE), (2, AFTER_DELETE), (3, AFTER_DELETE)])
def test_mor_time_travel(tmp_path: Path, snapshot: int, expected: set[tuple[Any, ...]]) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    assert rows(read_table(t, snapshot_id=snapshot)) == sorted(expected)


def test_mor_with_sequence_field_and_schema_evolution(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_with_mor")
    assert t.schema.field_names == ["k1", "k0", "p0", "p1", "s1", "s0", "v0", "v1", "v2"]
    scan = scan_table(t)
    assert all(not s.raw_convertible for s in scan.splits())
    # the README's rows: a larger (s0, s1) wins over a later sequence number; v0 double->int, v1 bool->string
    expected = [
        (0, 0, 0, 0, "apple", b"see", 110, "false", None),
        (0, 0, 1, 0, "elephant", b"hi", 120, "false", None),
        (0, 1, 0, 0, "banana", b"you", 11, "false", None),
        (0, 1, 0, 1, "zoo", b"you", 130, "false", None),
        (1, 0, 0, 0, "car", b"later", 12, "true", None),
        (1, 1, 0, 0, "driver", b"!", 13, "false", None),
        (1, 2, 0, 0, "driver", b"!", 13, "false", None),
        (100, 200, 0, 0, "max", b"number", 140, "false", None),
    ]
    assert rows(scan.to_arrow()) == expected


def test_first_row_table(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_first_row")
    scan = scan_table(t)
    # first-row keeps the first version and ignores deletes; level 0 (snapshots 4, 5) is not visible
    assert rows(scan.to_arrow()) == sorted(BASE)
    assert all(s.raw_convertible for s in scan.splits())
    assert "first-row" in scan.splits()[0].rule


# --------------------------------------------------------------------------- filters, projection, API


FILTERS = [
    "f1 = 20",
    "f3 > 20",
    "f0 = 'Bob'",
    "f2 = 1 AND f3 < 15",
    "f0 LIKE 'A%'",
    "f3 IS NULL",
    "NOT (f2 = 0)",
    "f0 IN ('Skye', 'Tony', 'Lucy')",
    "f3 >= 14.1 OR f0 = 'Bob'",
    "f1 = 10 AND f2 = 0 AND f3 < 30",
]


@pytest.mark.parametrize("name", ["pk_table_scan_and_read_mor", "pk_table_scan_and_read_dv", "pk_09"])
@pytest.mark.parametrize("flt", FILTERS)
def test_filters_equal_filtering_the_full_read(tmp_path: Path, name: str, flt: str) -> None:
    t = open_cpp_table(tmp_path, name)
    full = read_table(t)
    expected = full.filter(parse_filter(flt, t.schema.fields).to_arrow())  # type: ignore[union-attr]
    assert rows(read_table(t, filter=flt)) == rows(expected)


def test_filters_prune_files(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    assert scan_table(t, filter="f1 = 20").plan_summary["files"] == 1
    assert scan_table(t, filter="f0 = 'Bob'").plan_summary["entries_pruned_by_key_stats"] > 0
    # bucket-key equality reaches one bucket, hashed exactly as Java did (f2 = 0 lives in bucket 1)
    pinned = scan_table(t, filter="f2 = 0")
    assert {s.bucket for s in pinned.splits()} == {1}
    assert pinned.plan_summary["entries_pruned_by_bucket"] > 0
    dv = open_cpp_table(tmp_path / "dv", "pk_table_scan_and_read_dv")
    assert scan_table(dv, filter="f3 > 100").splits() == []  # DV tables prune by value stats


def test_projection_limit_batches_and_pandas(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    got = read_table(t, columns=["f3", "f0"])
    assert got.schema.names == ["f3", "f0"]
    assert sorted(got.column("f0").to_pylist()) == sorted(r[0] for r in FINAL)
    assert read_table(t, limit=3).num_rows == 3
    assert read_table(t, limit=0).num_rows == 0
    assert read_table(t, columns=[]).num_rows == len(FINAL)
    reader = scan_table(t).to_batches()
    assert isinstance(reader, pa.RecordBatchReader)
    assert sum(b.num_rows for b in reader) == len(FINAL)
    assert len(scan_table(t, filter="f1 = 10").to_pandas()) == len(FINAL) - 2


def test_logical_schema(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    schema = read_table(t).schema
    assert schema == pa.schema(
        [
            pa.field("f0", pa.string(), False),
            pa.field("f1", pa.int32(), False),
            pa.field("f2", pa.int32(), False),
            pa.field("f3", pa.float64()),
        ]
    )


def test_errors(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    with pytest.raises(NoSuchSnapshotError):
        read_table(t, snapshot_id=42)
    with pytest.raises(ValueError, match="nope"):
        read_table(t, columns=["f0", "nope"])
    with pytest.raises(ValueError, match="nope"):
        read_table(t, filter="nope = 1")


def test_splits_are_picklable(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    splits = scan_table(t).splits()
    assert pickle.loads(pickle.dumps(splits)) == splits
    assert any(s.sections for s in splits)


def test_empty_table_reads_empty_with_schema(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.string())])
    t = catalog.create_table("db.empty", schema=schema, primary_key=["id"], options={"bucket": "1"})
    got = read_table(t)
    assert got.num_rows == 0 and got.schema == schema
    assert scan_table(t).splits() == []
    assert "empty table" in explain_table(t)


# --------------------------------------------------------------------------- other Java-written tables


def test_golden_warehouse(tmp_path: Path) -> None:
    warehouse = copy_fixture(GOLDEN_WAREHOUSE.relative_to(FIXTURES), tmp_path)
    catalog = lsmlake.Catalog(str(warehouse))
    t = catalog.get_table("default.test_pk_global_index_golden")
    expected = [(i, f"name-{i}", "odd" if i % 2 else "even") for i in range(1, 7)]
    assert rows(read_table(t)) == expected
    assert read_table(t, filter="name = 'name-4'").column("id").to_pylist() == [4]
    assert sorted(read_table(t, filter="category = 'odd'").column("id").to_pylist()) == [1, 3, 5]
    assert all(s.raw_convertible for s in scan_table(t).splits())
    text = catalog.get_table("default.test_pk_full_text_golden")
    assert sorted(read_table(text).column("id").to_pylist()) == [1, 2, 3, 4]
    vector = catalog.get_table("default.test_pk_vector_golden")
    with pytest.raises(UnsupportedError, match="embedding"):
        read_table(vector)


def test_append_table_with_type_changes(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "append_table_alter_table_with_cast")
    got = read_table(t, columns=["key0", "f3", "f1", "f0", "f6"])
    assert rows(got) == sorted(
        [
            (0, 100, "2024-11-26 06:38:56.001000001", True, None),
            (0, 110, "2024-11-26 06:38:56.011000011", True, None),
            (0, 120, "2024-11-26 06:38:56.021000021", False, None),
            (0, 150, "2024-11-26 15:28:31", True, 56),
            (0, 160, "2024-11-26 15:28:41", False, 66),
            (0, 170, "2024-11-26 15:28:51", True, 76),
            (1, 130, "2024-11-26 06:38:56.031000031", False, None),
            (1, 140, "2024-11-26 06:38:56.041000041", True, None),
            (1, 180, "2024-11-26 15:29:01", True, -86),
            (1, 190, "I'm strange", False, 96),
        ]
    )
    assert all(s.raw_convertible for s in scan_table(t).splits())


def test_avro_data_files(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "append_with_multiple_ts_precision_and_timezone", kind="avro")
    got = read_table(t, columns=["ts_milli", "ts_tz_micro"]).to_pydict()
    assert [None if v is None else v.microsecond for v in got["ts_tz_micro"]] == [2, None, 6]
    assert [None if v is None else v.microsecond for v in got["ts_milli"]] == [1000, 3000, None]


def test_data_evolution_tables_are_refused(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "append_table_alter_table_with_cast_with_data_evolution")
    with pytest.raises(UnsupportedError, match="data-evolution"):
        read_table(t)


def test_append_table_mixing_orc_and_parquet(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    copy_fixture("alibaba-paimon-cpp/test/test_data/append_table_with_multiple_file_format.db", warehouse)
    name = "append_table_with_multiple_file_format"
    t = lsmlake.Catalog(str(warehouse)).get_table(f"{name}.{name}")
    assert rows(read_table(t)) == sorted(
        [
            ("Alice", 10, 1, 11.1),
            ("Bob", 10, 0, 12.1),
            ("Emily", 10, 0, 13.1),
            ("Tony", 10, 0, 14.1),
            ("Lucy", 20, 1, 14.1),
            ("Skye", 20, 1, 19.1),
            ("Bob", 10, 0, 20.1),
        ]
    )
    assert rows(read_table(t, filter="f3 > 14")) == sorted(
        [
            ("Tony", 10, 0, 14.1),
            ("Lucy", 20, 1, 14.1),
            ("Skye", 20, 1, 19.1),
            ("Bob", 10, 0, 20.1),
        ]
    )


def test_append_table_keeps_duplicates_and_time_travels(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "append_09")
    first = [
        ("Alice", 10, 1, 11.1),
        ("Bob", 10, 0, 12.1),
        ("Emily", 10, 0, 13.1),
        ("Tony", 10, 0, 14.1),
        ("Lucy", 20, 1, 14.1),
    ]
    assert rows(read_table(t, snapshot_id=1)) == sorted(first)
    second = [
        *first,
        ("Emily", 10, 0, 15.1),
        ("Bob", 10, 0, 12.1),
        ("Alex", 10, 0, 16.1),
        ("Paul", 20, 1, None),
    ]
    assert rows(read_table(t, snapshot_id=2)) == sorted(second)
    latest = [*second, ("David", 10, 0, 17.1), ("Lily", 10, 0, 17.1)]
    assert len(read_table(t)) == len(latest)
    assert all(s.raw_convertible for s in scan_table(t).splits())


@pytest.mark.parametrize(
    "name", ["append_with_empty_partition", "append_with_empty_partition_with_specific_name"]
)
def test_null_partitions_live_under_the_default_partition_name(tmp_path: Path, name: str) -> None:
    t = open_cpp_table(tmp_path, name)
    nulls = [(None, 50, 1, 14.1), (None, 100, 2, 16.1), (None, 200, -3, 12.1)]
    assert rows(read_table(t, filter="f0 IS NULL")) == nulls
    assert rows(read_table(t, filter="f0 = '2024'")) == [("2024", 100, -2, 11.1), ("2024", 300, 1, 13.1)]
    assert len(read_table(t)) == 6


def test_blank_partition_values_share_the_default_directory(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "append_with_empty_partition_with_empty_value")
    assert rows(read_table(t, filter="f0 = ''")) == [("", 50, 1, 14.1), ("", 200, -3, 12.1)]
    assert rows(read_table(t, filter="f0 = ' '")) == [(" ", 100, 0, 15.1)]
    assert rows(read_table(t, filter="f0 IS NULL")) == [(None, 100, 2, 16.1)]
    assert len(read_table(t)) == 7


def test_unsupported_scan_options_are_refused(tmp_path: Path) -> None:
    t = open_cpp_table(tmp_path, "pk_table_scan_and_read_mor")
    with pytest.raises(NoSuchTagError, match="tag 't1' of table"):  # tags are read, this one is absent
        read_table(t.with_options({"scan.tag-name": "t1"}))
    with pytest.raises(UnsupportedError, match="incremental"):
        read_table(t.with_options({"scan.mode": "incremental"}))
    assert len(read_table(t.with_options({"scan.mode": "latest-full"}))) == len(FINAL)
