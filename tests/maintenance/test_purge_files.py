"""Table.purge_files / CALL sys.purge_files: an emptied table with one snapshot, as Paimon's purgeFiles."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import UnsupportedError
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


def test_purging_a_branch_is_refused_and_touches_no_other_branch(tmp_path: Path) -> None:
    """A branch shares the table's data files and sits beside its sibling branches: purging one would
    delete the others (Java's purgeFiles drops every branch of the table), so it is refused."""
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["x"]}, schema=schema))
    t.create_tag("base")
    t.create_branch("b", tag="base")
    t.create_branch("c", tag="base")
    branch = cat.get_table("db.t$branch_b")
    with pytest.raises(UnsupportedError, match="branch"):
        branch.purge_files()
    with pytest.raises(UnsupportedError, match="branch"):
        Session(cat, database="db").execute("CALL sys.purge_files(`table` => 'db.t$branch_b')")
    assert t.list_branches() == ["b", "c"] and [x.name for x in t.list_tags()] == ["base"]
    assert cat.get_table("db.t$branch_c").read().num_rows == 1
    assert cat.get_table("db.t$branch_b").read().num_rows == 1
