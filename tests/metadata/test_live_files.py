"""Rebuild the live file set of every fixture snapshot and reconcile it with the snapshot's counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures import FIXTURES, fixture_id, table_roots

from lsmlake.core.fileio import FileIO
from lsmlake.metadata.index_manifest import read_index_manifest
from lsmlake.metadata.manifest import FileKind, ManifestEntry, live_files, read_manifest
from lsmlake.metadata.manifest_list import ManifestFileMeta, read_manifest_list
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")

ROOTS = table_roots()
IO = FileIO.for_uri("/")[0]


def _manifest_dir(root: Path, name: str) -> Path:
    """`<root>/manifest`; the paimon-cpp branch fixtures keep their manifests in the main table's."""
    own = root / "manifest"
    if (own / name).exists() or root.parent.name != "branch":
        return own
    return root.parents[1] / "manifest"


def _read_list(root: Path, name: str, size: int | None) -> list[ManifestFileMeta]:
    path = _manifest_dir(root, name) / name
    if size is not None:
        assert path.stat().st_size == size, f"{name}: recorded size {size}"
    return read_manifest_list(IO, str(path))


def _read_entries(root: Path, metas: list[ManifestFileMeta]) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for m in metas:
        path = _manifest_dir(root, m.file_name) / m.file_name
        assert path.stat().st_size == m.file_size
        entries = read_manifest(IO, str(path))
        assert sum(e.kind == FileKind.ADD for e in entries) == m.num_added_files
        assert sum(e.kind == FileKind.DELETE for e in entries) == m.num_deleted_files
        out.extend(entries)
    return out


def _check_snapshot(root: Path, s: Snapshot) -> int:
    base = _read_list(root, s.base_manifest_list, s.base_manifest_list_size)
    delta = _read_list(root, s.delta_manifest_list, s.delta_manifest_list_size)
    delta_entries = _read_entries(root, delta)
    live = live_files(_read_entries(root, base) + delta_entries)
    assert all(e.kind == FileKind.ADD for e in live)
    total = sum(e.file.row_count for e in live)
    assert total == s.total_record_count, f"snapshot {s.id}"
    signed = sum(e.file.row_count * (1 if e.kind == FileKind.ADD else -1) for e in delta_entries)
    assert signed == s.delta_record_count, f"snapshot {s.id}"
    if s.changelog_manifest_list is not None:
        changelog = _read_entries(root, _read_list(root, s.changelog_manifest_list, None))
        assert all(e.kind == FileKind.ADD for e in changelog)
        if s.changelog_record_count:
            assert sum(e.file.row_count for e in changelog) == s.changelog_record_count
    if s.index_manifest is not None:
        entries = read_index_manifest(IO, str(_manifest_dir(root, s.index_manifest) / s.index_manifest))
        assert all(e.kind == FileKind.ADD for e in entries)
    return len(live)


@pytest.mark.parametrize("root", ROOTS, ids=[fixture_id(r) for r in ROOTS])
def test_latest_snapshot_live_files_match_total_record_count(root: Path) -> None:
    """sum(row_count) over the folded base+delta manifests equals the latest snapshot's totalRecordCount."""
    sm = SnapshotManager(IO, str(root))
    latest = sm.latest()
    assert latest is not None
    _check_snapshot(root, latest)


@pytest.mark.parametrize("root", ROOTS, ids=[fixture_id(r) for r in ROOTS])
def test_every_snapshot_reconciles(root: Path) -> None:
    """Same reconciliation for every snapshot, plus deltaRecordCount = Σ ADD rows − Σ DELETE rows."""
    sm = SnapshotManager(IO, str(root))
    for sid in sm.snapshot_ids():
        _check_snapshot(root, sm.snapshot(sid))


def test_compaction_upgrades_show_up_as_delete_plus_add() -> None:
    """pk_09 has compaction upgrades: one file name deleted at level 0 and re-added at a higher level."""
    root = FIXTURES / "alibaba-paimon-cpp/test/test_data/parquet/pk_09.db/pk_09"
    if not root.exists():
        pytest.skip("pk_09 fixture absent")
    sm = SnapshotManager(IO, str(root))
    seen: dict[str, set[tuple[FileKind, int]]] = {}
    for sid in sm.snapshot_ids():
        s = sm.snapshot(sid)
        for e in _read_entries(root, _read_list(root, s.delta_manifest_list, None)):
            seen.setdefault(e.file.file_name, set()).add((e.kind, e.file.level))
    upgraded = [
        v
        for v in seen.values()
        if (FileKind.DELETE, 0) in v and any(k == FileKind.ADD and lvl > 0 for k, lvl in v)
    ]
    assert upgraded
