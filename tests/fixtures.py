"""Locate the read-only Java-written Paimon fixtures and copy pieces of them into a test's tmp dir."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES: Path = Path(
    os.environ.get("LSMLAKE_FIXTURES", Path(__file__).resolve().parents[2] / "shared" / "paimon-fixtures")
)
"""`<repo>/../shared/paimon-fixtures` (override with LSMLAKE_FIXTURES). Never write below it."""

GOLDEN_WAREHOUSE = (
    FIXTURES / "apache-paimon/paimon-python/pypaimon/tests/resources/pk_global_index_golden.extracted"
)
CPP_TEST_DATA = FIXTURES / "alibaba-paimon-cpp/test/test_data"


def require_fixtures() -> Path:
    """FIXTURES, or skip the calling test when the fixture tree is not present."""
    if not FIXTURES.is_dir():
        pytest.skip(f"Paimon fixtures not found at {FIXTURES}")
    return FIXTURES


def copy_fixture(relpath: str | os.PathLike[str], tmp_path: Path) -> Path:
    """Copy ``FIXTURES/relpath`` (file or directory) to ``tmp_path/<its name>``, writable; skip if absent."""
    src = require_fixtures() / relpath
    if not src.exists():
        pytest.skip(f"fixture {relpath} not found")
    dest = tmp_path / src.name
    if src.is_dir():
        shutil.copytree(src, dest, copy_function=shutil.copyfile)
    else:
        shutil.copyfile(src, dest)
    for path in [dest, *dest.rglob("*")] if dest.is_dir() else [dest]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | (stat.S_IXUSR if path.is_dir() else 0))
    return dest


def table_roots() -> list[Path]:
    """Every table (and branch) root in the fixtures: a directory holding `schema/` and `snapshot/`."""
    if not FIXTURES.is_dir():
        return []
    return sorted(
        p.parent for p in FIXTURES.rglob("snapshot") if p.is_dir() and (p.parent / "schema").is_dir()
    )


def _metadata_files(prefix_test: str) -> Iterator[Path]:
    if not FIXTURES.is_dir():
        return
    for p in sorted(FIXTURES.rglob("*")):
        if p.is_file() and p.parent.name == "manifest" and _kind(p) == prefix_test:
            yield p


def _kind(p: Path) -> str:
    name = p.name
    if name.startswith("index-manifest"):
        return "index"
    if name.startswith("manifest-list") or name.startswith("avro_manifest_list"):
        return "list"
    if name.startswith("manifest") or name.startswith("avro_manifest"):
        return "manifest"
    return "other"


def manifest_files() -> list[Path]:
    """Every data manifest (`manifest-*`, the standalone `avro_manifest_*` and `manifest`)."""
    return list(_metadata_files("manifest"))


def manifest_list_files() -> list[Path]:
    return list(_metadata_files("list"))


def index_manifest_files() -> list[Path]:
    return list(_metadata_files("index"))


def schema_files() -> list[Path]:
    return [p for root in table_roots() for p in sorted((root / "schema").glob("schema-*"))]


def snapshot_files() -> list[Path]:
    """Java-written `snapshot-<n>` files plus the hand-written paimon-rust snapshot JSON samples."""
    found = [p for root in table_roots() for p in sorted((root / "snapshot").glob("snapshot-*"))]
    rust = FIXTURES / "apache-paimon-rust/crates/paimon/tests/fixtures/snapshot"
    return found + (sorted(rust.glob("*.json")) if rust.is_dir() else [])


def fixture_id(p: Path) -> str:
    """A short readable pytest id for a fixture path."""
    rel = p.relative_to(FIXTURES).parts
    return "/".join(rel[-4:])
