"""Table.purge_files / CALL sys.purge_files: an emptied table with one snapshot, as Paimon's purgeFiles."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lsmlake
from lsmlake.metadata.consumers import read_consumers
from lsmlake.sql import Session


def test_purge_files(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table(
        "db.t", schema=schema, primary_key=["id"], options={"bucket": "1", "tag.automatic-creation": "batch"}
    )
    for i in range(3):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=schema))
    t.create_tag("keep")
    t.create_branch("dev", tag="keep")
    t.reset_consumer("reader", t.latest_snapshot().id)  # type: ignore[union-attr]
    Session(cat, database="db").execute("CALL sys.purge_files(`table` => 'db.t')")
    assert t.read().num_rows == 0
    assert t.list_tags() == [] and t.list_branches() == [] and read_consumers(t.io, t.root) == {}
    assert t.snapshot_manager.snapshot_ids() == [t.snapshot_manager.latest_id()]
    root = Path(t.root)
    assert not [p for p in root.glob("bucket-*/*") if p.is_file()]  # every data file is gone
    t.write(pa.table({"id": [9], "v": ["after"]}, schema=schema))  # still a working table
    assert t.read().column("id").to_pylist() == [9]
