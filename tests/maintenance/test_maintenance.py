"""Maintenance: expiration keeps retained snapshots whole, tags protect, rollback, orphan cleaning."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from fixtures import CPP_TEST_DATA, FIXTURES, copy_fixture

import lsmlake
from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import read_schema
from lsmlake.errors import AlreadyExistsError, NoSuchSnapshotError
from lsmlake.maintenance import (
    NoSuchTagError,
    create_tag,
    delete_tag,
    expire_snapshots,
    list_tags,
    remove_orphan_files,
    rollback_to,
    tag_snapshot,
)
from lsmlake.maintenance.planning import (
    FileSets,
    Protection,
    SnapshotFiles,
    expire_candidates,
    expire_end,
    orphan_files,
    plan_deletion,
)
from lsmlake.metadata.index_manifest import read_index_manifest
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.manifest_list import read_manifest_list
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.tags import Tag, decode_tag, encode_tag
from lsmlake.read.table_read import read_table
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
FUTURE = int(time.time() * 1000) + 3_600_000
DAY_MS = 86_400_000
KEYS = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _write(t: Table, ids: list[int], p: str, v: int) -> int | None:
    return t.write(pa.table({"id": ids, "p": [p] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA))


def _table(catalog: lsmlake.Catalog, name: str = "db.t", **options: str) -> Table:
    opts = {"bucket": "2", "num-sorted-run.compaction-trigger": "2", **options}
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_key=["id", "p"],
        partition_keys=["p"],
        options=opts,
    )


def _history(t: Table, rounds: int = 5) -> None:
    for i in range(rounds):
        _write(t, [1, 2, 3, 10 + i], "a" if i % 2 else "b", i)
        if i == 2:
            t.delete(pa.table({"id": [1], "p": ["b"]}, schema=KEYS))


def _rows(t: Table, snapshot_id: int | None = None) -> list[tuple[object, ...]]:
    out = read_table(t, snapshot_id=snapshot_id)
    return sorted(zip(*(out.column(c).to_pylist() for c in out.column_names), strict=True))  # type: ignore[arg-type]


def _files_on_disk(t: Table) -> dict[str, str]:
    """Every file below the table root, by name (data, manifest and index names are unique)."""
    return {f: os.path.join(d, f) for d, _, files in os.walk(t.root) for f in files}


def _references(t: Table, s: Snapshot) -> set[str]:
    """Names of every file snapshot ``s`` needs to be read: lists, manifests, index files, live data."""
    names = {s.base_manifest_list, s.delta_manifest_list}
    for lst in (s.base_manifest_list, s.delta_manifest_list):
        names |= {m.file_name for m in read_manifest_list(t.io, t.paths.manifest(lst))}
    if s.index_manifest:
        names.add(s.index_manifest)
        entries = read_index_manifest(t.io, t.paths.manifest(s.index_manifest))
        names |= {e.index_file.file_name for e in entries}
    names |= {e.file.file_name for e in live_entries(t.io, t.paths, s)}
    return names


def _all_references(t: Table) -> dict[int, set[str]]:
    return {sid: _references(t, t.snapshot(sid)) for sid in t.snapshot_manager.snapshot_ids()}


def _assert_readable(t: Table, s: Snapshot) -> None:
    on_disk = _files_on_disk(t)
    missing = _references(t, s) - set(on_disk)
    assert not missing, f"snapshot {s.id} lost {sorted(missing)}"


# --------------------------------------------------------------------------- pure planning


def test_expire_end_rules() -> None:
    times = {i: i * 100 for i in range(1, 21)}
    base = dict(earliest=1, latest=20, retain_max=1000, max_deletes=50, snapshot_times=times)
    assert expire_end(**base, retain_min=5, older_than_ms=10**9) == 16  # keep the newest 5
    assert expire_end(**base, retain_min=1, older_than_ms=10**9) == 20
    # a snapshot expires only when its successor is older than the cut-off
    assert expire_end(**base, retain_min=1, older_than_ms=701) == 7
    assert expire_end(**base, retain_min=1, older_than_ms=0) == 1  # nothing
    # retain_max forces expiry regardless of time
    assert expire_end(**{**base, "retain_max": 3}, retain_min=1, older_than_ms=0) == 18
    assert expire_end(**{**base, "max_deletes": 4}, retain_min=1, older_than_ms=10**9) == 5
    assert expire_end(**base, retain_min=1, older_than_ms=10**9, consumer_min_next=9) == 9
    with pytest.raises(ValueError):
        expire_end(**base, retain_min=0, older_than_ms=0)
    with pytest.raises(ValueError):
        expire_end(**{**base, "retain_max": 2}, retain_min=3, older_than_ms=0)


def test_plan_deletion_subtracts_protection() -> None:
    s1 = SnapshotFiles(1, manifest_files=frozenset({"l1", "m1"}), delta_added=frozenset({"d1", "d2"}))
    s2 = SnapshotFiles(
        2,
        manifest_files=frozenset({"l2", "m1", "m2"}),
        delta_deleted=frozenset({"d1", "d2"}),
        delta_added=frozenset({"d3"}),
        live=frozenset({"d3"}),
    )
    tag = SnapshotFiles(1, manifest_files=frozenset({"l1", "m1"}), live=frozenset({"d2"}))
    candidates = expire_candidates([s1], s2)
    assert candidates.data_files == {"d1", "d2"} and candidates.manifest_files == {"l1", "m1"}
    assert plan_deletion(candidates, Protection(anchor=s2)) == FileSets(
        data_files=frozenset({"d1", "d2"}), manifest_files=frozenset({"l1"})
    )
    assert plan_deletion(candidates, Protection(anchor=s2, holders=(tag,))).all() == frozenset({"d1"})
    assert orphan_files([("a", 5), ("b", 50), ("c", 5)], {"c"}, older_than_ms=10) == ["a"]


# --------------------------------------------------------------------------- expiration


def test_expire_keeps_retained_snapshots_whole_and_frees_expired_files(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=6)
    ids = t.snapshot_manager.snapshot_ids()
    assert len(ids) >= 8
    refs = _all_references(t)
    reads = {sid: _rows(t, sid) for sid in ids[-3:]}
    on_disk_before = set(_files_on_disk(t))

    result = expire_snapshots(t, retain_min=3, older_than_ms=FUTURE)
    kept = ids[-3:]
    assert result.expired_snapshot_ids == tuple(ids[:-3])
    assert result.earliest_snapshot_id == kept[0] == t.snapshot_manager.earliest_id()
    assert (Path(t.root) / "snapshot" / "EARLIEST").read_text() == str(kept[0])
    assert t.snapshot_manager.snapshot_ids() == kept
    for sid in kept:
        _assert_readable(t, t.snapshot(sid))
        assert _rows(t, sid) == reads[sid]
    kept_refs = set().union(*(refs[s] for s in kept))
    expired_only = set().union(*(refs[s] for s in ids[:-3])) - kept_refs
    deleted_names = {os.path.basename(p) for p in result.deleted_files}
    assert deleted_names == expired_only  # everything only expired snapshots needed, nothing else
    assert set(_files_on_disk(t)) == on_disk_before - expired_only - {f"snapshot-{s}" for s in ids[:-3]}
    assert remove_orphan_files(t, older_than_ms=FUTURE, dry_run=True) == []
    # a second run with the same settings has nothing to do
    assert expire_snapshots(t, retain_min=3, older_than_ms=FUTURE).expired_snapshot_ids == ()


def test_expire_defaults_come_from_options(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=4)
    ids = t.snapshot_manager.snapshot_ids()
    # default time retention (1 h) protects everything just written
    assert expire_snapshots(t).expired_snapshot_ids == ()
    tuned = t.with_options(
        {"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms", "snapshot.expire.limit": "3"}
    )
    r = expire_snapshots(tuned)
    assert r.expired_snapshot_ids == tuple(ids[:3])  # limited to 3 per run
    r = expire_snapshots(tuned)
    assert t.snapshot_manager.snapshot_ids() == ids[-2:]
    assert r.earliest_snapshot_id == ids[-2]
    forced = t.with_options({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    expire_snapshots(forced, older_than_ms=0)  # retain-max expires regardless of time
    assert t.snapshot_manager.snapshot_ids() == ids[-1:]
    _assert_readable(t, t.latest_snapshot())


def test_expire_dv_table_removes_old_index_files(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog, "db.dv", **{"deletion-vectors.enabled": "true"})
    _history(t, rounds=6)
    ids = t.snapshot_manager.snapshot_ids()
    refs = _all_references(t)
    latest_rows = _rows(t)
    r = expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    assert t.snapshot_manager.snapshot_ids() == ids[-1:]
    _assert_readable(t, t.latest_snapshot())
    assert _rows(t) == latest_rows
    assert {os.path.basename(p) for p in r.deleted_files} == set().union(*refs.values()) - refs[ids[-1]]
    assert remove_orphan_files(t, older_than_ms=FUTURE, dry_run=True) == []


def test_consumers_hold_back_expiration(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=4)
    (Path(t.root) / "consumer").mkdir()
    (Path(t.root) / "consumer" / "consumer-c1").write_text(json.dumps({"nextSnapshot": 3}))
    r = expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    assert r.expired_snapshot_ids == (1, 2) and t.snapshot_manager.earliest_id() == 3


def test_expire_empty_table_and_earliest_hint(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    assert expire_snapshots(t) == expire_snapshots(t)
    _write(t, [1], "a", 1)
    (Path(t.root) / "snapshot" / "EARLIEST").unlink()
    r = expire_snapshots(t)
    assert r.expired_snapshot_ids == () and (Path(t.root) / "snapshot" / "EARLIEST").read_text() == "1"


# --------------------------------------------------------------------------- tags


def test_tag_codec_is_java_shaped() -> None:
    snap = Snapshot(
        id=3,
        schema_id=0,
        base_manifest_list="b",
        delta_manifest_list="d",
        commit_user="u",
        commit_identifier=1,
        commit_kind="APPEND",
        time_millis=5,
    )
    import datetime as dt

    tag = Tag("x", snap, dt.datetime(2024, 6, 25, 10, 30, 45, 123456), 86_400_000)
    obj = json.loads(encode_tag(tag))
    assert obj["id"] == 3 and obj["tagCreateTime"] == [2024, 6, 25, 10, 30, 45, 123456000]
    assert obj["tagTimeRetained"] == 86400.0
    assert decode_tag("x", encode_tag(tag)) == tag
    assert "tagCreateTime" not in json.loads(encode_tag(Tag("y", snap)))
    java = json.dumps({**obj, "tagCreateTime": [2024, 6, 25, 10, 30], "tagTimeRetained": 3600.000000000})
    back = decode_tag("x", java)
    assert back.create_time == dt.datetime(2024, 6, 25, 10, 30) and back.time_retained_ms == 3_600_000


def test_create_list_and_delete_tags(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    with pytest.raises(NoSuchSnapshotError):
        create_tag(t, "nothing")
    _history(t, rounds=3)
    tag = create_tag(t, "v1", 2)
    assert tag.snapshot == t.snapshot(2) and tag_snapshot(t, "v1") == t.snapshot(2)
    assert (Path(t.root) / "tag" / "tag-v1").exists()
    latest = create_tag(t, "now")
    assert latest.snapshot.id == t.snapshot_manager.latest_id()
    with pytest.raises(AlreadyExistsError):
        create_tag(t, "v1", 1)
    assert create_tag(t, "v1", 1, exist_ok=True).snapshot.id == 2
    for bad in ("", " ", "a/b", ".hidden"):
        with pytest.raises(ValueError):
            create_tag(t, bad)
    with pytest.raises(NoSuchTagError):
        tag_snapshot(t, "missing")
    assert [x.name for x in list_tags(t)] == ["now", "v1"]
    assert delete_tag(t, "now") == FileSets()  # snapshot still there: only the tag file goes
    assert [x.name for x in list_tags(t)] == ["v1"]
    with pytest.raises(NoSuchTagError):
        delete_tag(t, "now")


def test_tags_protect_files_from_expiration_and_release_them_on_delete(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=6)
    tagged = t.snapshot(3)
    tag_refs = _references(t, tagged)
    create_tag(t, "keep", 3)
    expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    assert not t.snapshot_manager.snapshot_exists(3)
    _assert_readable(t, tag_snapshot(t, "keep"))
    assert remove_orphan_files(t, older_than_ms=FUTURE) == []  # the tag's files are in use
    _assert_readable(t, tag_snapshot(t, "keep"))

    latest_refs = _references(t, t.latest_snapshot())
    freed = delete_tag(t, "keep")
    assert {os.path.basename(p) for p in freed.all()} == tag_refs - latest_refs
    _assert_readable(t, t.latest_snapshot())
    assert remove_orphan_files(t, older_than_ms=FUTURE, dry_run=True) == []


def test_branch_snapshots_protect_shared_files(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=5)
    branch = Path(t.root) / "branch" / "branch-b"
    (branch / "snapshot").mkdir(parents=True)
    shutil.copytree(Path(t.root) / "schema", branch / "schema")
    shutil.copyfile(Path(t.root) / "snapshot" / "snapshot-2", branch / "snapshot" / "snapshot-2")
    needed = _references(t, t.snapshot(2))
    expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    remove_orphan_files(t, older_than_ms=FUTURE)
    assert needed <= set(_files_on_disk(t))


# --------------------------------------------------------------------------- rollback


def test_rollback_to_snapshot_then_write_continues(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=5)
    ids = t.snapshot_manager.snapshot_ids()
    target = 3
    expected = _rows(t, target)
    create_tag(t, "old", 2)
    create_tag(t, "new", ids[-1])
    refs = _all_references(t)

    r = rollback_to(t, snapshot_id=target)
    assert r.snapshot_id == target and r.removed_snapshot_ids == tuple(range(ids[-1], target, -1))
    assert r.removed_tags == ("new",) and [x.name for x in list_tags(t)] == ["old"]
    assert t.snapshot_manager.snapshot_ids() == list(range(1, target + 1))
    assert (Path(t.root) / "snapshot" / "LATEST").read_text() == str(target)
    assert t.snapshot_manager.latest_id() == target
    assert _rows(t) == expected
    for sid in range(1, target + 1):
        _assert_readable(t, t.snapshot(sid))
    exclusive = set().union(*(refs[s] for s in ids if s > target)) - set().union(
        *(refs[s] for s in range(1, target + 1))
    )
    assert {os.path.basename(p) for p in r.deleted_files} == exclusive
    assert remove_orphan_files(t, older_than_ms=FUTURE, dry_run=True) == []

    last = _write(t, [100], "a", 7)
    assert last is not None and t.snapshot_manager.snapshot_ids() == list(range(1, last + 1))
    assert t.snapshot(target + 1).commit_kind == "APPEND"
    assert _rows(t) == sorted([*expected, (100, "a", 7)])


def test_rollback_to_expired_tag_restores_its_snapshot(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=5)
    expected = _rows(t, 2)
    create_tag(t, "t2", 2)
    expire_snapshots(t, retain_min=2, older_than_ms=FUTURE)
    assert t.snapshot_manager.earliest_id() > 2
    r = rollback_to(t, tag="t2")
    assert r.snapshot_id == 2
    assert t.snapshot_manager.snapshot_ids() == [2]
    assert t.snapshot_manager.earliest_id() == t.snapshot_manager.latest_id() == 2
    assert _rows(t) == expected
    _assert_readable(t, t.snapshot(2))
    assert remove_orphan_files(t, older_than_ms=FUTURE, dry_run=True) == []
    last = _write(t, [50], "b", 1)
    assert last is not None and t.snapshot_manager.snapshot_ids() == list(range(2, last + 1))
    assert t.snapshot(3).commit_kind == "APPEND"


def test_rollback_argument_errors(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    with pytest.raises(ValueError):
        rollback_to(t)
    with pytest.raises(ValueError):
        rollback_to(t, snapshot_id=1, tag="x")
    with pytest.raises(NoSuchSnapshotError):
        rollback_to(t, snapshot_id=1)
    _write(t, [1], "a", 1)
    with pytest.raises(NoSuchSnapshotError):
        rollback_to(t, snapshot_id=7)
    with pytest.raises(NoSuchTagError):
        rollback_to(t, tag="x")


# --------------------------------------------------------------------------- orphans


def _plant(path: Path, *, age_ms: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"stray")
    stamp = (time.time() * 1000 - age_ms) / 1000
    os.utime(path, (stamp, stamp))
    return str(path)


def test_orphan_cleaning_removes_old_strays_only(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=4)
    before_rows = _rows(t)
    root = Path(t.root)
    old = [
        _plant(root / "p=a" / "bucket-0" / "data-stray-0.parquet", age_ms=2 * DAY_MS),
        _plant(root / "manifest" / "manifest-stray-0", age_ms=2 * DAY_MS),
        _plant(root / "snapshot" / ".snapshot-99.abc.tmp", age_ms=2 * DAY_MS),
        _plant(root / "index" / "index-stray-0", age_ms=2 * DAY_MS),
    ]
    fresh = _plant(root / "p=b" / "bucket-1" / "data-new-0.parquet", age_ms=60_000)
    untouched = _plant(root / "README", age_ms=2 * DAY_MS)
    referenced = set(_files_on_disk(t)) - {os.path.basename(p) for p in [*old, fresh, untouched]}

    assert remove_orphan_files(t, dry_run=True) == sorted(old)
    assert all(os.path.exists(p) for p in old)
    assert remove_orphan_files(t) == sorted(old)
    assert not any(os.path.exists(p) for p in old)
    assert os.path.exists(fresh) and os.path.exists(untouched)
    assert referenced <= set(_files_on_disk(t))
    for sid in t.snapshot_manager.snapshot_ids():
        _assert_readable(t, t.snapshot(sid))
    assert _rows(t) == before_rows
    assert remove_orphan_files(t) == []
    assert remove_orphan_files(t, older_than_ms=FUTURE) == [fresh]


def test_orphan_cleaning_removes_the_directories_it_empties(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _history(t, rounds=2)
    root = Path(t.root)
    stray = _plant(root / "p=z" / "bucket-1" / "data-stray-0.parquet", age_ms=2 * DAY_MS)
    beside_live = _plant(root / "p=a" / "bucket-0" / "data-stray-1.parquet", age_ms=2 * DAY_MS)
    kept_by_fresh = _plant(root / "p=y" / "bucket-0" / "data-stray-2.parquet", age_ms=2 * DAY_MS)
    fresh = _plant(root / "p=y" / "bucket-1" / "data-new-0.parquet", age_ms=60_000)
    before = _rows(t)

    assert remove_orphan_files(t, dry_run=True) == sorted([stray, beside_live, kept_by_fresh])
    assert (root / "p=z" / "bucket-1").is_dir()  # a dry run removes nothing
    assert remove_orphan_files(t) == sorted([stray, beside_live, kept_by_fresh])
    assert not (root / "p=z").exists()  # its only file was an orphan: bucket and partition go
    assert not (root / "p=y" / "bucket-0").exists()
    assert os.path.exists(fresh)  # ... but p=y still holds a file too new to be judged
    assert (root / "p=a" / "bucket-0").is_dir()  # live data stays, and so does its directory
    assert _rows(t) == before
    for sid in t.snapshot_manager.snapshot_ids():
        _assert_readable(t, t.snapshot(sid))


@pytest.mark.parametrize(
    ("options", "cleans"),
    [
        ({}, False),
        ({"snapshot.clean-empty-directories": "true"}, True),
        ({"snapshot.expire.clean-empty-directories": "true"}, True),  # the older name
        (
            {"snapshot.clean-empty-directories": "false", "snapshot.expire.clean-empty-directories": "true"},
            False,
        ),
    ],
)
def test_expiry_removes_emptied_directories_only_when_asked(
    catalog: lsmlake.Catalog, options: dict[str, str], cleans: bool
) -> None:
    t = _table(catalog, **options)
    _write(t, [1, 2, 3, 4], "gone", 1)
    _write(t, [1, 2], "stays", 1)
    t.overwrite(pa.table({"id": [], "p": [], "v": []}, schema=SCHEMA), partitions={"p": "gone"})
    gone = Path(t.root) / "p=gone"
    assert gone.is_dir()

    result = expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    assert {Path(p).parent.parent.name for p in result.deleted_files if "bucket-" in p} == {"p=gone"}
    assert gone.exists() is not cleans
    assert (Path(t.root) / "p=stays").is_dir()
    assert _rows(t) == [(1, "stays", 1), (2, "stays", 1)]


# --------------------------------------------------------------------------- Java-written fixture


def test_maintenance_on_a_java_dv_table(tmp_path: Path) -> None:
    relpath = CPP_TEST_DATA.relative_to(FIXTURES) / "parquet/pk_table_scan_and_read_dv.db"
    db = copy_fixture(relpath, tmp_path)
    root = next(p for p in db.iterdir() if p.is_dir())
    io, path = FileIO.for_uri(str(root))
    ids = sorted(int(p.name.split("-")[1]) for p in (root / "schema").glob("schema-*"))
    t = Table("db.dv", io, path, read_schema(io, f"{path}/schema/schema-{ids[-1]}"))
    latest = t.latest_snapshot()
    expected = _rows(t)
    assert remove_orphan_files(t, older_than_ms=FUTURE) == []  # everything in it is referenced
    create_tag(t, "first", 1)
    r = expire_snapshots(t, retain_min=1, older_than_ms=FUTURE)
    assert r.expired_snapshot_ids == tuple(range(1, latest.id))
    _assert_readable(t, t.latest_snapshot())
    _assert_readable(t, tag_snapshot(t, "first"))
    assert _rows(t) == expected
    assert (root / "README").exists()
    delete_tag(t, "first")
    assert remove_orphan_files(t, older_than_ms=FUTURE, dry_run=True) == []
    _assert_readable(t, t.latest_snapshot())


def test_commits_expire_old_snapshots_by_the_table_options(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow as pa

    import lsmlake as _lsm

    cat = _lsm.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    t = cat.create_table(
        "db.e",
        schema=schema,
        primary_key=["k"],
        options={
            "bucket": "1",
            "snapshot.num-retained.min": "2",
            "snapshot.num-retained.max": "3",
            "snapshot.time-retained": "1 ms",
        },
    )
    for i in range(6):
        t.write(pa.table({"k": [i % 3], "v": [i]}, schema=schema))
    ids = t.snapshot_manager.snapshot_ids()
    assert 2 <= len(ids) <= 3 and ids[-1] >= 6
    assert {r["k"]: r["v"] for r in t.read().to_pylist()} == {0: 3, 1: 4, 2: 5}
    assert t.read(snapshot_id=ids[0]).num_rows >= 1
