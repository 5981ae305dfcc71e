"""write.sequence-number-init-mode = snapshot (Paimon 2.x): every commit records the highest sequence number
handed out in its snapshot's properties, and a bucket's writer starts above it (scan mode records nothing)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError
from lsmlake.metadata.sequence_properties import MAX_SEQUENCE_NUMBER
from lsmlake.schema_change import set_option

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _table(tmp_path: Path, mode: str) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["id"],
        options={"bucket": "4", "write.sequence-number-init-mode": mode, "write-only": "true"},
    )


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "v": pa.array(ids, pa.int64())})


def _files(table: lsmlake.Table) -> list[dict[str, object]]:
    return lsmlake.Catalog(str(Path(table.root).parents[1])).get_table("db.t$files").read().to_pylist()


def _recorded(table: lsmlake.Table) -> int | None:
    props = table.latest_snapshot().properties  # type: ignore[union-attr]
    return None if props is None or MAX_SEQUENCE_NUMBER not in props else int(props[MAX_SEQUENCE_NUMBER])


def test_snapshot_mode_records_the_max_and_starts_every_bucket_above_it(tmp_path: Path) -> None:
    table = _table(tmp_path, "snapshot")
    table.write(_rows(list(range(40))))
    first = _files(table)
    assert _recorded(table) == max(f["max_sequence_number"] for f in first)
    recorded = _recorded(table)
    assert recorded is not None
    buckets = {f["bucket"] for f in first}
    table.write(_rows([0]))  # one key: one bucket, whose own files end below the table's maximum
    new = [f for f in _files(table) if f["file_path"] not in {g["file_path"] for g in first}]
    assert len(new) == 1 and len(buckets) > 1
    assert new[0]["min_sequence_number"] == recorded + 1
    assert _recorded(table) == recorded + 1
    table.compact(full=True)  # a compaction keeps the maximum
    assert _recorded(table) == recorded + 1
    assert table.read().num_rows == 40


def test_snapshot_mode_on_a_table_without_the_property_takes_the_files_max(tmp_path: Path) -> None:
    table = _table(tmp_path, "scan")
    table.write(_rows(list(range(40))))
    assert _recorded(table) is None  # scan mode records nothing
    table = table.alter(set_option("write.sequence-number-init-mode", "snapshot"))
    table.write(
        _rows([0])
    )  # the first commit reads the maximum off the files (its own bucket's file included)
    assert _recorded(table) == max(f["max_sequence_number"] for f in _files(table))
    table.write(_rows([0]))  # then the writer starts above it
    assert _recorded(table) == max(f["max_sequence_number"] for f in _files(table))


def test_paimon_has_no_timestamp_mode(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=r"write\.sequence-number-init-mode"):
        _table(tmp_path, "timestamp")
