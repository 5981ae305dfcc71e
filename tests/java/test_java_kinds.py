"""Java Paimon and lsmlake on the table kinds the round-trip leaves out: changelog producers (streamed and
`$audit_log` incremental reads of each side's changelog, avro changelog files too), postpone buckets, nested
columns in parquet, orc and avro, and ALTER TABLE by either side read at old and new snapshots."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake
from lsmlake.schema_change.changes import add_column, rename_column

pytestmark = pytest.mark.java

Row = dict[str, Any]

SCHEMA = pa.schema(
    [pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string()), pa.field("n", pa.int64())]
)


def _rows(ids: Sequence[int], tag: str) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "v": f"{tag}{i}", "n": i * 10} for i in ids], schema=SCHEMA)


def _changes(rows: Sequence[Mapping[str, Any]], kind_col: str) -> Counter[tuple[Any, ...]]:
    return Counter((r[kind_col], r["id"], r["v"], r["n"]) for r in rows)


def _lsmlake_stream(table: lsmlake.Table) -> Counter[tuple[Any, ...]]:
    out: Counter[tuple[Any, ...]] = Counter()
    for part in table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True):
        out += _changes(part.to_pylist(), "rowkind")
    return out


def _java_stream(java: JavaPaimon, warehouse: str, ident: str) -> Counter[tuple[Any, ...]]:
    rows = java.stream(warehouse, ident, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    return _changes(rows, "_kind")


PRODUCERS = ["input", "lookup", "full-compaction", "lookup-avro"]


@pytest.mark.parametrize("producer", PRODUCERS)
def test_changelog_of_both_sides_streams_alike(
    producer: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    options = {"bucket": "2", "changelog-producer": producer.removesuffix("-avro")}
    if producer.endswith("-avro"):  # avro data files, avro changelog files in another codec
        options.update(
            {"file.format": "avro", "changelog-file.format": "avro", "changelog-file.compression": "deflate"}
        )
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=options)
    # lsmlake writes, upserts, deletes and compacts; Java streams lsmlake's changelog files
    table.write(_rows(range(20), "a"))
    table.write(_rows(range(10, 30), "b"))
    table.delete(pa.table({"id": pa.array(range(5), pa.int32())}))
    table.compact(full=True)
    ours = _lsmlake_stream(table)
    assert sum(ours.values()) > 0
    assert _java_stream(java_paimon, warehouse, "db.t") == ours, f"{producer}: lsmlake's changelog"

    # Java writes -U/+U and -D on top and compacts; lsmlake streams Java's changelog files as Java does
    current = {r["id"]: r for r in table.read().to_pylist()}
    batch: list[Row] = []
    for i in range(5, 10):
        batch += [{"_kind": "-U", **current[i]}, {"_kind": "+U", "id": i, "v": f"j{i}", "n": -i}]
    batch += [{"_kind": "-D", **current[i]} for i in (10, 11)]
    java_paimon.write(warehouse, "db.t", batch)
    java_paimon.compact(warehouse, "db.t")
    table.write(_rows(range(25, 35), "c"))
    table.compact(full=True)
    ours = _lsmlake_stream(table)
    assert _java_stream(java_paimon, warehouse, "db.t") == ours, f"{producer}: both sides' changelog"

    # the batch `$audit_log` of an incremental-between range, on both sides
    latest = table.snapshot_manager.latest_id()
    assert latest is not None
    between = {"incremental-between": f"1,{latest}"}
    audit = catalog.get_system_table("db.t$audit_log").with_options(between)
    theirs = java_paimon.system(warehouse, "db.t", "audit_log", between)
    assert _changes(theirs, "rowkind") == _changes(audit.read().to_pylist(), "rowkind")


def test_postpone_bucket_both_directions(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """bucket = -2: rows wait in bucket-postpone (read by neither side) until lsmlake's compaction assigns
    buckets; Java's core API writes postpone files but compacts them only through Flink
    (PostponeBucketCompactSplitSource), so lsmlake compacts Java's postpone files."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    # false: lsmlake writes to bucket-postpone as Java's core API (and Flink's streaming sink) does
    options = {"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"}
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=options)
    table.write(_rows(range(20), "a"))
    assert java_rows(java_paimon.read(warehouse, "db.t")) == [] == table.read().to_pylist()
    table.compact()
    expected = sort_rows(_rows(range(20), "a").to_pylist(), ["id"])
    assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"]) == expected

    java_paimon.write(
        warehouse, "db.t", [{"_kind": "+I", "id": i, "v": f"j{i}", "n": i} for i in range(15, 25)]
    )
    assert sort_rows(table.read().to_pylist(), ["id"]) == expected  # still in bucket-postpone
    table.compact()
    expected = sort_rows(
        [*_rows(range(15), "a").to_pylist(), *({"id": i, "v": f"j{i}", "n": i} for i in range(15, 25))],
        ["id"],
    )
    assert sort_rows(table.read().to_pylist(), ["id"]) == expected
    assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"]) == expected
    # Java's core API cannot compact a postpone table: its PostponeBucketFileStoreWrite creates writers for
    # bucket -2 only (checkArgument(bucket == POSTPONE_BUCKET)); Flink's compact job rewrites real buckets.


