"""Rollback removes every snapshot file above its target, those below a stale EARLIEST hint too."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lsmlake
from lsmlake.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _ids(t: Table, **kw: object) -> list[int]:
    return sorted(t.read(**kw).column("id").to_pylist())  # type: ignore[arg-type]


def _delete(t: Table, ids: list[int]) -> None:
    t.delete(pa.table({"id": pa.array(ids, pa.int64())}))


def test_rollback_past_snapshots_below_a_fast_forwarded_earliest_hint(tmp_path: Path) -> None:
    """Java Paimon 1.4.2's fast-forward copies the branch's snapshot directory, hints included, so main's
    EARLIEST becomes the branch's first snapshot while main's older snapshots stay. A rollback to a tag
    below that hint must still remove the snapshots between the tag and the hint: one left behind is
    the latest again (with deletion vectors its level-0 deletes show only once a compaction runs)."""
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    options = {"bucket": "-1", "deletion-vectors.enabled": "true", "file.format": "orc"}
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=options)
    t.write(pa.table({"id": pa.array(range(6), pa.int64()), "v": [f"v{i}" for i in range(6)]}, schema=SCHEMA))
    _delete(t, [0])
    tagged = t.snapshot_manager.latest_id()
    assert tagged is not None
    t.create_tag("t0", tagged)
    _delete(t, [1, 2])
    t.create_tag("t1", t.snapshot_manager.latest_id())
    t.create_branch("b", tag="t1").write(
        pa.table({"id": pa.array([10], pa.int64()), "v": ["b"]}, schema=SCHEMA)
    )
    t.fast_forward("b")
    first_of_branch = t.branch("b").snapshot_manager.listed_ids()[0]
    snapshot_dir = Path(t.root) / "snapshot"
    (snapshot_dir / "EARLIEST").write_text(str(first_of_branch))  # what Java's fast-forward leaves
    between = [i for i in t.snapshot_manager.listed_ids() if tagged < i < first_of_branch]
    assert between, "the deletes of 1 and 2 left snapshots between the tag and the branch"

    result = t.rollback_to(tag="t0")

    assert set(between) <= set(result.removed_snapshot_ids)
    assert t.snapshot_manager.listed_ids()[-1] == tagged == t.snapshot_manager.latest_id()
    assert _ids(t) == [1, 2, 3, 4, 5]
    t.compact(full=False)
    assert _ids(t) == [1, 2, 3, 4, 5]
    t.compact(full=True)
    assert _ids(t) == [1, 2, 3, 4, 5] == _ids(t, tag="t0")
    t.write(pa.table({"id": pa.array([20], pa.int64()), "v": ["x"]}, schema=SCHEMA))
    assert _ids(t) == [1, 2, 3, 4, 5, 20]
