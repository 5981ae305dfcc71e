"""Table.compact_manifests / CALL sys.compact_manifest: the latest manifests merged into one set."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lsmlake
from lsmlake.metadata.manifest_list import read_manifest_list
from lsmlake.sql import Session


def test_compact_manifest(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "2"})
    for i in range(6):
        t.write(pa.table({"id": [i, i + 100], "v": [i, i]}, schema=schema))
    t.delete(pa.table({"id": [0]}))
    before = t.read().sort_by("id")
    latest = t.latest_snapshot()
    assert latest is not None

    def metas(sid: int) -> tuple[int, int, int]:
        s = t.snapshot(sid)
        base = read_manifest_list(t.io, t.paths.manifest(s.base_manifest_list))
        delta = read_manifest_list(t.io, t.paths.manifest(s.delta_manifest_list))
        return len(base), len(delta), sum(m.num_deleted_files for m in base)

    assert metas(latest.id)[0] > 1
    (r,) = Session(cat, database="db").execute("CALL sys.compact_manifest(`table` => 'db.t')")
    after = t.latest_snapshot()
    assert f"snapshot {latest.id + 1}" in r.message
    assert after is not None and after.id == latest.id + 1 and after.commit_kind == "COMPACT"
    assert metas(after.id) == (1, 0, 0)
    assert t.read().sort_by("id").equals(before)
    assert t.read(snapshot_id=latest.id).sort_by("id").equals(before)
    assert t.compact_manifests() is None  # already one merged manifest
