"""rename_branch on an object store (a copy, then a delete) interrupted after every storage write: the main
table reads the same, the whole branch reads under one of the two names, a listed branch either reads its
content or fails loudly (never a silently different answer), and calling the rename again finishes it."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import lsmlake
from lsmlake.core.fileio import FileIO
from lsmlake.errors import AlreadyExistsError, LsmlakeError
from lsmlake.maintenance.branches import RENAME_MARKER, delete_branch, fast_forward, rename_branch
from lsmlake.schema_change import add_column
from lsmlake.table import Table


class Interrupted(Exception):
    """Stands for a kill: the rename stops right after its ``limit``-th storage write or delete."""


class ObjectStoreIO(FileIO):
    """Local disk driven as an object store (``local`` False: no directory rename), interrupted after
    ``limit`` mutations."""

    def __init__(self, limit: int) -> None:
        super().__init__(pafs.LocalFileSystem(), local=False)
        self.limit, self.done = limit, 0

    def _step(self) -> None:
        self.done += 1
        if self.done == self.limit:
            raise Interrupted

    def write_bytes(self, path: str, data: bytes) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)  # an object store needs no directories
        super().write_bytes(path, data)
        self._step()

    def delete_file(self, path: str) -> None:
        super().delete_file(path)
        self._step()

    def delete_dir(self, path: str) -> None:
        super().delete_dir(path)
        self._step()


def _rows(t: Table) -> list[dict[str, object]]:
    return t.read().sort_by("id").to_pylist()


def _setup(tmp_path: Path) -> tuple[lsmlake.Catalog, Table, list[dict[str, object]], list[dict[str, object]]]:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.create_tag("t1")
    branch = t.create_branch("dev", tag="t1")
    branch.write(pa.table({"id": [3], "v": ["c"]}))
    branch = branch.alter(add_column("w", "INT"))  # a second schema: old files need the first
    branch.write(pa.table({"id": [4], "v": ["d"], "w": pa.array([4], pa.int32())}))
    branch.create_tag("bt")
    return catalog, t, _rows(t), _rows(branch)


def _steps(tmp_path: Path) -> int:
    _, t, _, _ = _setup(tmp_path / "count")
    io = ObjectStoreIO(limit=0)
    rename_branch(dataclasses.replace(t, io=io), "dev", "feature")
    return io.done


def test_an_object_store_rename_interrupted_anywhere_is_safe_and_resumable(tmp_path: Path) -> None:
    steps = _steps(tmp_path)
    assert steps > 8  # the marker, every file copied, every file deleted
    for limit in range(1, steps + 1):
        catalog, t, main_rows, branch_rows = _setup(tmp_path / f"k{limit}")
        io = ObjectStoreIO(limit)
        with contextlib.suppress(Interrupted):
            rename_branch(dataclasses.replace(t, io=io), "dev", "feature")
        lsmlake.clear_caches()
        assert _rows(t) == main_rows, limit
        whole = []
        for name in t.list_branches():
            try:
                got = _rows(catalog.get_table(f"db.t$branch_{name}"))  # type: ignore[arg-type]
            except Exception:
                continue  # a loud failure: the half-copied or half-deleted name
            assert got == branch_rows, (limit, name)  # never a different answer
            whole.append(name)
        assert whole, f"interrupted at step {limit}: no name holds the whole branch"
        if "dev" in t.list_branches() and "feature" in t.list_branches():
            with pytest.raises(AlreadyExistsError):  # the marker resumes only the rename it names
                rename_branch(dataclasses.replace(t, io=ObjectStoreIO(0)), "feature", "dev")
        if limit < steps:  # the rerun finishes (at the last step the rename had just completed)
            rename_branch(dataclasses.replace(t, io=ObjectStoreIO(0)), "dev", "feature")
        lsmlake.clear_caches()
        assert t.list_branches() == ["feature"], limit
        feature = t.branch("feature")
        assert _rows(feature) == branch_rows
        assert not Path(feature.root, RENAME_MARKER).exists()
        assert [x.name for x in feature.list_tags()] == ["bt", "t1"]


@pytest.mark.parametrize("phase", ["copying", "deleting"])
def test_an_unfinished_rename_blocks_other_changes_to_both_names(tmp_path: Path, phase: str) -> None:
    """While a rename is unfinished, deleting, renaming or fast-forwarding main to either name (which
    would leave the other half for good, carry the marker along, or give main half a branch) is refused
    with the call that finishes it; that call works, and main reads as before throughout."""
    steps = _steps(tmp_path)
    catalog, t, main_rows, branch_rows = _setup(tmp_path / "t")
    io = ObjectStoreIO(3 if phase == "copying" else steps - 3)
    with contextlib.suppress(Interrupted):
        rename_branch(dataclasses.replace(t, io=io), "dev", "feature")
    store = dataclasses.replace(t, io=ObjectStoreIO(0))
    assert Path(t.root, "branch", "branch-feature", RENAME_MARKER).exists()
    for call in (
        lambda: delete_branch(store, "dev"),
        lambda: delete_branch(store, "feature"),
        lambda: rename_branch(store, "dev", "other"),
        lambda: rename_branch(store, "feature", "other"),
        lambda: fast_forward(store, "dev"),  # main would take half a branch
        lambda: fast_forward(store, "feature"),
    ):
        with pytest.raises(LsmlakeError, match=r"rename_branch\('dev', 'feature'\)"):
            call()
    assert _rows(t) == main_rows
    rename_branch(store, "dev", "feature")
    lsmlake.clear_caches()
    assert t.list_branches() == ["feature"]
    assert _rows(catalog.get_table("db.t$branch_feature")) == branch_rows  # type: ignore[arg-type]
    delete_branch(store, "feature")
    assert t.list_branches() == []
