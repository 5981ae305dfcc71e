"""CALL sys.remove_unexisting_files: data files deleted by hand are listed (dry run) and then dropped from
the manifests in one OVERWRITE snapshot (as Java commits them), after which the table reads again."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.sql import SqlError, execute

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False)])


def _table(tmp_path: Path) -> tuple[lsmlake.Catalog, lsmlake.Table]:
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"},
    )
    for dt, ids in (("a", range(0, 10)), ("b", range(10, 20)), ("a", range(20, 25))):
        t.write(pa.table({"dt": [dt] * len(ids), "id": list(ids)}, schema=SCHEMA))
    return cat, t


def _files(cat: lsmlake.Catalog) -> dict[str, int]:
    """Path of each live data file -> its row count."""
    f = cat.get_table("db.t$files").read()
    return dict(zip(f.column("file_path").to_pylist(), f.column("record_count").to_pylist(), strict=True))


def test_missing_files_are_listed_then_removed(tmp_path: Path) -> None:
    cat, t = _table(tmp_path)
    before = _files(cat)
    assert len(before) >= 3
    base = t.snapshot_manager.latest_id()
    assert t.remove_unexisting_files() == [] and t.snapshot_manager.latest_id() == base  # nothing missing
    gone = sorted(before)[:2]
    for path in gone:
        os.remove(path.removeprefix("file:"))
    with pytest.raises(FileNotFoundError):
        t.read()
    dry = t.remove_unexisting_files(dry_run=True)
    assert [p.rsplit("/", 1)[-1] for p in dry] == [p.rsplit("/", 1)[-1] for p in gone]
    assert t.snapshot_manager.latest_id() == base  # a dry run commits nothing
    assert t.remove_unexisting_files() == dry
    snap = t.snapshot_manager.latest()
    assert snap is not None and snap.id == base + 1 and snap.commit_kind == "OVERWRITE"
    after = _files(cat)
    assert sorted(after) == sorted(set(before) - set(gone))
    lost = sum(before[p] for p in gone)
    assert t.read().num_rows == 25 - lost  # the rows of the files that are gone; every other reads
    assert t.remove_unexisting_files() == []
    t.write(pa.table({"dt": ["a"], "id": [100]}, schema=SCHEMA))
    t.compact(full=True)
    assert t.read().num_rows == 25 - lost + 1 and 100 in t.read().column("id").to_pylist()


def test_the_sql_procedure(tmp_path: Path) -> None:
    cat, t = _table(tmp_path)
    path = sorted(_files(cat))[0]
    os.remove(path.removeprefix("file:"))
    base = t.snapshot_manager.latest_id()
    dry = execute(cat, "CALL sys.remove_unexisting_files(`table` => 'db.t', dry_run => true)")[-1]
    assert [r["result"].rsplit("/", 1)[-1] for r in dry.rows] == [path.rsplit("/", 1)[-1]]
    assert t.snapshot_manager.latest_id() == base
    real = execute(cat, "CALL sys.remove_unexisting_files('db.t')")[-1]
    assert real.rows == dry.rows and "removed from the manifests" in real.message
    assert t.snapshot_manager.latest_id() == base + 1
    cat.get_table("db.t").read()


def test_bad_input(tmp_path: Path) -> None:
    cat, _ = _table(tmp_path)
    with pytest.raises(SqlError, match="dry_run must be true or false"):
        execute(cat, "CALL sys.remove_unexisting_files(`table` => 'db.t', dry_run => 'maybe')")
    with pytest.raises(SqlError, match="'table' argument is required"):
        execute(cat, "CALL sys.remove_unexisting_files()")
    with pytest.raises(lsmlake.errors.NoSuchTableError):
        execute(cat, "CALL sys.remove_unexisting_files('db.nope')")
