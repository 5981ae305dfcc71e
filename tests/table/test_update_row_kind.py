"""UPDATE writes ``+U`` records (as Spark's UpdatePaimonTableCommand does), from Python and from SQL."""

from __future__ import annotations

import pyarrow as pa

import lsmlake
from lsmlake.sql import execute

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _kinds(catalog: lsmlake.Catalog, name: str) -> list[tuple[int, str, str]]:
    rows = catalog.get_table(f"db.{name}$audit_log").read().to_pylist()
    return sorted((r["id"], r["rowkind"], r["v"]) for r in rows)


def test_update_writes_update_after_rows(catalog: lsmlake.Catalog) -> None:
    for name in ("py", "sql"):
        t = catalog.create_table(f"db.{name}", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    catalog.open_table("db.py").update("id <= 2", {"v": "x"})
    execute(catalog, "UPDATE db.sql SET v = 'x' WHERE id <= 2")
    for name in ("py", "sql"):
        assert _kinds(catalog, name) == [(1, "+U", "x"), (2, "+U", "x"), (3, "+I", "c")], name
        assert catalog.open_table(f"db.{name}").read().sort_by("id").column("v").to_pylist() == ["x", "x", "c"]


def test_input_changelog_carries_the_update_kind(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.c", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", "changelog-producer": "input"}
    )
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    first = t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    assert first is not None
    t.update("id = 1", {"v": "z"})
    changes = list(t.stream(mode="from-snapshot", snapshot_id=first + 1, stop_when_caught_up=True))
    rows = [r for c in changes for r in c.to_pylist()]
    assert [(r["rowkind"], r["id"], r["v"]) for r in rows] == [("+U", 1, "z")]
