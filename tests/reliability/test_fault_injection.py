"""A commit that fails at any write leaves the last snapshot readable, and the next commit succeeds."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.fileio import FileIO, OutputFile
from lsmlake.errors import PartiallyPublishedError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


class Crash(Exception):
    """The injected failure."""


class FaultyIO(FileIO):
    """A FileIO that fails at its k-th write of any kind (data, manifest, snapshot, hint)."""

    def __init__(self, inner: FileIO, fail_at: int) -> None:
        super().__init__(inner.fs, local=inner.local)
        self.fail_at, self.writes = fail_at, 0

    def _tick(self) -> None:
        self.writes += 1
        if self.writes == self.fail_at:
            raise Crash(f"injected failure at write {self.writes}")

    def write_bytes(self, path: str, data: bytes) -> None:
        self._tick()
        super().write_bytes(path, data)

    def create_output(self, path: str) -> OutputFile:  # data files (open_output goes through it)
        self._tick()
        return super().create_output(path)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self._tick()
        return super().write_if_absent(path, data)

    def overwrite_hint(self, path: str, text: str) -> None:
        self._tick()
        super().overwrite_hint(path, text)

    @property
    def fs(self) -> Any:
        return self._fs

    @fs.setter
    def fs(self, value: Any) -> None:
        self._fs = value


def base_table(root: Path) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "2", "deletion-vectors.enabled": "true"}
    )
    t.write(pa.table({"k": list(range(50)), "v": ["a"] * 50}, schema=SCHEMA))
    return t


def the_commit(t: lsmlake.Table) -> None:
    """A write whose commit also compacts: data files, manifests, DV index files, two snapshots, hints."""
    t.write(pa.table({"k": [1, 2, 60], "v": ["b", "b", "b"]}, schema=SCHEMA))


def count_writes(tmp_path: Path) -> int:
    t = base_table(tmp_path / "count")
    faulty = FaultyIO(t.io, fail_at=-1)
    the_commit(dataclasses.replace(t, io=faulty))
    return faulty.writes


@pytest.mark.filterwarnings("ignore:.*hint file could not be written")
def test_a_failure_at_every_write_is_survivable(tmp_path: Path) -> None:
    total = count_writes(tmp_path)
    assert total >= 8
    template = tmp_path / "template"
    base = base_table(template)
    before = base.read().sort_by("k")
    for k in range(1, total + 1):
        root = tmp_path / f"case{k}"
        shutil.copytree(template, root)
        t = lsmlake.Catalog(str(root)).open_table("db.t")
        published: tuple[int, ...] | None = None  # None: no failure
        try:
            the_commit(dataclasses.replace(t, io=FaultyIO(t.io, fail_at=k)))
        except Crash:
            published = ()
        except PartiallyPublishedError as e:
            assert isinstance(e.__cause__, Crash), e
            published = e.published_snapshot_ids
        reopened = lsmlake.Catalog(str(root)).open_table("db.t")
        now = reopened.read().sort_by("k")
        if published == ():  # the error says nothing was published: the commit did not happen
            assert now.equals(before), f"failure at write {k} left {now.num_rows} rows, none reported"
        elif published:  # the error names the APPEND snapshot that landed before the failure
            # (until it is compacted, a deletion-vector read may skip its level-0 file)
            assert now.equals(before) or now.num_rows == 51, f"failure at write {k} left {now.num_rows} rows"
            assert reopened.snapshot(published[0]).commit_kind == "APPEND"
        the_commit(reopened)
        after = {r["k"]: r["v"] for r in reopened.read().to_pylist()}
        assert len(after) == 51 and after[1] == after[60] == "b", f"next commit after failure {k} is wrong"
        removed = reopened.remove_orphan_files(older_than_ms=2**62)
        assert {r["k"]: r["v"] for r in reopened.read().to_pylist()} == after, (k, removed)


@pytest.mark.parametrize("fail_at", [1, 3])
def test_failed_writer_cleans_its_files(tmp_path: Path, fail_at: int) -> None:
    t = base_table(tmp_path / "wh")
    files_before = {p.name for p in Path(t.root).rglob("*") if p.is_file()}
    with pytest.raises(Crash):
        the_commit(dataclasses.replace(t, io=FaultyIO(t.io, fail_at=fail_at)))
    leftovers = {p.name for p in Path(t.root).rglob("*") if p.is_file()} - files_before
    assert not [n for n in leftovers if n.endswith(".parquet")], leftovers
