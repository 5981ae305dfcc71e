"""Changelog producers: file layout, snapshot fields, row kinds, row deduplication and changelog expiry."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.compact import bucket_compactor as compact_module
from lsmlake.errors import InvalidOptionError
from lsmlake.metadata.manifest import FileKind, read_manifest
from lsmlake.metadata.manifest_list import read_manifest_list
from lsmlake.metadata.snapshot import Snapshot, decode_snapshot
from lsmlake.scan.planner import ScanFilters
from lsmlake.stream.incremental import change_context, change_splits, read_changes

SCHEMA = pa.schema([("k", pa.int32()), ("s", pa.string()), ("v", pa.int64())])


def make(tmp_path: Path, options: dict[str, str], schema: pa.Schema = SCHEMA) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", schema=schema, primary_key=["k"], options={"bucket": "1", **options})


def rows(**cols: list[Any]) -> pa.Table:
    return pa.table(cols, schema=SCHEMA)


def changelog_entries(t: lsmlake.Table, s: Snapshot) -> list[Any]:
    assert s.changelog_manifest_list is not None
    metas = read_manifest_list(t.io, t.paths.manifest(s.changelog_manifest_list))
    return [e for m in metas for e in read_manifest(t.io, t.paths.manifest(m.file_name))]


def changelog(t: lsmlake.Table, s: Snapshot) -> list[tuple[Any, ...]]:
    ctx = change_context(t.io, t.root, t.schema, t.options, None, ScanFilters())
    splits = change_splits(t.io, t.root, t.schema, t.options, s, "changelog")
    return [tuple(r.values()) for b in read_changes(ctx, splits) for r in b.to_pylist()]


def test_lookup_changelog_files_and_snapshot_fields(tmp_path: Path) -> None:
    t = make(tmp_path, {"changelog-producer": "lookup"})
    t.write(rows(k=[1, 2], s=["a", "b"], v=[1, 2]))
    sid = t.write(rows(k=[2, 3], s=["B", "c"], v=[20, 3]))
    append, compact = t.snapshot_manager.snapshot(sid - 1), t.snapshot_manager.snapshot(sid)
    assert (append.commit_kind, append.changelog_manifest_list) == ("APPEND", None)
    assert compact.commit_kind == "COMPACT" and compact.changelog_record_count == 3
    raw = json.loads((tmp_path / "db.db" / "t" / "snapshot" / f"snapshot-{sid}").read_text())
    assert raw["changelogManifestList"] == compact.changelog_manifest_list
    assert raw["changelogManifestListSize"] == os.path.getsize(
        t.paths.manifest(compact.changelog_manifest_list)
    )
    entries = changelog_entries(t, compact)
    assert {e.kind for e in entries} == {FileKind.ADD}
    for e in entries:
        assert e.file.file_name.startswith("changelog-") and e.file.file_name.endswith(".parquet")
        assert e.file.level > 0 and e.file.file_source == 0  # compaction output level, FileSource APPEND
        data = pq.read_table(tmp_path / "db.db" / "t" / "bucket-0" / e.file.file_name)
        assert data.column_names == ["_KEY_k", "_SEQUENCE_NUMBER", "_VALUE_KIND", "k", "s", "v"]
        assert data.column("_VALUE_KIND").to_pylist() == [1, 2, 0]  # -U, +U, +I
        old_seq, new_seq = data.column("_SEQUENCE_NUMBER").to_pylist()[:2]
        assert old_seq < new_seq  # the -U keeps the sequence number of the row it retracts
    # changelog files are not data files: reads and the live file list do not see them
    live = {f.file_name for split in t.scan().splits() for f in split.files}
    assert not any(n.startswith("changelog-") for n in live)
    assert changelog(t, compact) == [("-U", 2, "b", 2), ("+U", 2, "B", 20), ("+I", 3, "c", 3)]


def test_none_producer_writes_no_changelog(tmp_path: Path) -> None:
    t = make(tmp_path, {})
    t.write(rows(k=[1], s=["a"], v=[1]))
    t.write(rows(k=[1], s=["b"], v=[2]))
    for sid in t.snapshot_manager.snapshot_ids():
        s = t.snapshot_manager.snapshot(sid)
        assert s.changelog_manifest_list is None and s.changelog_record_count is None
    assert not list((tmp_path / "db.db" / "t" / "bucket-0").glob("changelog-*"))


def test_input_changelog_keeps_input_row_kinds(tmp_path: Path) -> None:
    schema = pa.schema([*SCHEMA, pa.field("op", pa.string())])
    t = make(tmp_path, {"changelog-producer": "input", "rowkind.field": "op"}, schema)
    t.write(pa.table({"k": [1, 2], "s": ["a", "b"], "v": [1, 2], "op": ["+I", "+I"]}, schema=schema))
    sid = t.write(
        pa.table(
            {
                "k": [2, 1, 2, 3],
                "s": ["b", "a", "B", "c"],
                "v": [2, 1, 20, 3],
                "op": ["-U", "-D", "+U", "+I"],
            },
            schema=schema,
        )
    )
    s = t.snapshot_manager.snapshot(sid)
    assert s.commit_kind == "APPEND" and s.changelog_record_count == 4
    got = [(r[0], r[1], r[3]) for r in changelog(t, s)]
    # key order, then arrival order within a key
    assert got == [("-D", 1, 1), ("-U", 2, 2), ("+U", 2, 20), ("+I", 3, 3)]
    assert {e.file.level for e in changelog_entries(t, s)} == {0}
    assert sorted(tuple(r.values())[:3] for r in t.read().to_pylist()) == [(2, "B", 20), (3, "c", 3)]


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_row_deduplicate_skips_unchanged_rows(tmp_path: Path, producer: str) -> None:
    t = make(
        tmp_path,
        {
            "changelog-producer": producer,
            "changelog-producer.row-deduplicate": "true",
            "changelog-producer.row-deduplicate-ignore-fields": "s",
        },
    )
    t.write(rows(k=[1, 2, 3], s=["a", "b", "c"], v=[1, 2, 3]))
    # k=1 unchanged, k=2 changes only the ignored field, k=3 changes v
    sid = t.write(rows(k=[1, 2, 3], s=["a", "B", "c"], v=[1, 2, 30]))
    assert changelog(t, t.snapshot_manager.snapshot(sid)) == [("-U", 3, "c", 3), ("+U", 3, "c", 30)]


def test_lookup_changelog_with_deletion_vectors(tmp_path: Path) -> None:
    t = make(tmp_path, {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"})
    t.write(rows(k=[1, 2], s=["a", "b"], v=[1, 2]))
    sid = t.write(rows(k=[1], s=["A"], v=[10]))
    assert changelog(t, t.snapshot_manager.snapshot(sid)) == [("-U", 1, "a", 1), ("+U", 1, "A", 10)]
    assert sorted(tuple(r.values()) for r in t.read().to_pylist()) == [(1, "A", 10), (2, "b", 2)]
    sid = t.delete(pa.table({"k": pa.array([2], pa.int32())}))
    assert changelog(t, t.snapshot_manager.snapshot(sid)) == [("-D", 2, "b", 2)]


def test_aggregation_lookup_reads_do_not_count_twice(tmp_path: Path) -> None:
    t = make(
        tmp_path,
        {"changelog-producer": "lookup", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    )
    t.write(rows(k=list(range(50)), s=["x"] * 50, v=[1] * 50))
    sid = t.write(rows(k=[7], s=["x"], v=[2]))
    levels = sorted(f.level for split in t.scan().splits() for f in split.files)
    assert len(levels) > 1  # key 7 lives in two levels: the lower one holds the full sum
    assert t.read(filter="k = 7").to_pylist() == [{"k": 7, "s": "x", "v": 3}]
    assert t.read().num_rows == 50
    assert changelog(t, t.snapshot_manager.snapshot(sid)) == [("-U", 7, "x", 1), ("+U", 7, "x", 3)]


def test_expiry_deletes_changelog_of_expired_snapshots(tmp_path: Path) -> None:
    t = make(
        tmp_path,
        {
            "changelog-producer": "input",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
            "snapshot.time-retained": "1 ms",
        },
    )
    t.write(rows(k=[1], s=["a"], v=[1]))
    first = {p.name for p in (tmp_path / "db.db" / "t" / "bucket-0").glob("changelog-*")}
    t.write(rows(k=[2], s=["b"], v=[2]))
    left = {p.name for p in (tmp_path / "db.db" / "t" / "bucket-0").glob("changelog-*")}
    assert first and not (first & left) and len(left) == 1
    assert not (tmp_path / "db.db" / "t" / "changelog").exists()


def test_decoupled_changelog_outlives_its_snapshots(tmp_path: Path) -> None:
    retention = {
        "changelog-producer": "input",
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1",
        "snapshot.time-retained": "1 ms",
    }
    t = make(tmp_path, {**retention, "changelog.num-retained.max": "3", "changelog.num-retained.min": "1"})
    for i in range(5):
        t.write(rows(k=[i], s=["x"], v=[i]))
    root = tmp_path / "db.db" / "t"
    latest = t.snapshot_manager.latest_id()
    assert latest is not None and t.snapshot_manager.snapshot_ids() == [latest]
    kept = sorted(int(p.name.split("-")[1]) for p in (root / "changelog").glob("changelog-*"))
    assert kept and kept[-1] == latest - 1 and len(kept) <= 3
    referenced = set()
    for cid in kept:  # a long-lived changelog stays readable: its files and manifests survive
        s = decode_snapshot((root / "changelog" / f"changelog-{cid}").read_bytes())
        if s.changelog_manifest_list is not None:
            assert [r[0] for r in changelog(t, s)] == ["+I"]
            referenced |= {e.file.file_name for e in changelog_entries(t, s)}
    assert referenced and referenced <= {p.name for p in (root / "bucket-0").glob("changelog-*")}
    # orphan cleaning counts the long-lived changelogs' files as used (their base lists are gone)
    orphans = t.remove_orphan_files(older_than_ms=2**62, dry_run=True)
    assert not [p for p in orphans if "changelog" in p.rsplit("/", 1)[-1] or "manifest" in p]
    # retention shrinks: older long-lived changelogs and their files go (as in Java, the latest stays)
    t.with_options({"changelog.num-retained.max": "2"}).expire_snapshots()
    assert [p.name for p in (root / "changelog").glob("changelog-*")] == [f"changelog-{kept[-1]}"]
    last = decode_snapshot((root / "changelog" / f"changelog-{kept[-1]}").read_bytes())
    last_files = (
        {e.file.file_name for e in changelog_entries(t, last)} if last.changelog_manifest_list else set()
    )
    assert {p.name for p in (root / "bucket-0").glob("changelog-*")} & referenced == last_files


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"changelog.num-retained.min": "0"}, "at least 1"),
        ({"changelog.num-retained.min": "5", "changelog.num-retained.max": "2"}, "not be larger"),
    ],
)
def test_rejected_changelog_options(tmp_path: Path, options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        make(tmp_path, {"changelog-producer": "input", **options})


def test_changelog_file_options(tmp_path: Path) -> None:
    t = make(
        tmp_path,
        {"changelog-producer": "input", "changelog-file.format": "orc", "changelog-file.prefix": "cl-"},
    )
    sid = t.write(rows(k=[2, 1], s=["b", "a"], v=[2, 1]))
    s = t.snapshot_manager.snapshot(sid)
    names = [e.file.file_name for e in changelog_entries(t, s)]
    assert names and all(n.startswith("cl-") and n.endswith(".orc") for n in names)
    assert changelog(t, s) == [("+I", 1, "a", 1), ("+I", 2, "b", 2)]
    data = [f.file_name for split in t.scan().splits() for f in split.files]
    assert all(n.startswith("data-") and n.endswith(".parquet") for n in data)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_changelog_of_piecewise_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, producer: str
) -> None:
    monkeypatch.setattr(compact_module, "MERGE_PIECE_ROWS", 5_000)
    t = make(tmp_path, {"changelog-producer": producer, "target-file-size": "64 kb"})
    rng = np.random.default_rng(7)
    model: dict[int, tuple[Any, ...]] = {}
    for commit in range(3):
        keys = rng.choice(40_000, 15_000, replace=False).astype(np.int32)
        sid = t.write(rows(k=keys.tolist(), s=[f"c{commit}"] * len(keys), v=keys.astype(np.int64).tolist()))
        gone = rng.choice(40_000, 300, replace=False).astype(np.int32)
        sid = t.delete(pa.table({"k": gone}))
    for snapshot_id in t.snapshot_manager.snapshot_ids():
        for kind, k, s, v in changelog(t, t.snapshot_manager.snapshot(snapshot_id)):
            if kind in ("-U", "-D"):
                assert model.pop(k) == (s, v)
            else:
                assert k not in model  # a new key, or one its -U just retracted
                model[k] = (s, v)
    assert model == {r["k"]: (r["s"], r["v"]) for r in t.read(snapshot_id=sid).to_pylist()}


def test_overwrite_commits_no_changelog(tmp_path: Path) -> None:
    t = make(tmp_path, {"changelog-producer": "input"})
    t.write(rows(k=[1], s=["a"], v=[1]))
    sid = t.overwrite(rows(k=[2], s=["b"], v=[2]))
    assert t.snapshot_manager.snapshot(sid).changelog_manifest_list is None
    assert len(list((tmp_path / "db.db" / "t" / "bucket-0").glob("changelog-*"))) == 1  # the first write's
    assert t.read().to_pylist() == [{"k": 2, "s": "b", "v": 2}]
