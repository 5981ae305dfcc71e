"""Merge engines through the table API: create-time validation, write-time row-kind checks, projections,
and Java-written first-row data carried through lsmlake's lookup compaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fixtures import CPP_TEST_DATA, FIXTURES, copy_fixture

import lsmlake
from lsmlake.errors import InvalidOptionError, LsmlakeError

SCHEMA = pa.schema([("k", pa.int32()), ("a", pa.int64()), ("s", pa.string()), ("g", pa.int32())])


def rows(t: lsmlake.Table, **kw: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.read(**kw).to_pylist())


@pytest.mark.parametrize(
    ("options", "primary_key", "message"),
    [
        (
            {"merge-engine": "first-row", "deletion-vectors.enabled": "true"},
            ["k"],
            "does not need deletion vectors",
        ),
        ({"merge-engine": "first-row", "sequence.field": "g"}, ["k"], "sequence field on FIRST_ROW"),
        ({"merge-engine": "first-row", "changelog-producer": "input"}, ["k"], "'none' and 'lookup'"),
        (
            {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"},
            ["k"],
            "NONE/INPUT/LOOKUP",
        ),
        ({"changelog-producer": "input", "bucket-key": "k"}, [], "without primary keys"),
        ({"changelog-producer": "lookup", "full-compaction.delta-commits": "2"}, ["k"], "incompatible"),
        ({"merge-engine": "aggregation", "fields.a.aggregate-function": "count"}, ["k"], "with .sum."),
        ({"merge-engine": "aggregation", "fields.s.aggregate-function": "sum"}, ["k"], "numeric"),
        ({"merge-engine": "partial-update", "fields.g.sequence-group": "a,nope"}, ["k"], "can not be found"),
        ({"sequence.field.sort-order": "sideways"}, ["k"], "ascending or descending"),
    ],
)
def test_create_rejects_what_paimon_rejects(
    catalog: lsmlake.Catalog, options: dict[str, str], primary_key: list[str], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        catalog.create_table(
            "db.t", schema=SCHEMA, primary_key=primary_key, options={"bucket": "1", **options}
        )
    assert catalog.list_tables("db") == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"merge-engine": "first-row"}, "First row merge engine can not accept DELETE"),
        ({"merge-engine": "partial-update"}, "Partial update can not accept delete"),
        (
            {"merge-engine": "aggregation", "fields.a.aggregate-function": "max"},
            "does not support retraction",
        ),
    ],
)
def test_deletes_an_engine_cannot_merge_are_refused_at_write(
    catalog: lsmlake.Catalog, options: dict[str, str], message: str
) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", **options})
    t.write(pa.table({"k": [1], "a": [1], "s": ["x"], "g": [1]}, schema=SCHEMA))
    with pytest.raises(LsmlakeError, match=message):
        t.delete(pa.table({"k": pa.array([1], pa.int32())}))
    assert rows(t) == [(1, 1, "x", 1)]


def test_ignore_update_before_and_rowkind_field(catalog: lsmlake.Catalog) -> None:
    schema = SCHEMA.append(pa.field("op", pa.string()))
    t = catalog.create_table(
        "db.t",
        schema=schema,
        primary_key=["k"],
        options={
            "bucket": "1",
            "rowkind.field": "op",
            "ignore-update-before": "true",
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "max",
            "fields.s.aggregate-function": "max",
        },
    )
    t.write(
        pa.table(
            {"k": [1, 1, 1], "a": [3, 9, 5], "s": ["a", "z", "b"], "g": [1, 1, 1], "op": ["+I", "-U", "+U"]},
            schema=schema,
        )
    )
    assert rows(t) == [(1, 5, "b", 1, "+U")]  # the -U never reached the max


def test_partial_update_projection_reads_the_sequence_group(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["k"],
        options={
            "bucket": "1",
            "merge-engine": "partial-update",
            "fields.g.sequence-group": "s",
            "write-only": "true",
        },
    )
    t.write(pa.table({"k": [1, 2], "a": [1, 2], "s": ["new", "b"], "g": [5, 1]}, schema=SCHEMA))
    t.write(pa.table({"k": [1, 2], "a": [None, 20], "s": ["old", None], "g": [2, None]}, schema=SCHEMA))
    assert rows(t) == [(1, 1, "new", 5), (2, 20, "b", 1)]
    assert rows(t, columns=["k", "s"]) == [(1, "new"), (2, "b")]
    assert rows(t, columns=["s"], filter="a > 5") == [("b",)]
    assert all(not s.raw_convertible for s in t.scan().splits())


def test_aggregation_merges_across_levels_with_deletion_vectors(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["k"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "deletion-vectors.enabled": "true",
            "fields.a.aggregate-function": "sum",
            "fields.s.aggregate-function": "listagg",
        },
    )
    for i in range(6):
        t.write(pa.table({"k": [1, 2], "a": [i, 10 * i], "s": [f"x{i}", None], "g": [i, i]}, schema=SCHEMA))
        assert all(s.raw_convertible for s in t.scan().splits())
    assert rows(t) == [(1, 15, "x0,x1,x2,x3,x4,x5", 5), (2, 150, None, 5)]
    t.compact(full=True)
    assert rows(t) == [(1, 15, "x0,x1,x2,x3,x4,x5", 5), (2, 150, None, 5)]


def test_sequence_field_with_deletion_vectors(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["k"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "sequence.field": "g"},
    )
    t.write(pa.table({"k": [1], "a": [1], "s": ["newest"], "g": [9]}, schema=SCHEMA))
    t.write(pa.table({"k": [1], "a": [2], "s": ["late but older"], "g": [3]}, schema=SCHEMA))
    assert rows(t) == [(1, 1, "newest", 9)]
    t.write(pa.table({"k": [1], "a": [3], "s": ["newer"], "g": [10]}, schema=SCHEMA))
    assert rows(t) == [(1, 3, "newer", 10)]


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="fixtures not present")
def test_java_first_row_table_after_lsmlake_compaction(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    name = "pk_table_scan_and_read_first_row"
    copy_fixture((CPP_TEST_DATA / "parquet" / f"{name}.db").relative_to(FIXTURES), warehouse)
    t = lsmlake.Catalog(str(warehouse)).get_table(f"{name}.{name}")
    before = rows(t)
    assert ("Alex", 10, 0, 16.1) in before and ("Skye", 10, 0, 21.0) not in before
    assert t.compact() is not None  # level 0 (snapshots 4, 5) moves up through the existence lookup
    after = rows(t)
    # new keys appear; Alex keeps its first version (its update and its delete are ignored)
    assert after == sorted(
        [
            *before,
            ("Skye", 10, 0, 21.0),
            ("Marco", 10, 0, 21.1),
            ("Skye2", 10, 0, 31.0),
            ("Marco2", 10, 0, 31.1),
        ]
    )
    assert all(s.raw_convertible for s in t.scan().splits())
    t.write(
        pa.table(
            {"f0": ["Alex", "New"], "f1": [10, 10], "f2": [0, 0], "f3": [99.0, 1.0]},
            schema=t.schema.logical_arrow_schema(),
        )
    )
    assert rows(t) == sorted([*after, ("New", 10, 0, 1.0)])
