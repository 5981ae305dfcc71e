"""Crash-safe expiry: a failure at any delete or hint write of snapshot (or changelog) expiry leaves
only unreferenced files; retained snapshots and tags read as before, travel to a claimed snapshot says
it expired, orphan cleaning runs, and the next expiry finishes the job."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.fileio import FileIO
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.maintenance import create_tag, delete_tag, expire_snapshots, remove_orphan_files
from lsmlake.maintenance.changelog_expire import expire_changelogs, listed_changelog_ids, long_lived_ids
from lsmlake.maintenance.files import FileLocator
from lsmlake.maintenance.orphans import used_files
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
FUTURE = int(time.time() * 1000) + 3_600_000
FAR_FUTURE = 2**62
RETAIN = 3


class Crash(Exception):
    """The injected failure."""


class CrashingIO(FileIO):
    """A FileIO that raises at its k-th mutation: a delete, a hint write, a create-if-absent."""

    def __init__(self, inner: FileIO, fail_at: int) -> None:
        super().__init__(inner.fs, local=inner.local)
        self.fail_at, self.calls = fail_at, 0

    def _tick(self) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            raise Crash(f"injected crash at mutation {self.calls}")

    def delete_file(self, path: str) -> None:
        self._tick()
        super().delete_file(path)

    def delete_empty_dir(self, path: str) -> bool:
        self._tick()
        return super().delete_empty_dir(path)

    def overwrite_hint(self, path: str, text: str) -> None:
        self._tick()
        super().overwrite_hint(path, text)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self._tick()
        return super().write_if_absent(path, data)


def _write(t: Table, ids: list[int], p: str, v: int) -> None:
    t.write(pa.table({"id": ids, "p": [p] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA))


def _build(root: Path, **options: str) -> Table:
    cat = lsmlake.Catalog(str(root))
    cat.create_database("db")
    opts = {
        "bucket": "2",
        "num-sorted-run.compaction-trigger": "2",
        "write-only": "true",  # expiry runs only when the test says so
        "snapshot.clean-empty-directories": "true",
        **options,
    }
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id", "p"], partition_keys=["p"], options=opts)
    for i in range(8):
        _write(t, [1, 2, 3, 10 + i], "a" if i % 3 else "b", i)
        if i == 1:
            create_tag(t, "early")
        if i == 4:
            t.delete(pa.table({"id": [1, 2], "p": ["b", "a"]}, schema=SCHEMA.remove(2)))
    return t


def _open(root: Path) -> Table:
    return lsmlake.Catalog(str(root)).open_table("db.t")


def _rows(t: Table, **at: object) -> list[tuple[object, ...]]:
    out = t.read(**at)  # type: ignore[arg-type]
    return sorted(zip(*(out.column(c).to_pylist() for c in out.column_names), strict=True))  # type: ignore[arg-type]


def _files(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def _expire(t: Table) -> None:
    expire_snapshots(t, retain_min=RETAIN, retain_max=RETAIN, older_than_ms=FUTURE)


def _cases(template: Path, tmp_path: Path, expire: object, at_least: int = 10) -> Iterator[tuple[int, Path]]:
    """For every k up to the number of mutations a clean run makes: a copy of ``template`` whose
    expiry crashed at mutation k."""
    probe = tmp_path / "probe"
    shutil.copytree(template, probe)
    t = _open(probe)
    counting = CrashingIO(t.io, fail_at=-1)
    expire(dataclasses.replace(t, io=counting))  # type: ignore[operator]
    total = counting.calls
    assert total >= at_least, total
    for k in range(1, total + 1):
        root = tmp_path / f"crash{k}"
        shutil.copytree(template, root)
        t = _open(root)
        with pytest.raises(Crash):
            expire(dataclasses.replace(t, io=CrashingIO(t.io, fail_at=k)))  # type: ignore[operator]
        yield k, root


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="plain"),
        pytest.param({"deletion-vectors.enabled": "true"}, id="deletion-vectors"),
    ],
)
def test_a_crash_at_every_step_of_expiry_leaves_only_orphans(tmp_path: Path, options: dict[str, str]) -> None:
    template = tmp_path / "template"
    t = _build(template, **options)
    manager = t.snapshot_manager
    latest = manager.latest_id()
    assert latest is not None
    before = {sid: _rows(t, snapshot_id=sid) for sid in manager.snapshot_ids()}
    tag_rows = _rows(t, tag="early")
    retained = range(latest - RETAIN + 1, latest + 1)

    clean = tmp_path / "clean"
    shutil.copytree(template, clean)
    _expire(_open(clean))
    expected_files = _files(clean)
    expired = set(before) - set(retained)
    assert expired and SnapshotManager(_open(clean).io, _open(clean).root).snapshot_ids() == list(retained)

    for k, root in _cases(template, tmp_path, _expire):
        t = _open(root)
        # every retained snapshot and the tag read exactly as before
        for sid in retained:
            assert _rows(t, snapshot_id=sid) == before[sid], (k, sid)
        assert _rows(t, tag="early") == tag_rows, k
        # an expiring snapshot reads as before until the expiry claimed it, then is expired, never corrupt
        for sid in sorted(expired):
            try:
                assert _rows(t, snapshot_id=sid) == before[sid], (k, sid)
            except NoSuchSnapshotError as e:
                assert "expired" in str(e), (k, e)
        # orphan cleaning runs, and removes only what no retained snapshot or the tag references
        second = root.with_name(root.name + "-orphans")
        shutil.copytree(root, second)
        t2 = _open(second)
        needed = used_files(_open(clean))
        kept_before = _files(second)
        removed = remove_orphan_files(t2, older_than_ms=FAR_FUTURE)
        assert not {os.path.normpath(p) for p in removed} & {
            os.path.normpath(os.path.join(str(second), os.path.relpath(p, str(clean)))) for p in needed
        }, k
        assert _files(second) <= kept_before
        for sid in retained:
            assert _rows(t2, snapshot_id=sid) == before[sid], (k, sid)
        assert _rows(t2, tag="early") == tag_rows, k
        # the next expiry finishes the job: the table ends exactly as after an uninterrupted run
        for table, where in ((t, root), (t2, second)):
            _expire(table)
            assert table.snapshot_manager.listed_ids() == list(retained), (k, where)
            assert _files(where) == expected_files, (k, where, _files(where) ^ expected_files)
            assert remove_orphan_files(table, older_than_ms=FAR_FUTURE) == [], (k, where)
            for sid in retained:
                assert _rows(table, snapshot_id=sid) == before[sid], (k, sid)


def test_travel_below_earliest_says_expired(tmp_path: Path) -> None:
    """A snapshot file left below EARLIEST by an interrupted expiry (its files half gone) is expired."""
    t = _build(tmp_path / "wh")
    manager = t.snapshot_manager
    first = manager.earliest_id()
    assert first == 1
    manager.write_earliest_hint(4)  # as an expiry does before deleting anything
    s1 = manager.snapshot(1, expired=True)
    t.io.delete_file(t.paths.manifest(s1.delta_manifest_list))
    assert manager.snapshot_ids()[0] == 4 and manager.listed_ids()[0] == 1
    assert not manager.snapshot_exists(1)
    with pytest.raises(NoSuchSnapshotError, match="expired"):
        t.read(snapshot_id=1)
    remove_orphan_files(t, older_than_ms=FAR_FUTURE)  # not CorruptFileError
    _expire(t)
    assert manager.listed_ids() == manager.snapshot_ids()


def test_orphans_tolerate_a_half_expired_prefix_from_an_older_writer(tmp_path: Path) -> None:
    """An older writer's expiry deleted manifests before the snapshot files and the hint: the oldest
    snapshots are listed at or above EARLIEST with files gone. Orphan cleaning takes them as expired."""
    t = _build(tmp_path / "wh")
    manager = t.snapshot_manager
    latest = manager.latest_id()
    assert latest is not None
    expected = {sid: _rows(t, snapshot_id=sid) for sid in range(3, latest + 1)}
    for sid in (1, 2):
        t.io.delete_file(t.paths.manifest(manager.snapshot(sid).delta_manifest_list))
    remove_orphan_files(t, older_than_ms=FAR_FUTURE)
    for sid, rows in expected.items():
        assert _rows(t, snapshot_id=sid) == rows


def _changelog_table(root: Path) -> Table:
    return _build(
        root,
        **{
            "changelog-producer": "input",
            "snapshot.num-retained.min": str(RETAIN),
            "snapshot.num-retained.max": str(RETAIN),
            "changelog.num-retained.min": "50",
            "changelog.num-retained.max": "50",
        },
    )


def _expire_changelog(t: Table) -> None:
    """Changelog expiry once the changelog retention shrinks to the last 5 snapshots."""
    shrunk = {"changelog.num-retained.min": "5", "changelog.num-retained.max": "5"}
    t = t.with_dynamic_options(shrunk)
    expire_changelogs(t.io, t.root, t.options, FileLocator(t), now_ms=FUTURE)


def test_a_crash_at_every_step_of_changelog_expiry(tmp_path: Path) -> None:
    template = tmp_path / "template"
    t = _changelog_table(template)
    _expire(t)  # snapshots 1..latest-3 become long-lived changelogs
    kept = long_lived_ids(t.io, t.root)
    assert kept, "expected long-lived changelogs"
    clean = tmp_path / "clean"
    shutil.copytree(template, clean)
    _expire_changelog(_open(clean))
    expected_ids = long_lived_ids(_open(clean).io, str(clean / "db.db" / "t"))
    assert len(expected_ids) < len(kept)
    expected_files = _files(clean)

    for k, root in _cases(template, tmp_path, _expire_changelog):
        t = _open(root)
        remaining = long_lived_ids(t.io, t.root)
        assert remaining in (kept, expected_ids), (k, remaining)
        second = root.with_name(root.name + "-orphans")
        shutil.copytree(root, second)
        remove_orphan_files(_open(second), older_than_ms=FAR_FUTURE)  # runs: no CorruptFileError
        for where in (root, second):
            table = _open(where)
            _expire_changelog(table)
            assert listed_changelog_ids(table.io, table.root) == expected_ids, (k, where)
            assert _files(where) == expected_files, (k, where, _files(where) ^ expected_files)


def test_a_crash_while_deleting_a_tag_leaves_only_orphans(tmp_path: Path) -> None:
    template = tmp_path / "template"
    t = _build(template)
    _expire(t)  # the tag's snapshot expires: deleting the tag frees its files
    latest = t.snapshot_manager.latest_id()
    assert latest is not None
    before, tag_rows = _rows(t), _rows(t, tag="early")
    for k, root in _cases(template, tmp_path, lambda table: delete_tag(table, "early"), at_least=2):
        t = _open(root)
        # the tag file goes first: a crash leaves the tag whole, or gone with only orphans left
        assert [x.name for x in t.list_tags()] == (["early"] if k == 1 else []), k
        assert _rows(t) == before, k
        if k == 1:
            assert _rows(t, tag="early") == tag_rows
        remove_orphan_files(t, older_than_ms=FAR_FUTURE)
        assert _rows(t) == before, k
        assert remove_orphan_files(t, older_than_ms=FAR_FUTURE) == [], k
