"""A tag stays readable after its snapshot expired: reads, SQL time travel, incremental diffs, `$tags`,
rollback (which restores the snapshot file from the tag), and clear errors for expired snapshot ids."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError, NoSuchSnapshotError
from lsmlake.metadata.snapshot import read_snapshot
from lsmlake.metadata.tags import read_tag
from lsmlake.sql import execute
from lsmlake.system.registry import read_system_table
from lsmlake.table import Table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    return t.sort_by("k").to_pylist()


def _sql(catalog: lsmlake.Catalog, text: str) -> list[dict[str, Any]]:
    return execute(catalog, text, database="db")[-1].rows


def _expired_tags(catalog: lsmlake.Catalog, **options: str) -> Table:
    """Five writes (k=1..5 plus an update of k=1 each), tags v3 and v4 on the third and fourth, a
    full compaction, then expiry down to the last snapshot: the tagged snapshots are gone from
    `snapshot/` and their files replaced by the compacted ones. Snapshot ids are 1..6 without
    deletion vectors (a DV table's writes may add COMPACT snapshots)."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", **options})
    ids = [t.write(pa.table({"k": [i, 1], "v": [i * 10, i]}, schema=SCHEMA)) for i in range(1, 6)]
    t.create_tag("v3", ids[2])
    t.create_tag("v4", ids[3])
    t.compact(full=True)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert len(t.snapshot_manager.snapshot_ids()) == 1
    return t


AT_3 = [{"k": 1, "v": 3}, {"k": 2, "v": 20}, {"k": 3, "v": 30}]


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["merge", "dv"])
def test_expired_tag_is_readable(catalog: lsmlake.Catalog, options: dict[str, str]) -> None:
    t = _expired_tags(catalog, **options)
    assert _rows(t.read(tag="v3")) == AT_3
    assert t.scan(tag="v3").snapshot_id == read_tag(t.io, t.root, "v3").snapshot.id
    assert _rows(t.with_options({"scan.tag-name": "v3"}).read()) == AT_3
    assert _rows(t.with_options({"scan.version": "v3"}).read()) == AT_3
    assert _rows(t.read(tag="v3", filter="k >= 2", columns=["k"])) == [{"k": 2}, {"k": 3}]
    assert _sql(catalog, "SELECT * FROM t VERSION AS OF 'v3' ORDER BY k") == AT_3
    hinted = _sql(catalog, "SELECT count(*) AS n FROM t /*+ OPTIONS('scan.tag-name'='v3') */")
    assert hinted == [{"n": 3}]
    files = _sql(catalog, "SELECT sum(record_count) AS n FROM `t$files` VERSION AS OF 'v3'")
    assert files[0]["n"] >= 3
    audit = _sql(catalog, "SELECT rowkind, k FROM `t$audit_log` VERSION AS OF 'v3' ORDER BY k")
    assert [r["k"] for r in audit] == [1, 2, 3]
    assert read_system_table(t.with_options({"scan.tag-name": "v3"}), "files").num_rows >= 1


def test_incremental_between_expired_tags(catalog: lsmlake.Catalog) -> None:
    t = _expired_tags(catalog)
    between = t.with_options({"incremental-between": "v3,v4"})
    assert _rows(between.read()) == [{"k": 1, "v": 4}, {"k": 4, "v": 40}]
    assert _sql(catalog, "SELECT k FROM t /*+ OPTIONS('incremental-between'='v3,v4') */ ORDER BY k") == [
        {"k": 1},
        {"k": 4},
    ]
    to_snapshot = t.with_options(
        {"incremental-between": "v3,v4", "incremental-between-tag-to-snapshot": "true"}
    )
    with pytest.raises(NoSuchSnapshotError, match=r"outside the available snapshots \[6, 6\]"):
        to_snapshot.read()


def test_tags_table_lists_expired_tags(catalog: lsmlake.Catalog) -> None:
    t = _expired_tags(catalog)
    tags = read_system_table(t, "tags").select(["tag_name", "snapshot_id", "record_count"]).to_pylist()
    assert tags == [
        {"tag_name": "v3", "snapshot_id": 3, "record_count": tags[0]["record_count"]},
        {"tag_name": "v4", "snapshot_id": 4, "record_count": tags[1]["record_count"]},
    ]


def test_expired_snapshot_id_names_the_earliest(catalog: lsmlake.Catalog) -> None:
    t = _expired_tags(catalog)
    expected = r"table db\.t has no snapshot 3: it has expired; the earliest snapshot is 6 .*tag 'v3'"
    with pytest.raises(NoSuchSnapshotError, match=expected):
        t.read(snapshot_id=3)
    with pytest.raises(
        NoSuchSnapshotError, match="no snapshot 2: it has expired; the earliest snapshot is 6"
    ):
        t.with_options({"scan.snapshot-id": "2"}).read()
    with pytest.raises(NoSuchSnapshotError, match=r"no snapshot 9: the available snapshots are 6\.\.6"):
        t.scan(snapshot_id=9).splits()  # planning is lazy: the snapshot is looked up on first use
    with pytest.raises(NoSuchSnapshotError, match="no snapshot 2: it has expired"):
        _sql(catalog, "SELECT * FROM t VERSION AS OF 2")


def test_time_travel_option_conflicts_are_refused(catalog: lsmlake.Catalog) -> None:
    t = _expired_tags(catalog)
    with pytest.raises(InvalidOptionError, match="only one of"):
        t.with_options({"scan.tag-name": "v3", "scan.snapshot-id": "6"}).read()
    with pytest.raises(InvalidOptionError, match="conflicts with incremental-between"):
        t.with_options({"scan.snapshot-id": "6", "incremental-between": "v3,v4"}).read()


def test_rollback_to_expired_tag_restores_its_snapshot(catalog: lsmlake.Catalog) -> None:
    t = _expired_tags(catalog)
    result = t.rollback_to(tag="v3")
    assert result.snapshot_id == 3 and result.removed_snapshot_ids == (6,)
    assert result.removed_tags == ("v4",)
    manager = t.snapshot_manager
    assert manager.snapshot_ids() == [3]
    assert manager.earliest_id() == 3 and manager.latest_id() == 3
    restored = read_snapshot(t.io, manager.snapshot_path(3))
    assert restored == read_tag(t.io, t.root, "v3").snapshot
    assert "tagCreateTime" not in t.io.read_text(manager.snapshot_path(3))
    assert _rows(t.read()) == AT_3
    assert t.write(pa.table({"k": [9], "v": [9]}, schema=SCHEMA)) == 4
    assert _rows(t.read()) == [*AT_3, {"k": 9, "v": 9}]
    assert t.remove_orphan_files(dry_run=True, older_than_ms=2**62) == []


def test_rollback_to_expired_snapshot_id_goes_through_its_tag(catalog: lsmlake.Catalog) -> None:
    t = _expired_tags(catalog)
    assert t.rollback_to(4).snapshot_id == 4
    assert t.snapshot_manager.snapshot_ids() == [4]
    assert _rows(t.read()) == [{"k": 1, "v": 4}, {"k": 2, "v": 20}, {"k": 3, "v": 30}, {"k": 4, "v": 40}]
    with pytest.raises(NoSuchSnapshotError, match=r"cannot roll back to snapshot 2: .*no tag holds it"):
        t.rollback_to(2)
    assert t.snapshot_manager.snapshot_ids() == [4]
