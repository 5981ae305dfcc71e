"""Batch writes to a postpone-bucket table (`postpone.batch-write-fixed-bucket`, default true) against live
Java Paimon: lsmlake and Java's batch sink (PostponeBatchWrite.java in the harness) write in turn to one
table and read the same rows at once, and the same writes give the same file layout on both sides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, lifecycle, sort_rows

import lsmlake
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.restore import RestoredState
from lsmlake.table import Table

pytestmark = pytest.mark.java

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int32(), nullable=False),
        ("v", pa.string()),
    ]
)


def _table(warehouse: str) -> Table:
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db", exist_ok=True)
    lsmlake.clear_caches()
    if "db.t" in {f"db.{n}" for n in catalog.list_tables("db")}:
        t = catalog.get_table("db.t")
    else:
        t = catalog.create_table(
            "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "-2"}
        )
    assert isinstance(t, Table)
    return t


def _rows(ids: range, dt: str, v: str) -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(ids), "id": pa.array(list(ids), pa.int32()), "v": [f"{v}{i}" for i in ids]},
        schema=SCHEMA,
    )


def _ours(warehouse: str) -> list[dict[str, Any]]:
    return sort_rows(arrow_rows(_table(warehouse).read()), ["dt", "id"])


def _java(java: JavaPaimon, warehouse: str) -> list[dict[str, Any]]:
    return sort_rows(java_rows(java.read(warehouse, "db.t")), ["dt", "id"])


def _files(java: JavaPaimon, warehouse: str) -> list[tuple[Any, ...]]:
    """Java's ``$files``: (partition, bucket, level, rows, min and max sequence number, format) per file."""
    return sorted(
        (
            r["partition"],
            r["bucket"],
            r["level"],
            r["record_count"],
            r["min_sequence_number"],
            r["max_sequence_number"],
            r["file_format"],
        )
        for r in java.files(warehouse, "db.t")
    )


def _totals(warehouse: str) -> dict[str, set[int]]:
    """Partition value -> the total_buckets its live files carry in the manifests."""
    t = _table(warehouse)
    locator = FileLocator(t)
    out: dict[str, set[int]] = {}
    for (partition, _), entries in RestoredState.load(
        t.io, t.paths, t.snapshot_manager.latest()
    ).files.items():
        out.setdefault(str(locator.partition_values(partition)[0]), set()).update(
            e.total_buckets for e in entries
        )
    return out


# the writes: (writer, rows); "java" rows go through Java's batch sink with one writer
STEPS: list[tuple[str, pa.Table]] = [
    ("ours", pa.concat_tables([_rows(range(40), "a", "o1-"), _rows(range(10), "b", "o1-")])),
    ("java", pa.concat_tables([_rows(range(20, 60), "a", "j1-"), _rows(range(30), "c", "j1-")])),
    ("ours", pa.concat_tables([_rows(range(5, 25), "c", "o2-"), _rows(range(50, 80), "a", "o2-")])),
    ("java", _rows(range(0, 15), "b", "j2-")),
]


def _java_write(java: JavaPaimon, warehouse: str, rows: pa.Table, parallelism: int = 1) -> None:
    java.postpone_batch_write(warehouse, "db.t", arrow_rows(rows), parallelism=parallelism)


def test_lsmlake_and_java_batch_write_in_turn_and_read_the_same_rows_at_once(
    java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    wh = str(tmp_path / "turns")
    _table(wh)
    model: dict[tuple[str, int], str] = {}
    for who, rows in STEPS:
        if who == "ours":
            _table(wh).write(rows)
        else:
            _java_write(java_paimon, wh, rows)
        model.update({(r["dt"], r["id"]): r["v"] for r in rows.to_pylist()})
        expected = sort_rows([{"dt": d, "id": i, "v": v} for (d, i), v in model.items()], ["dt", "id"])
        assert _ours(wh) == expected, who  # visible at once, no compaction
        assert _java(java_paimon, wh) == expected, who
    assert _totals(wh) == {"a": {1}, "b": {1}, "c": {1}}
    # a compaction keeps every row (Java's core API compacts postpone tables only through Flink's action)
    _table(wh).compact(full=True)
    assert _ours(wh) == _java(java_paimon, wh) == expected


def test_the_same_writes_give_the_same_layout_as_java(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """All writes by Java's batch sink on one copy, all by lsmlake on another: the same files per partition
    and bucket (rows, level, sequence numbers, format) and the same total_buckets; a partition rescaled to 3
    buckets keeps them for later batch writes on both sides."""
    java_wh, ours_wh = str(tmp_path / "java"), str(tmp_path / "ours")
    for wh in (java_wh, ours_wh):
        _table(wh)
    for _, rows in STEPS[:2]:
        _java_write(java_paimon, java_wh, rows)
        _table(ours_wh).write(rows)
    lifecycle(java_paimon, java_wh, "db.t", "rescale", bucket_num=3, partition={"dt": "a"})
    _table(ours_wh).rescale(3, {"dt": "a"})
    for _, rows in STEPS[2:]:
        _java_write(java_paimon, java_wh, rows)
        _table(ours_wh).write(rows)
    assert _totals(java_wh) == _totals(ours_wh) == {"a": {3}, "b": {1}, "c": {1}}
    java_files = _files(java_paimon, java_wh)
    assert java_files == _files(java_paimon, ours_wh)
    assert {f[1] for f in java_files if f[0] == "{a}"} == {0, 1, 2}
    assert _ours(java_wh) == _ours(ours_wh) == _java(java_paimon, ours_wh) == _java(java_paimon, java_wh)


def test_a_partition_java_wrote_with_more_writers_keeps_its_count(
    java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Java's sink with 4 writers gives a new partition 4 buckets; lsmlake's later writes keep them, and
    its own new partition gets one bucket (one writer)."""
    wh = str(tmp_path / "wh")
    _table(wh)
    _java_write(java_paimon, wh, _rows(range(100), "a", "j-"), parallelism=4)
    _table(wh).write(pa.concat_tables([_rows(range(50, 150), "a", "o-"), _rows(range(10), "b", "o-")]))
    assert _totals(wh) == {"a": {4}, "b": {1}}
    buckets = {(f[0], f[1]) for f in _files(java_paimon, wh)}
    assert buckets == {("{a}", 0), ("{a}", 1), ("{a}", 2), ("{a}", 3), ("{b}", 0)}
    expected = sort_rows(
        arrow_rows(
            pa.concat_tables(
                [_rows(range(50), "a", "j-"), _rows(range(50, 150), "a", "o-"), _rows(range(10), "b", "o-")]
            )
        ),
        ["dt", "id"],
    )
    assert _ours(wh) == _java(java_paimon, wh) == expected
    # lsmlake's rows landed in the buckets Java's hash put the same keys in (else duplicates above); a
    # compaction keeps every row
    _table(wh).compact(full=True)
    assert _ours(wh) == _java(java_paimon, wh) == expected
