"""Scan planning is lazy: building a scan does no I/O; the snapshot is found and planned on first use."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.fileio import FileIO, FileStatus
from lsmlake.errors import NoSuchColumnError, NoSuchSnapshotError
from lsmlake.read.options import ReadOptions
from lsmlake.read.table_read import Scan


class CountingIO(FileIO):
    """A local FileIO that counts every read it serves."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner.fs, local=inner.local)
        self.reads = 0

    def read_bytes(self, path: str) -> bytes:
        self.reads += 1
        return super().read_bytes(path)

    def exists(self, path: str) -> bool:
        self.reads += 1
        return super().exists(path)

    def list_dir(self, path: str) -> list[FileStatus]:
        self.reads += 1
        return super().list_dir(path)

    def file_size(self, path: str) -> int:
        self.reads += 1
        return super().file_size(path)

    def is_file(self, path: str) -> bool:
        self.reads += 1
        return super().is_file(path)

    def open_input_file(self, path: str, size: int | None = None) -> pa.NativeFile:
        self.reads += 1
        return super().open_input_file(path, size)


@pytest.fixture
def table(tmp_path: Path) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"]
    )
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.write(pa.table({"id": [2, 3], "v": ["c", "d"]}))
    return t


def test_building_a_scan_reads_nothing(table: lsmlake.Table) -> None:
    io = CountingIO(table.io)
    counted = lsmlake.Table(table.name, io, table.root, table.schema)
    for scan in (
        counted.scan(filter="id > 1", columns=["id"]),
        counted.scan(snapshot_id=1),
        counted.with_options({"scan.snapshot-id": "1"}).scan(),
    ):
        assert io.reads == 0
        assert scan.splits()
        assert io.reads > 0
        io.reads = 0


def test_a_missing_snapshot_fails_at_first_use_not_at_scan(table: lsmlake.Table) -> None:
    latest = table.latest_snapshot()
    assert latest is not None
    pinned, current = table.scan(snapshot_id=latest.id), table.scan()
    table.io.delete_file(f"{table.root}/snapshot/snapshot-{latest.id}")
    table.io.delete_file(f"{table.root}/snapshot/LATEST")
    with pytest.raises(NoSuchSnapshotError):
        pinned.splits()
    assert current.to_arrow().num_rows == 2  # planned now: snapshot 1, the latest left on storage


def test_planning_happens_once(table: lsmlake.Table) -> None:
    io = CountingIO(table.io)
    scan = lsmlake.Table(table.name, io, table.root, table.schema).scan()
    first = scan.splits()
    after_first = io.reads
    assert scan.splits() == first and scan.plan is scan.plan
    assert io.reads == after_first
    assert scan.snapshot_id == 2


def test_a_bad_column_of_the_current_schema_still_fails_at_once(table: lsmlake.Table) -> None:
    with pytest.raises(NoSuchColumnError):
        table.scan(columns=["nope"])


def test_read_options_carry_the_keywords(table: lsmlake.Table) -> None:
    options = ReadOptions(filter="id >= 2", columns=["v", "id"], limit=1)
    assert options.columns == ("v", "id")
    assert Scan(table, options).to_arrow().column_names == ["v", "id"]
    assert Scan(table, options).to_arrow().num_rows == 1
    with pytest.raises(ValueError, match="limit must be >= 0"):
        ReadOptions(limit=-1)
    assert ReadOptions(snapshot_id=1).names_a_snapshot and not ReadOptions().names_a_snapshot
