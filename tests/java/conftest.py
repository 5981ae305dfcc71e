"""Fixtures for the live Java Paimon tests: the harness jar built once, one JVM per test session (per xdist worker)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from java_harness import JavaPaimon, build_harness, tools_missing  # noqa: E402


@pytest.fixture(scope="session")
def java_paimon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaPaimon]:
    missing = tools_missing()
    if missing:
        pytest.skip(f"Java Paimon harness: {missing}")
    classpath = build_harness()
    client = JavaPaimon(classpath, tmp_path_factory.mktemp("java-harness") / "jvm.log")
    try:
        yield client
    finally:
        client.close()
