"""Time travel to a half-deleted snapshot that is still retained (at or above EARLIEST: an older
lsmlake's or Paimon's expiry deleted its manifests before its snapshot file and the hint) is a
MissingFileError naming the missing file and the snapshot, on every path that reads it; a snapshot
below EARLIEST reads as expired; the latest snapshot, orphan cleaning and expiry still work."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import LsmlakeError, MissingFileError, NoSuchSnapshotError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def build(root: Path) -> tuple[lsmlake.Catalog, lsmlake.Table, int]:
    """Four writes (eight snapshots), then snapshot 1's delta manifest list deleted as Paimon's expiry
    order would leave it; returns snapshot 1's commit time."""
    cat = lsmlake.Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["k"],
        options={"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
    )
    for i in range(4):
        t.write(pa.table({"k": [i, i + 10], "v": [str(i)] * 2}, schema=SCHEMA))
    snap = json.loads((Path(t.root) / "snapshot" / "snapshot-1").read_text())
    (Path(t.root) / "manifest" / snap["deltaManifestList"]).unlink()
    lsmlake.clear_caches()
    return cat, t, int(snap["timeMillis"])


PATHS: dict[str, Callable[[lsmlake.Catalog, lsmlake.Table, int], Any]] = {
    "by id": lambda c, t, ms: t.read(snapshot_id=1),
    "by timestamp": lambda c, t, ms: t.read(as_of_millis=ms),
    "scan.snapshot-id": lambda c, t, ms: t.with_options({"scan.snapshot-id": "1"}).read(),
    "explain": lambda c, t, ms: t.explain(snapshot_id=1),
    "$files": lambda c, t, ms: c.get_table("db.t$files").read(snapshot_id=1),
    "$manifests": lambda c, t, ms: c.get_table("db.t$manifests").read(snapshot_id=1),
    "$buckets": lambda c, t, ms: c.get_table("db.t$buckets").read(snapshot_id=1),
    "$partitions": lambda c, t, ms: c.get_table("db.t$partitions").read(snapshot_id=1),
    "stream from-snapshot-full": lambda c, t, ms: list(
        t.stream(mode="from-snapshot-full", snapshot_id=1, stop_when_caught_up=True)
    ),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_every_path_names_the_missing_file_and_the_snapshot(tmp_path: Path, path: str) -> None:
    cat, t, ms = build(tmp_path / "wh")
    with pytest.raises(MissingFileError) as info:
        PATHS[path](cat, t, ms)
    assert isinstance(info.value, LsmlakeError)
    assert "manifest-list-" in str(info.value) and "does not exist" in str(info.value)
    assert "snapshot 1 of table" in str(info.value), str(info.value)


def test_reads_of_its_changelog_do_not_need_its_delta(tmp_path: Path) -> None:
    """With a changelog producer, streams and incremental reads use the changelog lists, still there."""
    _, t, _ = build(tmp_path / "wh")
    batches = list(t.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True))
    assert sum(b.num_rows for b in batches) == 8
    assert t.with_options({"incremental-between": "0,3"}).read().num_rows == 2  # snapshot 2's changelog


def test_a_tag_on_it_and_the_latest_snapshot(tmp_path: Path) -> None:
    cat, t, _ = build(tmp_path / "wh")
    assert t.read().num_rows == 8
    assert cat.get_table("db.t$snapshots").read().num_rows == 8  # listing reads only snapshot files
    t.create_tag("old", snapshot_id=1)
    with pytest.raises(MissingFileError, match="snapshot 1 of table"):
        t.read(tag="old")


def test_orphan_cleaning_and_expiry_finish_it(tmp_path: Path) -> None:
    _, t, _ = build(tmp_path / "wh")
    expected = {sid: t.read(snapshot_id=sid).num_rows for sid in range(2, 9)}
    t.remove_orphan_files(older_than_ms=2**62)  # the half-expired oldest snapshot is tolerated
    result = t.expire_snapshots(retain_max=7, retain_min=1)
    assert 1 in result.expired_snapshot_ids
    with pytest.raises(NoSuchSnapshotError):
        t.read(snapshot_id=1)
    assert {sid: t.read(snapshot_id=sid).num_rows for sid in range(2, 9)} == expected
