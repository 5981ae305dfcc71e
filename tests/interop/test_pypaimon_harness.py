"""Self-test of the pypaimon interop harness (pypaimon writes, pypaimon reads)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pypaimon_env import pypaimon_create_table, pypaimon_read, pypaimon_version, pypaimon_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
Row = tuple[str | None, float | None]


def _table(rows: dict[int, Row], schema: pa.Schema = SCHEMA) -> pa.Table:
    ids = sorted(rows)
    return pa.table(
        {
            "id": ids,
            "name": [rows[i][0] for i in ids],
            "score": [rows[i][1] for i in ids],
        },
        schema=schema,
    )


def _as_model(table: pa.Table) -> dict[int, Row]:
    out: dict[int, Row] = {}
    for row in table.to_pylist():
        assert row["id"] not in out, f"duplicate key {row['id']} in read result"
        out[row["id"]] = (row["name"], row["score"])
    return out


def test_versions() -> None:
    versions = pypaimon_version()
    assert versions["pypaimon"] == "2.1.0"
    assert int(versions["pyarrow"].split(".")[0]) < 20


def test_pk_table_two_commits_with_upserts(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    ident = "db.pk"
    pypaimon_create_table(warehouse, ident, SCHEMA, primary_keys=["id"], options={"bucket": "2"})

    # Empty table (no snapshot yet) reads as zero rows with the table schema.
    empty = pypaimon_read(warehouse, ident)
    assert empty.num_rows == 0
    assert empty.schema.names == ["id", "name", "score"]

    model: dict[int, Row] = {}
    first: dict[int, Row] = {i: (f"name-{i}", i * 1.5) for i in range(50)}
    first[7] = (None, None)
    model.update(first)
    assert pypaimon_write(warehouse, ident, _table(first)) == 1

    second: dict[int, Row] = {i: (f"upd-{i}", -float(i)) for i in range(40, 70)}
    second[3] = ("three", 3.25)
    second[7] = ("seven", None)
    model.update(second)
    assert pypaimon_write(warehouse, ident, _table(second)) == 2

    result = pypaimon_read(warehouse, ident)
    assert result.schema.field("id").type == pa.int64()
    assert result.schema.field("name").type == pa.string()
    assert result.schema.field("score").type == pa.float64()
    assert _as_model(result) == model

    # bucket=2: files really are spread over both buckets, level-0 only.
    table_dir = warehouse / "db.db" / "pk"
    assert sorted(p.name for p in table_dir.glob("bucket-*")) == ["bucket-0", "bucket-1"]

    # Time travel through dynamic options sees the first commit only.
    assert _as_model(pypaimon_read(warehouse, ident, options={"scan.snapshot-id": "1"})) == first

    # Projection.
    names = pypaimon_read(warehouse, ident, projection=["id", "name"])
    assert names.schema.names == ["id", "name"]
    assert {r["id"]: r["name"] for r in names.to_pylist()} == {k: v[0] for k, v in model.items()}


def test_rowkind_field_deletes(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    ident = "db.rk"
    schema = SCHEMA.append(pa.field("op", pa.string()))
    pypaimon_create_table(
        warehouse, ident, schema, primary_keys=["id"], options={"bucket": "2", "rowkind.field": "op"}
    )
    pypaimon_write(
        warehouse,
        ident,
        pa.table(
            {"id": [1, 2, 3], "name": ["a", "b", "c"], "score": [1.0, 2.0, 3.0], "op": ["+I"] * 3},
            schema=schema,
        ),
    )
    pypaimon_write(
        warehouse,
        ident,
        pa.table(
            {"id": [2, 3], "name": [None, "C"], "score": [None, 3.5], "op": ["-D", "+U"]}, schema=schema
        ),
    )
    rows = sorted(pypaimon_read(warehouse, ident).to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "name": "a", "score": 1.0, "op": "+I"},
        {"id": 3, "name": "C", "score": 3.5, "op": "+U"},
    ]


def test_deletion_vector_table_needs_merge_on_read(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    ident = "db.dv"
    pypaimon_create_table(
        warehouse,
        ident,
        SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"},
    )
    pypaimon_write(warehouse, ident, _table({1: ("a", 1.0), 2: ("b", 2.0)}))
    pypaimon_write(warehouse, ident, _table({2: ("B", 20.0)}))
    # pypaimon writes only level-0 files and never compacts; DV batch scans skip level 0.
    assert pypaimon_read(warehouse, ident).num_rows == 0
    merged = pypaimon_read(warehouse, ident, options={"deletion-vectors.merge-on-read": "true"})
    assert _as_model(merged) == {1: ("a", 1.0), 2: ("B", 20.0)}


def test_child_error_is_reported(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"(?s)pypaimon child op='read'.*stderr.*missing"):
        pypaimon_read(tmp_path / "warehouse", "db.missing")
