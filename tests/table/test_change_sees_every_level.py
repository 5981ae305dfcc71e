"""DELETE and UPDATE choose rows among every committed row: level-0 rows a deletion-vector batch read
skips (``write-only``) are deleted and updated too, and a row's newest version is the one updated."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.sql import execute

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
OPTIONS = {"bucket": "1", "deletion-vectors.enabled": "true", "write-only": "true"}


def _table(catalog: lsmlake.Catalog, name: str) -> lsmlake.Table:
    t = catalog.create_table(f"db.{name}", schema=SCHEMA, primary_key=["id"], options=OPTIONS)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [10, 20]}, schema=SCHEMA))
    t.compact(full=True)
    # Newer versions of 1 and a new key 3, left at level 0 by write-only: a batch read skips them.
    t.write(pa.table({"id": [1, 3], "v": ["a2", "c"], "n": [11, 30]}, schema=SCHEMA))
    return t


def _all_rows(t: lsmlake.Table) -> list[tuple[int, str, int]]:
    t.compact(full=True)
    return sorted((r["id"], r["v"], r["n"]) for r in t.read().to_pylist())


@pytest.mark.parametrize("how", ["python", "sql"])
def test_delete_reaches_level0_rows(catalog: lsmlake.Catalog, how: str) -> None:
    t = _table(catalog, f"d_{how}")
    if how == "python":
        t.delete("n IN (11, 30)")
    else:
        execute(catalog, f"DELETE FROM db.d_{how} WHERE n IN (11, 30)")
    assert _all_rows(t) == [(2, "b", 20)]


@pytest.mark.parametrize("how", ["python", "sql"])
def test_update_changes_the_newest_version(catalog: lsmlake.Catalog, how: str) -> None:
    t = _table(catalog, f"u_{how}")
    if how == "python":
        t.update("id IN (1, 3)", {"v": "x"})
    else:
        execute(catalog, f"UPDATE db.u_{how} SET v = 'x' WHERE id IN (1, 3)")
    assert _all_rows(t) == [(1, "x", 11), (2, "b", 20), (3, "x", 30)]


def test_merge_updates_the_newest_version_and_matches_level0_keys(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog, "m")
    execute(
        catalog,
        "MERGE INTO db.m AS t USING (SELECT * FROM VALUES (1), (3), (4) AS s(id)) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = 'm' WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, 'new', 0)",
    )
    assert _all_rows(t) == [(1, "m", 11), (2, "b", 20), (3, "m", 30), (4, "new", 0)]


def test_rows_to_change_ignores_a_fallback_branch_and_time_travel(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("p", pa.int64()), ("id", pa.int64()), ("n", pa.int64())])
    t = catalog.create_table(
        "db.f", schema=schema, primary_key=["p", "id"], partition_keys=["p"], options={"bucket": "1"}
    )
    first = t.write(pa.table({"p": [1], "id": [1], "n": [1]}, schema=schema))
    t.write(pa.table({"p": [1], "id": [2], "n": [2]}, schema=schema))
    t.create_branch("fb").write(pa.table({"p": [2, 2], "id": [3, 4], "n": [3, 4]}, schema=schema))
    t.alter(lsmlake.schema_change.set_option("scan.fallback-branch", "fb"))
    t = catalog.open_table("db.f")
    assert t.read().num_rows == 4
    pinned = t.with_options({"scan.snapshot-id": str(first)})
    assert pinned.read().num_rows == 1
    assert sorted(pinned.rows_to_change("n > 0", ["id"]).column("id").to_pylist()) == [1, 2]
    # deleting from main must not write partition p=2 into main, which would hide the branch's rows
    t.delete("n IN (2, 3)")
    assert sorted(r["id"] for r in catalog.open_table("db.f").read().to_pylist()) == [1, 3, 4]
