"""sequence.snapshot-ordering (Paimon 2.x): Paimon's checks, commits stamping their snapshot id into the
files they add, and reads ordering an appended file's rows by that id, not by the numbers on disk."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError, UnsupportedError
from lsmlake.read.context import ReadContext
from lsmlake.read.file_read import file_sequence
from lsmlake.schema_change import set_option

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])
ORDERING = {"sequence.snapshot-ordering": "true", "write-only": "true", "bucket": "1"}


def _rows(ids: list[int], v: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "v": pa.array([v] * len(ids), pa.int64())})


@pytest.fixture
def catalog(tmp_path: Path) -> lsmlake.Catalog:
    c = lsmlake.Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.mark.parametrize(
    ("options", "primary_key", "message"),
    [
        ({"sequence.snapshot-ordering": "true"}, ["id"], "requires write-only = true"),
        ({**ORDERING, "sequence.field": "v"}, ["id"], "mutually exclusive with sequence.field"),
        ({**ORDERING, "bucket": "-1"}, [], "requires a primary-key table"),
    ],
)
def test_paimon_checks_at_create_time(
    catalog: lsmlake.Catalog, options: dict[str, str], primary_key: list[str], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        catalog.create_table("db.t", schema=SCHEMA, primary_key=primary_key, options=options)


def test_write_only_may_be_turned_off_dynamically_not_by_alter(catalog: lsmlake.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=ORDERING)
    table.write(_rows([1], 1))
    table.with_options({"write-only": "false"})  # a dedicated compaction's way, as in Paimon
    with pytest.raises(InvalidOptionError, match="requires write-only"):
        table.alter(set_option("write-only", "false"))
    with pytest.raises(UnsupportedError, match="cannot change once the table has data"):
        table.alter(set_option("sequence.snapshot-ordering", "false"))


def _disk_sequences(table: lsmlake.Table, file_name: str) -> list[int]:
    return (
        pq.read_table(f"{table.root}/bucket-0/{file_name}", columns=["_SEQUENCE_NUMBER"])
        .column(0)
        .to_pylist()
    )


def test_a_later_commit_wins_although_its_writer_numbered_lower(catalog: lsmlake.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=ORDERING)
    table.write(_rows([7], 0))
    first, second = table.writer(), table.writer()  # both restore the bucket from snapshot 1
    with first, second:
        first.write(_rows(list(range(100, 300)), 0))
        first.write(_rows([1], 111))  # numbered above the 200 rows before it
        second.write(_rows([1], 222))  # numbered from the same base: lower on disk
        first.commit()
        second.commit()  # snapshot 3: wins key 1
    files = {
        r["min_sequence_number"]: r["file_path"].rsplit("/", 1)[-1]
        for r in catalog.get_table("db.t$files").read().to_pylist()
    }
    assert {
        r["min_sequence_number"] == r["max_sequence_number"]
        for r in catalog.get_table("db.t$files").read().to_pylist()
    } == {True}
    assert sorted(files) == [1, 2, 3]  # each file carries the id of the snapshot that added it
    # on disk, the writers' own numbers: the losing row of snapshot 2 is numbered higher than the winner
    assert max(_disk_sequences(table, files[2])) > max(_disk_sequences(table, files[3]))
    assert table.read(filter="id = 1").to_pylist() == [{"id": 1, "v": 222}]
    assert table.lookup(pa.table({"id": pa.array([1], pa.int32())})).to_pylist() == [{"id": 1, "v": 222}]
    table.compact(full=True)  # the dedicated compaction: rows keep the ids they were read with
    assert table.read(filter="id = 1").to_pylist() == [{"id": 1, "v": 222}]
    top = catalog.get_table("db.t$files").read().to_pylist()
    assert [(r["level"], r["min_sequence_number"], r["max_sequence_number"]) for r in top] == [(5, 1, 3)]
    table.write(_rows([1], 333))
    table.delete(_rows([7], 0).select(["id"]))
    assert table.read().sort_by("id").to_pylist()[:1] == [{"id": 1, "v": 333}]
    assert 7 not in table.read().column("id").to_pylist()


def test_files_without_a_source_are_refused(catalog: lsmlake.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=ORDERING)
    table.write(_rows([1], 1))
    f = table.scan().splits()[0].files[0]
    ctx = ReadContext(table.io, table.root, table.schema, table.options, ("id", "v"))
    assert file_sequence(ctx, f) == 1
    with pytest.raises(UnsupportedError, match="record their source"):
        file_sequence(ctx, replace(f, file_source=None))
