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


def _dv_table(catalog: lsmlake.Catalog) -> lsmlake.Table:
    schema = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    t = catalog.create_table(
        "db.dv",
        schema=schema,
        primary_key=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "4", "deletion-vectors.enabled": "true"},
    )
    t.write(pa.table({"k": [1, 2, 3], "dt": ["x", "x", "y"], "v": ["a", "b", "c"]}, schema=schema))
    return t


def test_audit_log_and_binlog_with_a_bucket_left_empty_by_deletion_vectors(catalog: lsmlake.Catalog) -> None:
    # the quick start: write, then delete with deletion vectors; the emptied bucket's split reads no
    # rows, and its empty result must carry the same `rowkind` column as the others
    t = _dv_table(catalog)
    t.delete("dt = 'y'")
    full = catalog.get_table("db.dv$audit_log").read()
    assert full.column_names == ["rowkind", "k", "dt", "v"]
    assert sorted((r["rowkind"], r["k"]) for r in full.to_pylist()) == [("+I", 1), ("+I", 2)]
    binlog = catalog.get_table("db.dv$binlog").read()
    assert sorted(r["k"] for r in binlog.to_pylist()) == [[1], [2]]
    t.delete("dt = 'x'")  # every bucket emptied: the same schemas with no rows
    assert catalog.get_table("db.dv$audit_log").read().schema == full.schema
    assert catalog.get_table("db.dv$binlog").read().schema == binlog.schema
    assert catalog.get_table("db.dv$binlog").read().num_rows == 0


def test_empty_results_have_the_schema_of_full_ones(catalog: lsmlake.Catalog) -> None:
    names = ["audit_log", "binlog", "ro", "files", "partitions", "buckets", "manifests", "snapshots"]
    empty = catalog.create_table(
        "db.e",
        schema=pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())]),
        primary_key=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "4"},
    )
    t = _dv_table(catalog)
    for name in names:
        want = catalog.get_table(f"db.dv${name}").read().schema
        assert catalog.get_table(f"db.e${name}").read().schema == want, name
    assert empty.read(columns=["v"]).schema == t.read(columns=["v"]).schema
    t.delete("k > 0")
    assert t.read().schema == empty.read().schema and t.read().num_rows == 0
