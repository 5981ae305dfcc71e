"""Streaming across implementations: pypaimon 2.1.0 streams lsmlake's deltas and changelog (and resumes
an lsmlake consumer), and lsmlake streams the changelog pypaimon writes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from change_model import apply_all, as_model
from pypaimon_env import pypaimon_create_table, pypaimon_read, pypaimon_stream, pypaimon_write

import lsmlake
from lsmlake.metadata.consumers import read_consumers

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
KEY_SCHEMA = pa.schema([SCHEMA.field("id")])


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _lsmlake_history(table: lsmlake.Table) -> None:
    table.write(_rows([1, 2, 3, 4], "a"))
    table.write(_rows([2, 5], "b"))
    table.delete(pa.table({"id": [1]}, schema=KEY_SCHEMA))
    table.compact(full=True)
    table.write(_rows([6, 3], "c"))
    table.delete(pa.table({"id": [5]}, schema=KEY_SCHEMA))


@pytest.mark.parametrize("producer", ["none", "input", "lookup", "full-compaction"])
def test_pypaimon_streams_what_lsmlake_wrote(catalog: lsmlake.Catalog, tmp_path: Path, producer: str) -> None:
    warehouse = Path(catalog.warehouse)
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2", "changelog-producer": producer}
    )
    table.write(_rows([1, 2], "z"))  # pypaimon's first plan: the latest snapshot in full
    first = table.latest_snapshot().id  # type: ignore[union-attr]
    # lsmlake registers the consumer at the end of the full read, pypaimon resumes it and follows
    assert sum(t.num_rows for t in table.stream(consumer_id="shared", stop_when_caught_up=True)) == 2
    _lsmlake_history(table)
    latest = table.latest_snapshot().id  # type: ignore[union-attr]
    changes = pypaimon_stream(warehouse, latest, tmp_path, consumer_id="shared")
    assert "-D" in set(changes.column("rowkind").to_pylist())
    model = apply_all(as_model(table.read(snapshot_id=first), "id"), [changes], "id")
    assert model == as_model(table.read(), "id")
    # pypaimon saved the consumer's progress in the same file lsmlake reads
    assert read_consumers(table.io, table.root) == {"shared": latest + 1}
    # and pypaimon's own stream from scratch (full plan of the latest snapshot) matches too
    full = pypaimon_stream(warehouse, latest, tmp_path)
    assert apply_all({}, [full], "id") == as_model(table.read(), "id")


def test_lsmlake_streams_the_changelog_pypaimon_wrote(catalog: lsmlake.Catalog, tmp_path: Path) -> None:
    warehouse = Path(catalog.warehouse)
    options = {"bucket": "2", "changelog-producer": "input"}
    pypaimon_create_table(warehouse, "db.t", SCHEMA, primary_keys=["id"], options=options)
    pypaimon_write(warehouse, "db.t", _rows([1, 2, 3], "p"))
    table = catalog.get_table("db.t")
    table.delete(pa.table({"id": [2]}, schema=KEY_SCHEMA))  # lsmlake's own input changelog, mixed in
    pypaimon_write(warehouse, "db.t", _rows([3, 4], "q"))
    manager = table.snapshot_manager
    assert all(manager.snapshot(s).changelog_manifest_list for s in manager.snapshot_ids())
    stream = table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True)
    model = apply_all({}, stream, "id")
    assert model == as_model(table.read(), "id")
    assert model == as_model(pypaimon_read(warehouse, "db.t"), "id")
