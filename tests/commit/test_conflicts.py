"""Conflict detection, on file layouts without I/O."""

from __future__ import annotations

from layouts import INT, make_file

from lsmlake.commit.conflicts import detect_conflicts
from lsmlake.metadata.manifest import FileKind, ManifestEntry

P = b"\x00\x00\x00\x00" + bytes(8)


def entry(kind: FileKind, lo: int, hi: int, level: int, name: str, total: int = 2) -> ManifestEntry:
    return ManifestEntry(kind, P, 0, total, make_file(lo, hi, level=level, name=name))


def test_clean_compaction_passes() -> None:
    base = [entry(FileKind.ADD, 1, 5, 0, "a"), entry(FileKind.ADD, 1, 9, 5, "b")]
    delta = [entry(FileKind.DELETE, 1, 5, 0, "a"), entry(FileKind.ADD, 1, 5, 4, "c")]
    assert detect_conflicts(base, delta, [INT]) == []


def test_deleting_a_file_that_is_gone_conflicts() -> None:
    base = [entry(FileKind.ADD, 1, 9, 5, "b")]
    delta = [entry(FileKind.DELETE, 1, 5, 0, "a"), entry(FileKind.ADD, 1, 5, 4, "c")]
    (problem,) = detect_conflicts(base, delta, [INT])
    assert "file deletion conflicts" in problem and "a" in problem


def test_overlap_within_a_level_conflicts() -> None:
    base = [entry(FileKind.ADD, 1, 5, 4, "x")]
    delta = [entry(FileKind.ADD, 5, 9, 4, "y")]
    (problem,) = detect_conflicts(base, delta, [INT])
    assert "LSM conflicts" in problem
    assert detect_conflicts(base, [entry(FileKind.ADD, 6, 9, 4, "y")], [INT]) == []
    assert detect_conflicts(base, [entry(FileKind.ADD, 5, 9, 0, "y")], [INT]) == []  # level 0 may overlap


def test_bucket_count_change_conflicts() -> None:
    base = [entry(FileKind.ADD, 1, 5, 1, "x", total=2)]
    problems = detect_conflicts(base, [entry(FileKind.ADD, 7, 9, 1, "y", total=3)], [INT])
    assert any("total buckets" in p for p in problems)
