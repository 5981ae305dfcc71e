"""Procedures on a table whose catalog keeps its snapshots (a REST catalog's environment): a rollback goes
to the catalog, never to the files alone (the Java REST server's version is in tests/java)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import TableSchema
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.sql import Session
from lsmlake.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@dataclass
class RecordingEnv:
    """A catalog environment that publishes commits to the files (as a server would) and records the
    rollbacks asked of it."""

    io: FileIO
    rollbacks: list[tuple[int | None, str | None, int]] = field(default_factory=list)

    def check_commit(self, root: str) -> None:
        pass

    def commit_snapshot(
        self, root: str, snapshot: Snapshot, delta: Sequence[ManifestEntry], base_uuid: str | None = None
    ) -> bool:
        return SnapshotManager(self.io, root).try_publish(snapshot)

    def latest_snapshot(self, root: str) -> tuple[bool, Snapshot | None]:
        return False, None  # the files say

    def create_branch(self, root: str, name: str, tag: str | None) -> None:
        raise AssertionError("not used")

    def drop_branch(self, root: str, name: str) -> None:
        raise AssertionError("not used")

    def rename_branch(self, root: str, name: str, target: str) -> None:
        raise AssertionError("not used")

    def fast_forward(self, root: str, name: str) -> None:
        raise AssertionError("not used")

    def rollback(self, root: str, *, snapshot_id: int | None, tag: str | None, from_snapshot: int) -> None:
        self.rollbacks.append((snapshot_id, tag, from_snapshot))

    def alter_table(self, root: str, changes: Sequence[Any]) -> TableSchema:
        raise AssertionError("not used")


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("CALL sys.rollback_to(`table` => 'db.t', snapshot_id => 1)", (1, None, 2)),
        ("CALL sys.rollback(`table` => 'db.t', version => 'one')", (None, "one", 2)),
    ],
)
def test_sql_rollback_of_a_catalog_kept_table_goes_to_the_catalog(
    tmp_path: Path, call: str, expected: tuple[int | None, str | None, int]
) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    plain = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    env = RecordingEnv(plain.io)
    table = Table("db.t", plain.io, plain.root, plain.schema, catalog_env=env)
    table.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    table.create_tag("one", 1)
    table.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    catalog.open_table = lambda identifier: table  # type: ignore[method-assign]
    (result,) = Session(catalog).execute(call)
    assert env.rollbacks == [expected]
    assert result.rows == [{"previous_snapshot_id": 2, "current_snapshot_id": 1}]
    # the catalog does the rollback: lsmlake did not remove snapshot 2 behind its back
    assert plain.snapshot_manager.snapshot_exists(2)
