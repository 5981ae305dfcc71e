"""commit.user-prefix: the snapshots a write or compaction publishes name '<prefix>_<uuid>' as their commit user,
as Paimon's CoreOptions.createCommitUser makes it (a bare UUID without the option)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa

import lsmlake

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _users(tmp_path: Path, options: dict[str, str]) -> list[str]:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", **options}
    )
    for i in range(2):
        table.write(pa.table({"id": pa.array([i], pa.int32()), "v": pa.array([i], pa.int64())}))
    table.compact(full=True)
    users: list[str] = catalog.get_table("db.t$snapshots").read().column("commit_user").to_pylist()
    return users


def test_the_prefix_starts_every_commit_user(tmp_path: Path) -> None:
    users = _users(tmp_path, {"commit.user-prefix": "etl-job"})
    assert len(users) >= 3
    for user in users:
        prefix, _, rest = user.partition("_")
        assert prefix == "etl-job"
        uuid.UUID(rest)


def test_without_it_the_commit_user_is_a_uuid(tmp_path: Path) -> None:
    for user in _users(tmp_path, {}):
        uuid.UUID(user)
