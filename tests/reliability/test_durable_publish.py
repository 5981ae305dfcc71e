"""Durable publish on local disk: a failed fsync or write of any file a snapshot references (or of its
directory) leaves that snapshot unpublished, with an error naming the file."""

from __future__ import annotations

import errno
import os
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pyarrow as pa
import pytest

import lsmlake
import lsmlake.schema_change as sc
from lsmlake.core import fileio
from lsmlake.errors import DurabilityError

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "input"}

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="maps an fsync'd descriptor to its file via /proc"
)

# kinds of file written by `the_commit`: the write's files (deletion vectors included: the write keeps
# them up to date), then its APPEND snapshot's manifests, then its compaction's COMPACT snapshot
APPEND_KINDS = ["data", "changelog", "index", "manifest", "manifest-list", "snapshot"]
COMPACT_KINDS = ["index-manifest"]
# directories fsynced after a file is created in them; "t dir" is the table directory, fsynced when the
# write creates the table's first `index` directory in it
APPEND_DIRS = ["bucket dir", "index dir", "manifest dir", "t dir"]


def kind(path: str) -> str:
    """What a file or directory of a table is, from its path (temp files count as their target)."""
    name = public_name(os.path.basename(path))
    if os.path.isdir(path):
        return "bucket dir" if name.startswith("bucket-") else f"{name} dir"
    for prefix in ("manifest-list", "index-manifest", "manifest", "index", "data", "changelog", "snapshot"):
        if name.startswith(prefix + "-"):
            return prefix
    return "schema" if name.startswith("schema-") else "other"


def public_name(name: str) -> str:
    """``.snapshot-3.<uuid>.tmp`` -> ``snapshot-3``: the name an error reports for a temp file."""
    return re.sub(r"^\.(.*)\.[0-9a-f-]{36}\.tmp$", r"\1", name)


def base_table(root: Path) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=OPTIONS)
    t.write(pa.table({"k": list(range(50)), "v": ["a"] * 50}, schema=SCHEMA))
    return t


def the_commit(t: lsmlake.Table) -> None:
    t.write(pa.table({"k": [1, 2, 60], "v": ["b", "b", "b"]}, schema=SCHEMA))


def _claim(failed: list[str], lock: threading.Lock, path: str, target: str) -> bool:
    """Whether ``path`` is the one file to fail: the first of kind ``target``, claimed under ``lock``
    (buckets are flushed on several threads, so two files of a kind can race for it)."""
    if failed or kind(path) != target:
        return False
    with lock:
        if failed:
            return False
        failed.append(path)
        return True


def fail_fsync_of(monkeypatch: pytest.MonkeyPatch, target: str) -> list[str]:
    """os.fsync raises EIO for the first file or directory of kind ``target``; the paths it failed."""
    real, lock = os.fsync, threading.Lock()
    failed: list[str] = []

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if _claim(failed, lock, path, target):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return failed


class HalfWrite:
    """A file whose write stores half the bytes, then fails as a full disk does."""

    def __init__(self, f: IO[Any]) -> None:
        self.f = f

    def __enter__(self) -> HalfWrite:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.f.close()

    def write(self, data: bytes) -> int:
        self.f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.f, name)