NESTED = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("r", pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])),
        pa.field("arr", pa.list_(pa.int64())),
        pa.field("m", pa.map_(pa.string(), pa.int32())),
    ]
)


def _nested(ids: Sequence[int], g: int) -> pa.Table:
    rows = [
        {
            "id": i,
            "r": None if i % 7 == 0 else {"a": i * g, "b": None if i % 3 == 0 else f"b{i}-{g}"},
            "arr": None if i % 5 == 0 else [i, None, g] if i % 2 else [],
            "m": None if i % 6 == 0 else [(f"k{i}", g), ("z", None)],
        }
        for i in ids
    ]
    return pa.Table.from_pylist(rows, schema=NESTED)


def _json(rows: Sequence[Mapping[str, Any]]) -> list[Row]:
    """Maps as sorted lists of [key, value] on both sides (pyarrow gives tuples; Java reads an Avro map into
    a hash map, which keeps no order)."""
    out = []
    for r in rows:
        row = dict(r)
        if row.get("m") is not None:
            row["m"] = sorted([list(p) for p in row["m"]], key=str)
        out.append(row)
    return sort_rows(out, ["id"])


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_nested_columns_both_directions(fmt: str, java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=NESTED, primary_key=["id"], options={"bucket": "2", "file.format": fmt}
    )
    model: dict[int, Row] = {}

    def check(step: str) -> None:
        ours = _json(arrow_rows(table.read()))
        assert ours == _json(model.values()), f"{fmt}, {step}: lsmlake is not the model"
        assert _json(java_rows(java_paimon.read(warehouse, "db.t"))) == ours, f"{fmt}, {step}"

    for g, ids in enumerate((range(20), range(10, 30)), start=1):
        batch = _nested(ids, g)
        table.write(batch)
        model.update({r["id"]: r for r in arrow_rows(batch)})
        check(f"lsmlake's write {g}")
    java = arrow_rows(_nested(range(25, 40), 3))
    java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in java])
    model.update({r["id"]: r for r in java})
    check("Java's write")
    java_paimon.compact(warehouse, "db.t")
    check("Java's compaction")
    batch = _nested(range(0, 40, 4), 4)
    table.write(batch)
    model.update({r["id"]: r for r in arrow_rows(batch)})
    table.compact(full=True)
    check("lsmlake's full compaction")


def test_alter_table_across_the_sides(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"}
    )
    table.write(_rows(range(10), "a"))
    before = table.snapshot_manager.latest_id()

    # lsmlake adds a column and renames one; Java reads the old snapshot in its schema and the new one
    table = table.alter(add_column("extra", pa.float64()), rename_column("v", "label"))
    table.write(
        pa.Table.from_pylist(
            [{"id": i, "label": f"b{i}", "n": i, "extra": i / 2} for i in range(5, 15)],
            schema=table.read().schema,
        )
    )

    def both(snapshot: int | None = None) -> tuple[list[Row], list[Row]]:
        ours = sort_rows(arrow_rows(table.read(snapshot_id=snapshot)), ["id"])
        theirs = sort_rows(java_rows(java_paimon.read(warehouse, "db.t", snapshot=snapshot)), ["id"])
        return ours, theirs

    ours, theirs = both(before)
    assert theirs == ours == sort_rows(_rows(range(10), "a").to_pylist(), ["id"])
    ours, theirs = both()
    assert theirs == ours
    assert {r["id"]: r["extra"] for r in ours} == {i: None if i < 5 else i / 2 for i in range(15)}

    # Java adds a column and drops one, writes; lsmlake reads, writes and compacts; Java reads again
    java_paimon.alter(warehouse, "db.t", [{"add": "flag", "type": "BOOLEAN"}, {"drop": "n"}])
    java_paimon.write(
        warehouse,
        "db.t",
        [{"_kind": "+I", "id": i, "label": f"j{i}", "extra": 1.5, "flag": True} for i in (0, 20)],
    )
    table = catalog.open_table("db.t")
    assert table.read().schema.names == ["id", "label", "extra", "flag"]
    table.write(
        pa.Table.from_pylist(
            [{"id": 21, "label": "l", "extra": None, "flag": False}], schema=table.read().schema
        )
    )
    table.compact(full=True)
    ours, theirs = both()
    assert theirs == ours
    assert {r["id"]: r["flag"] for r in ours if r["flag"] is not None} == {0: True, 20: True, 21: False}
    java_paimon.compact(warehouse, "db.t")
    ours, theirs = both()
    assert theirs == ours and len(ours) == 17
