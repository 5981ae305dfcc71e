"""Shared fixtures: a fresh warehouse per test, and the Java fixtures helper on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import lsmlake


@pytest.fixture
def catalog(tmp_path: Path) -> lsmlake.Catalog:
    cat = lsmlake.Catalog(str(tmp_path / "warehouse"))
    cat.create_database("db")
    return cat
