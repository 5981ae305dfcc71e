"""Java-written `*alter_table*` fixtures: read exactly as their READMEs say, filter and prune on evolved
columns without losing rows, and keep evolving them with lsmlake (ALTER, write, compact, read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fixtures import CPP_TEST_DATA, FIXTURES, copy_fixture

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.table import Table

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")

TWO_ROADS = (
    "Two roads diverged in a wood, and I took the one less traveled by, And that has made all the difference."
)
WHETHER = "Whether I shall turn out to be the hero of my own life."


def open_fixture(tmp_path: Path, name: str) -> Table:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    copy_fixture((CPP_TEST_DATA / "parquet" / f"{name}.db").relative_to(FIXTURES), warehouse)
    t = lsmlake.Catalog(str(warehouse)).get_table(f"{name}.{name}")
    assert isinstance(t, Table)
    return t


def _order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((True, 0) if v is None else (False, v) for v in row)


def rows(t: pa.Table) -> list[tuple[Any, ...]]:
    """The rows as tuples in a stable order (nulls last in each position)."""
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=_order)


def pruned(t: Table, where: str) -> int:
    return int(t.scan(filter=where).plan_summary["entries_pruned_by_value_stats"])


def check_filters(t: Table, filters: list[str]) -> None:
    """Each filter returns exactly the rows of a full read filtered in Python (nothing pruned wrongly)."""
    from lsmlake.expr import evaluate, parse_filter

    everything = t.read().to_pylist()
    for where in filters:
        pred = parse_filter(where, t.schema.fields)
        expected = sorted((tuple(r.values()) for r in everything if evaluate(pred, r) is True), key=_order)
        assert rows(t.read(filter=where)) == expected, where


# --------------------------------------------------------------------------- append_table_with_alter_table

APPEND_ALTERED = [
    (0, 1, 16, 13, None, 15, None),
    (0, 1, 26, 23, None, 25, None),
    (0, 1, 36, 33, None, 35, None),
    (0, 1, 66, 63, 517, 65, 618),
    (0, 1, 76, 73, 527, 75, 628),
    (0, 1, 86, 83, 537, 85, 638),
    (1, 1, 46, 43, None, 45, None),
    (1, 1, 56, 53, None, 55, None),
    (1, 1, 96, 93, 547, 95, 648),
    (1, 1, 106, 103, 557, 105, 658),
]


def test_append_table_with_alter_table_reads_as_readme(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "append_table_with_alter_table")
    assert t.schema.field_names == ["key0", "key1", "k", "c", "d", "a", "e"]
    assert [t.schema.field(n).id for n in t.schema.field_names] == [0, 1, 6, 3, 7, 5, 8]
    assert rows(t.read()) == sorted(APPEND_ALTERED, key=_order)
    # c was b (id 3) and a was d (id 5): old files find them by id; d and e are new (null in old files)
    got = t.read(filter="c < 40", columns=["k", "c", "a"])
    assert rows(got) == [(16, 13, 15), (26, 23, 25), (36, 33, 35)]
    assert rows(t.read(filter="e IS NULL", columns=["k"])) == [(16,), (26,), (36,), (46,), (56,)]
    assert rows(t.read(filter="d >= 537", columns=["k", "d", "e"])) == [
        (86, 537, 638),
        (96, 547, 648),
        (106, 557, 658),
    ]
    check_filters(
        t,
        [
            "c > 50",
            "a = 35",
            "d IS NOT NULL",
            "e IS NULL",
            "d < 530 OR c < 20",
            "NOT (e > 0)",
            "k > 40 AND key0 = 1",
            "c IN (13, 63, 103)",
        ],
    )


def test_append_fixture_prunes_old_files_on_evolved_stats(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "append_table_with_alter_table")
    files = t.scan().plan_summary["files"]
    assert files == 4  # two partitions, one file per snapshot each
    # added columns are all-null in the old files; renamed columns keep their stats
    assert pruned(t, "e > 600") == 2 and pruned(t, "d IS NOT NULL") == 2
    assert pruned(t, "c > 60") == 2 and pruned(t, "a < 50") == 2
    assert pruned(t, "e IS NULL") == 2  # the new files have no nulls in e
    assert pruned(t, "k > 0") == 0


def test_append_fixture_evolves_further_with_lsmlake(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "append_table_with_alter_table")
    t = t.alter(
        sc.update_column_type("c", "BIGINT"),
        sc.rename_column("e", "e2"),
        sc.drop_column("k"),
        sc.add_column("s", "STRING", first=True),
    )
    assert t.schema.id == 2 and t.schema.field("s").id == 9 and t.schema.field("e2").id == 8
    t.write(
        pa.table(
            {"s": ["new"], "key0": [1], "key1": [1], "c": [2**40], "d": [1], "a": [2], "e2": [3]},
            schema=pa.schema([(f.name, f.type) for f in t.schema.logical_arrow_schema()]),
        )
    )
    got = rows(t.read())
    assert len(got) == 11 and ("new", 1, 1, 2**40, 1, 2, 3) in got
    assert (None, 0, 1, 13, None, 15, None) in got
    check_filters(t, ["c > 1000", "e2 IS NULL", "s = 'new'", "s IS NULL", "c BETWEEN 60 AND 100"])


# --------------------------------------------------------------------------- append_with_bitmap_alter_table


def test_append_with_bitmap_alter_table_reads_as_readme(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "append_with_bitmap_alter_table")
    assert t.schema.field_names == ["f1", "f4", "f3", "f5"]
    assert t.schema.field("f1").type.root == "BIGINT"
    got = t.read()
    assert got.schema.field("f1").type == pa.int64()
    assert rows(got) == sorted(
        [
            (10, "Alice", 11.1, None),
            (10, "Bob", 12.1, None),
            (10, "Emily", 13.1, None),
            (10, "Tony", 14.1, None),
            (20, "Lucy", 15.1, None),
            (10, "Bob", 16.1, None),
            (20, "Tony", 17.1, None),
            (20, "Alice", 18.1, None),
            (30, "Alice", 21.1, 100),
            (20, "Emily", 22.1, 101),
            (10, "Bob", 23.1, 100),
            (30, "David", 24.1, None),
        ],
        key=_order,
    )
    assert rows(t.read(filter="f1 > 15 AND f4 = 'Alice'", columns=["f1", "f3"])) == [(20, 18.1), (30, 21.1)]
    assert pruned(t, "f1 >= 30") == 1  # the old file's INT stats still prune after the widening to BIGINT
    assert pruned(t, "f5 = 100") == 1
    check_filters(t, ["f1 = 10", "f4 LIKE 'A%'", "f5 IS NULL", "f5 > 100", "f3 < 15 OR f5 = 100"])


def test_java_table_with_unknown_options_can_still_be_altered(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "append_with_bitmap_alter_table")
    assert "file-index.bitmap.columns" in t.schema.options  # Java wrote it
    t = t.alter(sc.add_column("f6", "INT"))
    assert t.schema.options["file-index.bitmap.columns"] == "f1,f4,f5"
    t = t.alter(sc.set_option("file-index.bitmap.columns", "f1"))  # honoured now: file indexes are written
    assert t.schema.options["file-index.bitmap.columns"] == "f1"
    with pytest.raises(lsmlake.errors.InvalidOptionError, match="unknown table option"):
        t.alter(sc.set_option("file-index.no-such.columns", "f1"))


# ------------------------------------------------------------------- append_table_alter_table_with_cast


def test_append_table_alter_table_with_cast_all_columns(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "append_table_alter_table_with_cast")
    assert t.schema.field_names == ["f4", "key0", "key1", "f3", "f1", "f2", "f0", "f6"]
    got = t.read()
    assert got.schema.field("f2").type == pa.decimal128(6, 3)
    # the README's "Recall with schema-1" (DATE -> TIMESTAMP(9), STRING -> INT / BOOLEAN, DECIMAL rescaled)
    expected = [
        ("1970-01-05 00:00:00", 0, 1, 100, "2024-11-26 06:38:56.001000001", "0.020", True, None),
        ("1969-11-18 00:00:00", 0, 1, 110, "2024-11-26 06:38:56.011000011", "11.120", True, None),
        ("1971-03-21 00:00:00", 0, 1, 120, "2024-11-26 06:38:56.021000021", "22.220", False, None),
        ("2024-11-26 06:38:56.054000054", 0, 1, 150, "2024-11-26 15:28:31", "55.002", True, 56),
        ("2024-11-26 06:38:56.064000064", 0, 1, 160, "2024-11-26 15:28:41", "666.012", False, 66),
        ("2024-11-26 06:38:56.074000074", 0, 1, 170, "2024-11-26 15:28:51", "-77.022", True, 76),
        ("1957-11-01 00:00:00", 1, 1, 130, "2024-11-26 06:38:56.031000031", "333.320", False, None),
        ("2091-09-07 00:00:00", 1, 1, 140, "2024-11-26 06:38:56.041000041", "444.420", True, None),
        ("2024-11-26 06:38:56.084000084", 1, 1, 180, "2024-11-26 15:29:01", "8.032", True, -86),
        ("2024-11-26 06:38:56.094000094", 1, 1, 190, "I'm strange", "-999.420", False, 96),
    ]
    ts = [v.removesuffix(".000000000") for v in got.column("f4").cast(pa.string()).to_pylist()]
    decimals = [str(v) for v in got.column("f2").to_pylist()]
    actual = [
        (t_, r["key0"], r["key1"], r["f3"], r["f1"], d, r["f0"], r["f6"])
        for t_, d, r in zip(ts, decimals, got.to_pylist(), strict=True)
    ]
    assert sorted(actual) == sorted(expected)
    check_filters(t, ["f3 > 140", "f0 = true", "f6 IS NULL", "f6 < 0", "f2 > 100", "key0 = 1 AND f3 < 150"])


# --------------------------------------------------------------------------- pk_table_with_alter_table

PK_ALTERED = [
    (1, "Alex", 52, 514, 518, 516, 1, 519),
    (1, "Alice", 12, 94, None, 96, 0, None),
    (1, "Bob", 22, 24, None, 26, 1, None),
    (1, "David", 62, 64, None, 66, 1, None),
    (1, "Emily", 32, 34, None, 36, 1, None),
    (1, "Paul", 502, 504, 508, 506, 0, 509),
    (1, TWO_ROADS, 2, 4, None, 6, 0, None),
    (1, WHETHER, 72, 74, None, 76, 1, None),
]


def test_pk_table_with_alter_table_filters(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "pk_table_with_alter_table")
    assert rows(t.read()) == sorted(PK_ALTERED, key=_order)
    assert t.schema.primary_keys == ("key0", "key1", "key_2")  # key2 was renamed: a Java rename of a key
    check_filters(
        t,
        [
            "key_2 > 50",
            "key_2 = 12",
            "d IS NULL",
            "e > 510",
            "c BETWEEN 30 AND 100",
            "a = 96 OR e = 509",
            "k LIKE 'A%'",
            "key0 = 0 AND c > 10",
        ],
    )
    old = t.scan(snapshot_id=4).plan_summary
    assert old["files"] >= 1


def test_pk_fixture_evolves_further_with_lsmlake(tmp_path: Path) -> None:
    t = open_fixture(tmp_path, "pk_table_with_alter_table")
    t = t.alter(
        sc.add_column("note", "STRING", after="k"),
        sc.update_column_type("c", "BIGINT"),
        sc.rename_column("key_2", "key2"),
        sc.drop_column("a"),
    )
    assert t.schema.id == 2 and t.schema.field("note").id == 10 and t.schema.field("key2").id == 2
    schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in t.schema.logical_arrow_schema()])
    t.write(
        pa.Table.from_pylist(
            [
                {"key1": 1, "k": "Bob", "note": "updated", "key2": 22, "c": 2**40, "d": 1, "key0": 1, "e": 2},
                {"key1": 1, "k": "Zed", "note": None, "key2": 99, "c": 1, "d": None, "key0": 0, "e": None},
            ],
            schema=schema,
        )
    )
    by_key = {r[2]: (*r[:2], None, *r[2:5], *r[6:]) for r in PK_ALTERED}  # a dropped, note added
    by_key[22] = (1, "Bob", "updated", 22, 2**40, 1, 1, 2)
    by_key[99] = (1, "Zed", None, 99, 1, None, 0, None)
    expected = sorted(by_key.values(), key=lambda r: r[3])
    assert sorted(rows(t.read()), key=lambda r: r[3]) == expected
    t.compact(full=True)
    assert sorted(rows(t.read()), key=lambda r: r[3]) == expected
    check_filters(t, ["c > 1000", "note IS NOT NULL", "key2 >= 60", "e IS NULL"])
