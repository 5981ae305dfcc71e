"""Many processes committing to one local table: every reported commit is in the table."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake

SCHEMA = pa.schema([("writer", pa.int32()), ("i", pa.int32())])
PROCESSES, COMMITS = 8, 25


def _commit_many(args: tuple[str, int]) -> list[int]:
    warehouse, writer = args
    table = lsmlake.Catalog(warehouse).open_table("db.t")
    ids = []
    for i in range(COMMITS):
        sid = table.write(pa.table({"writer": [writer], "i": [i]}, schema=SCHEMA))
        assert sid is not None
        ids.append(sid)
    return ids


@pytest.mark.slow
def test_no_commit_is_lost(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    cat = lsmlake.Catalog(warehouse)
    cat.create_database("db")
    cat.create_table(
        "db.t", schema=SCHEMA, options={"commit.max-retries": "1000", "commit.max-retry-wait": "50 ms"}
    )
    with mp.get_context("spawn").Pool(PROCESSES) as pool:
        reported = [
            sid for ids in pool.map(_commit_many, [(warehouse, w) for w in range(PROCESSES)]) for sid in ids
        ]
    table = cat.open_table("db.t")
    assert sorted(reported) == list(range(1, PROCESSES * COMMITS + 1))  # every id won exactly once
    rows = {(r["writer"], r["i"]) for r in table.read().to_pylist()}
    assert rows == {(w, i) for w in range(PROCESSES) for i in range(COMMITS)}
