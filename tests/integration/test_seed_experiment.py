"""The second seed's experiment, through the API: deletion vectors produced by an UPDATE."""

from __future__ import annotations

import pyarrow as pa

import lsmlake
from lsmlake.metadata.index_manifest import read_index_manifest
from lsmlake.metadata.live_files import live_entries


def test_update_marks_old_rows_in_one_deletion_vector(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("user_id", pa.int32()), ("age", pa.int32())])
    t = catalog.create_table(
        "db.test_ver",
        schema=schema,
        primary_key=["user_id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    for uid, age in [(1, 1), (2, 2), (3, 33)]:
        t.write(pa.table({"user_id": [uid], "age": [age]}, schema=schema))
    # One full compaction (a dedicated compaction job in Paimon terms) leaves one file holding all
    # three users at the max level; otherwise the universal policy may fold the tiny files into the
    # update's rewrite, and nothing is left to mark.
    t.compact(full=True)
    before = {e.file.file_name for e in live_entries(t.io, t.paths, t.latest_snapshot())}
    t.update("user_id = 1 OR user_id = 2", {"age": 2})

    rows = sorted((r["user_id"], r["age"]) for r in t.read().to_pylist())
    assert rows == [(1, 2), (2, 2), (3, 33)]
    assert all(s.raw_convertible for s in t.scan().splits())

    snapshot = t.latest_snapshot()
    assert snapshot is not None and snapshot.commit_kind == "COMPACT" and snapshot.index_manifest
    (index,) = read_index_manifest(t.io, t.paths.manifest(snapshot.index_manifest))
    assert index.index_file.index_type == "DELETION_VECTORS" and index.bucket == 0
    (dv_range,) = index.index_file.dv_ranges or ()
    assert dv_range.cardinality == 2 and dv_range.data_file_name in before
    live = {e.file.file_name: e.file for e in live_entries(t.io, t.paths, snapshot)}
    assert dv_range.data_file_name in live and live[dv_range.data_file_name].level >= 1
    assert all(f.level >= 1 and f.delete_row_count == 0 for f in live.values())
