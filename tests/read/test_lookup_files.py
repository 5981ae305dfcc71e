"""Local lookup files: deleted when the disk bound shrinks, when idle past the retention, and never the
files of another process."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core import caches
from lsmlake.read import lookup_files
from lsmlake.read.file_rows import LOOKUP_FILES
from lsmlake.read.lookup_files import LookupFiles


def _table(n: int) -> pa.Table:
    return pa.table({"x": pa.array(range(n), pa.int64())})


@pytest.fixture(autouse=True)
def _unregistered() -> Iterator[None]:
    before = set(caches._registry)
    yield
    for name in set(caches._registry) - before:
        caches._registry.pop(name).clear()


def _name() -> str:
    return f"test local files {uuid.uuid4()}"


def _paths(files: LookupFiles) -> list[str]:
    return [p for p, *_ in files._items.values()]


def test_a_smaller_bound_deletes_files_at_once() -> None:
    files = LookupFiles(_name(), 2**40)
    for key in ("a", "b", "c"):
        assert files.get_or_build(key, lambda: _table(1000)).num_rows == 1000
    paths = _paths(files)
    assert len(paths) == 3 and all(os.path.exists(p) for p in paths)
    files.resize(files.info().nbytes // 2)
    assert 0 < files.info().nbytes <= files.info().max_bytes
    assert [os.path.exists(p) for p in paths] == [False, False, True]  # least recently used first
    files.resize(1)  # even the newest no longer fits
    assert files.info().entries == 0 and not any(os.path.exists(p) for p in paths)


def test_files_idle_past_the_retention_are_deleted(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(lookup_files.time, "monotonic", lambda: clock[0])
    files = LookupFiles(_name(), 2**40, retention_ms=60_000)
    files.get_or_build("old", lambda: _table(10))
    clock[0] += 50
    files.get_or_build("new", lambda: _table(10))
    (old, new) = _paths(files)
    clock[0] += 30  # "old" idle 80 s, "new" 30 s
    files.get_or_build("new", lambda: _table(10))
    assert not os.path.exists(old) and os.path.exists(new)
    assert files.info().entries == 1
    clock[0] += 61
    files.resize(files.max_bytes, 60_000)
    assert not os.path.exists(new) and files.info().entries == 0


def test_a_forked_child_leaves_its_parents_files_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    files = LookupFiles(_name(), 2**40)
    files.get_or_build("a", lambda: _table(10))
    (parents,) = _paths(files)
    monkeypatch.setattr(lookup_files.os, "getpid", lambda: -1)  # now in a child process
    assert files.info().entries == 0  # the parent's entries are not the child's
    built = files.get_or_build("a", lambda: _table(20))
    assert built.num_rows == 20
    (childs,) = _paths(files)
    assert os.path.dirname(childs) != os.path.dirname(parents)  # never the name the parent may reuse
    files.clear()
    assert os.path.exists(parents) and not os.path.exists(childs)


def test_the_table_option_bounds_the_idle_time(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write({"id": list(range(60_000)), "v": list(range(60_000))})  # many row groups
    keys = list(range(0, 60_000, 13))
    LOOKUP_FILES.clear()
    assert t.lookup(keys).num_rows == len(keys)
    assert LOOKUP_FILES.info().entries == 1
    (path,) = _paths(LOOKUP_FILES)
    assert t.with_options({"lookup.cache-file-retention": "0 ms"}).lookup([1]).num_rows == 1
    assert LOOKUP_FILES.info().entries == 0 and not os.path.exists(path)