def fail_write_of(monkeypatch: pytest.MonkeyPatch, target: str) -> list[str]:
    """The first write of a file of kind ``target`` through FileIO fails (ENOSPC); the paths it failed."""
    failed: list[str] = []
    lock = threading.Lock()
    real_open: Callable[..., IO[Any]] = open
    real_osfile = pa.OSFile

    def faulty_open(path: str, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        f = real_open(path, mode, *args, **kwargs)
        if "w" in mode and _claim(failed, lock, path, target):
            return HalfWrite(f)
        return f

    def faulty_osfile(path: str, mode: str = "r") -> Any:
        if "w" in mode and _claim(failed, lock, path, target):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_osfile(path, mode)

    monkeypatch.setattr(fileio, "open", faulty_open, raising=False)
    monkeypatch.setattr(pa, "OSFile", faulty_osfile)
    return failed


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("durable") / "template"
    base_table(root)
    return root


def fresh(template: Path, tmp_path: Path) -> lsmlake.Table:
    root = tmp_path / "wh"
    shutil.copytree(template, root)
    return lsmlake.Catalog(str(root)).open_table("db.t")


def reopen(t: lsmlake.Table) -> lsmlake.Table:
    return lsmlake.Catalog(os.path.dirname(os.path.dirname(t.root))).open_table("db.t")


def fail_the_commit(
    t: lsmlake.Table, monkeypatch: pytest.MonkeyPatch, inject: Callable[[], list[str]], target: str
) -> None:
    """Run ``the_commit`` with the failure ``inject`` arms, and check what it left."""
    before = t.latest_snapshot()
    rows = t.read().sort_by("k")
    failed = inject()
    with pytest.raises(DurabilityError) as info:
        the_commit(t)
    monkeypatch.undo()
    assert failed, f"no {target} was written"
    err = info.value
    assert public_name(os.path.basename(failed[0])) in str(err), err
    now = reopen(t)
    latest = now.latest_snapshot()
    assert latest is not None and before is not None
    if target in APPEND_KINDS + APPEND_DIRS:  # the APPEND needed it: no new snapshot at all
        assert latest.id == before.id
        assert now.read().sort_by("k").equals(rows)
    else:  # only the COMPACT needed it: the APPEND stands, the COMPACT is not published
        assert latest.id == before.id + 1 and latest.commit_kind == "APPEND"
    # the table recovers: the next commit lands, and orphan cleaning keeps every live row
    the_commit(now)
    after = {r["k"]: r["v"] for r in now.read().to_pylist()}
    assert len(after) == 51 and after[1] == after[60] == "b"
    now.remove_orphan_files(older_than_ms=2**62)
    assert {r["k"]: r["v"] for r in reopen(now).read().to_pylist()} == after


@pytest.mark.parametrize("target", APPEND_KINDS + COMPACT_KINDS + APPEND_DIRS)
def test_failed_fsync_leaves_the_snapshot_unpublished(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    fail_the_commit(
        fresh(template, tmp_path), monkeypatch, lambda: fail_fsync_of(monkeypatch, target), target
    )


@pytest.mark.parametrize("target", APPEND_KINDS + COMPACT_KINDS)
def test_failed_write_leaves_the_snapshot_unpublished(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    fail_the_commit(
        fresh(template, tmp_path), monkeypatch, lambda: fail_write_of(monkeypatch, target), target
    )


def test_failed_fsync_of_the_schema_file_keeps_the_old_schema(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = fresh(template, tmp_path)
    failed = fail_fsync_of(monkeypatch, "schema")
    with pytest.raises(DurabilityError, match="schema-1"):
        t.alter(sc.add_column("n", pa.int64()))
    monkeypatch.undo()
    assert failed and reopen(t).latest_schema().id == 0
    assert reopen(t).alter(sc.add_column("n", pa.int64())).schema.id == 1


def test_a_failed_fsync_of_the_snapshot_directory_after_the_link_warns(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot is visible once linked, so its commit stands (failing it would discard the files
    it references); the lost guarantee is reported."""
    t = fresh(template, tmp_path)
    before = t.latest_snapshot()
    failed = fail_fsync_of(monkeypatch, "snapshot dir")
    with pytest.warns(UserWarning, match="may not survive a power loss"):
        the_commit(t)
    monkeypatch.undo()
    latest = reopen(t).latest_snapshot()
    assert failed and before is not None and latest is not None and latest.id > before.id
    assert {r["k"]: r["v"] for r in reopen(t).read().to_pylist()}[60] == "b"


def test_every_referenced_file_and_its_directory_is_fsynced_before_the_snapshot(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each snapshot file is fsynced after every file it references and their directories, and its
    own directory right after it is linked."""
    t = fresh(template, tmp_path)
    real, order = os.fsync, []

    def fsync(fd: int) -> None:
        order.append(kind(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    the_commit(t)
    first_snapshot = order.index("snapshot")
    before = set(order[:first_snapshot])
    assert set(APPEND_KINDS[:-1] + APPEND_DIRS) <= before, order
    assert order[first_snapshot + 1] == "snapshot dir", order
    second_snapshot = order.index("snapshot", first_snapshot + 1)
    assert set(COMPACT_KINDS) <= set(order[first_snapshot:second_snapshot]), order
    assert order[second_snapshot:] == ["snapshot", "snapshot dir"], order
