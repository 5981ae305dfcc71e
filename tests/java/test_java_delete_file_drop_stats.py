"""manifest.delete-file-drop-stats against live Java Paimon: the DELETE entries of a compaction carry no value
stats in both (key stats kept), its new files keep theirs; without the option both keep every entry's stats."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows

import lsmlake
from lsmlake.metadata.manifest import read_manifest
from lsmlake.metadata.manifest_list import read_manifest_list
from lsmlake.metadata.stats import EMPTY_STATS

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _delta(table: lsmlake.Table) -> list[tuple[str, bool, bool, bool]]:
    """(kind, has value stats, has key stats, lists stats columns) of the latest snapshot's delta entries."""
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    io, paths = table.io, table.paths
    out = []
    for m in read_manifest_list(io, paths.manifest(snapshot.delta_manifest_list)):
        for e in read_manifest(io, paths.manifest(m.file_name)):
            f = e.file
            out.append(
                (
                    e.kind.name,
                    f.value_stats != EMPTY_STATS,
                    f.key_stats != EMPTY_STATS,
                    bool(f.value_stats_cols),
                )
            )
    return sorted(out)


@pytest.mark.parametrize("drop", [True, False])
def test_compaction_entries_match_java(java_paimon: JavaPaimon, tmp_path: Path, drop: bool) -> None:
    wh = str(tmp_path / "wh")
    catalog = lsmlake.Catalog(wh)
    catalog.create_database("db")
    opts = {"bucket": "1", "write-only": "true", "manifest.delete-file-drop-stats": str(drop).lower()}
    for name in ("db.ours", "db.java"):
        catalog.create_table(name, schema=SCHEMA, primary_key=["id"], options=opts)
    for i in range(2):
        rows = pa.table({"id": pa.array([1, 2, 3 + i], pa.int32()), "v": pa.array([i, i, i], pa.int64())})
        catalog.get_table("db.ours").write(rows)
        java_paimon.write(wh, "db.java", [{"_kind": "+I", **r} for r in arrow_rows(rows)])
    catalog.get_table("db.ours").with_options({"write-only": "false"}).compact(full=True)
    java_paimon.call("compact", warehouse=wh, table="db.java", full=True, options={"write-only": "false"})
    lsmlake.clear_caches()
    ours, java = _delta(catalog.get_table("db.ours")), _delta(catalog.get_table("db.java"))
    assert ours == java
    assert [e for e in ours if e[0] == "DELETE"] == [("DELETE", not drop, True, False)] * 2
