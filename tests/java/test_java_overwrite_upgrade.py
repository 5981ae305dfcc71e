"""overwrite-upgrade against live Java Paimon: a write-only overwrite of a deletion-vector or first-row table
leaves the same file levels (top level, or level 0 with the option off) and the same rows in both, and
lsmlake and Java overwriting each other's table read the same rows."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _batch(lo: int, n: int, g: int) -> pa.Table:
    ids = np.arange(lo, lo + n, dtype=np.int32)
    return pa.table({"id": ids, "v": ids.astype(np.int64) * 7 + g}, schema=SCHEMA)


def _kinds(t: pa.Table) -> list[dict[str, Any]]:
    return [{"_kind": "+I", **r} for r in arrow_rows(t)]


def _levels(java: JavaPaimon, wh: str, table: str) -> list[int]:
    return sorted(int(r["level"]) for r in java.files(wh, table))


def _both_read(java: JavaPaimon, catalog: lsmlake.Catalog, wh: str, table: str) -> list[dict[str, Any]]:
    ours = sort_rows(arrow_rows(catalog.get_table(table).read()), ["id"])
    assert sort_rows(java_rows(java.read(wh, table)), ["id"]) == ours
    return ours


@pytest.mark.parametrize(
    "options",
    [
        {"deletion-vectors.enabled": "true"},
        {"merge-engine": "first-row"},
        {"deletion-vectors.enabled": "true", "overwrite-upgrade": "false"},
    ],
)
def test_a_write_only_overwrite_matches_java(
    java_paimon: JavaPaimon, tmp_path: Path, options: Mapping[str, str]
) -> None:
    wh = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(wh)
    catalog.create_database("db")
    opts = {"bucket": "2", "write-only": "true", **options}
    for name in ("db.ours", "db.java"):
        catalog.create_table(name, schema=SCHEMA, primary_key=["id"], options=opts)
    first, second = _batch(0, 50, 1), _batch(20, 60, 2)
    catalog.get_table("db.ours").write(first)
    java_paimon.write(wh, "db.java", _kinds(first))
    catalog.get_table("db.ours").overwrite(second)
    java_paimon.write(wh, "db.java", _kinds(second), overwrite=True)
    assert _levels(java_paimon, wh, "db.ours") == _levels(java_paimon, wh, "db.java")
    assert _both_read(java_paimon, catalog, wh, "db.ours") == _both_read(java_paimon, catalog, wh, "db.java")
    upgraded = options.get("overwrite-upgrade") != "false"
    assert _both_read(java_paimon, catalog, wh, "db.ours") == (
        sort_rows(arrow_rows(second), ["id"]) if upgraded else []
    )
    # in turn: each overwrites the other's table
    third = _batch(100, 30, 3)
    catalog.get_table("db.java").overwrite(third)
    java_paimon.write(wh, "db.ours", _kinds(third), overwrite=True)
    assert _levels(java_paimon, wh, "db.ours") == _levels(java_paimon, wh, "db.java")
    assert _both_read(java_paimon, catalog, wh, "db.ours") == _both_read(java_paimon, catalog, wh, "db.java")
