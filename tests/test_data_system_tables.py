"""``$audit_log`` (rows with their row kind) and ``$ro`` (top-level files only)."""

from __future__ import annotations

import pyarrow as pa

import lsmlake

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def test_audit_log_keeps_merged_deletes_and_ro_shows_the_top_level(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "write-only": "true"}
    )
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.write(pa.table({"k": [2], "v": ["b2"]}, schema=SCHEMA))
    t.delete(pa.table({"k": [3]}, schema=pa.schema([("k", pa.int64())])))
    audit = catalog.get_table("db.t$audit_log").read()
    assert audit.column_names == ["rowkind", "k", "v"]
    assert sorted(audit.to_pylist(), key=lambda r: r["k"]) == [
        {"rowkind": "+I", "k": 1, "v": "a"},
        {"rowkind": "+I", "k": 2, "v": "b2"},
        {"rowkind": "-D", "k": 3, "v": None},
    ]
    assert catalog.get_table("db.t$ro").read().num_rows == 0  # nothing compacted to the top level yet
    t.with_options({"write-only": "false"}).compact(full=True)
    ro = catalog.get_table("db.t$ro").read()
    assert sorted(ro.to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "v": "a"}, {"k": 2, "v": "b2"}]
    assert {r["rowkind"] for r in catalog.get_table("db.t$audit_log").read().to_pylist()} == {"+I"}


def test_audit_log_of_an_append_table(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.a", schema=SCHEMA)
    t.write(pa.table({"k": [1], "v": ["x"]}, schema=SCHEMA))
    assert catalog.get_table("db.a$audit_log").read().to_pylist() == [{"rowkind": "+I", "k": 1, "v": "x"}]
    assert catalog.get_table("db.a$ro").read().num_rows == 1
