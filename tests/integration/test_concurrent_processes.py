"""Many processes committing to one table on local disk and on S3: every reported commit is in the table."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pyarrow as pa
import pytest
from _concurrent_workload import (
    OPTIONS,
    PARTITION_KEYS,
    PRIMARY_KEY,
    SCHEMA,
    SHARED_OPTIONS,
    SHARED_SCHEMA,
    TABLE,
    Job,
    SharedJob,
    SharedOutcome,
    as_rows,
    model,
    run_job,
    run_shared_job,
    shared_model,
)
from interop.pypaimon_env import pypaimon_read
from s3_server import S3Endpoint, Warehouse

import lsmlake

APPEND_SCHEMA = pa.schema([("writer", pa.int32()), ("i", pa.int32())])
PROCESSES, COMMITS = 8, 25


def _commit_many(args: tuple[str, int]) -> list[int]:
    warehouse, writer = args
    table = lsmlake.Catalog(warehouse).open_table("db.t")
    ids = []
    for i in range(COMMITS):
        sid = table.write(pa.table({"writer": [writer], "i": [i]}, schema=APPEND_SCHEMA))
        assert sid is not None
        ids.append(sid)
    return ids


@pytest.mark.slow
def test_no_commit_is_lost(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    cat = lsmlake.Catalog(warehouse)
    cat.create_database("db")
    cat.create_table(
        "db.t", schema=APPEND_SCHEMA, options={"commit.max-retries": "1000", "commit.max-retry-wait": "50 ms"}
    )
    with mp.get_context("spawn").Pool(PROCESSES) as pool:
        reported = [
            sid for ids in pool.map(_commit_many, [(warehouse, w) for w in range(PROCESSES)]) for sid in ids
        ]
    table = cat.open_table("db.t")
    assert sorted(reported) == list(range(1, PROCESSES * COMMITS + 1))  # every id won exactly once
    rows = {(r["writer"], r["i"]) for r in table.read().to_pylist()}
    assert rows == {(w, i) for w in range(PROCESSES) for i in range(COMMITS)}


def _pypaimon_rows(warehouse: Warehouse, request: pytest.FixtureRequest) -> pa.Table:
    if warehouse.backend == "s3":  # pypaimon 2.1.0 reads s3:// itself (pyarrow's S3FileSystem)
        endpoint: S3Endpoint = request.getfixturevalue("s3_endpoint")
        return pypaimon_read(warehouse.uri, TABLE, catalog_options=endpoint.pypaimon_options)
    return pypaimon_read(warehouse.uri, TABLE)


# processes x commits: a small run by default (moto's S3 server is slow, so smaller there), the full one in CI
SIZES = {"small": {"local": (4, 6), "s3": (3, 5)}, "full": {"local": (8, 25), "s3": (8, 25)}}


@pytest.mark.interop
@pytest.mark.parametrize("size", ["small", pytest.param("full", marks=pytest.mark.slow)])
def test_processes_upsert_and_compact_overlapping_keys(
    warehouse: Warehouse, size: str, request: pytest.FixtureRequest
) -> None:
    processes, commits = SIZES[size][warehouse.backend]
    cat = warehouse.catalog()
    cat.create_database("db")
    cat.create_table(
        TABLE, schema=SCHEMA, primary_key=PRIMARY_KEY, partition_keys=PARTITION_KEYS, options=OPTIONS
    )
    jobs = [Job(warehouse.uri, warehouse.options, w, commits, compacts=w % 2 == 0) for w in range(processes)]
    with mp.get_context("spawn").Pool(processes) as pool:
        outcomes = pool.map(run_job, jobs)

    table = cat.open_table(TABLE)
    history = table.snapshot_manager.snapshot_ids()
    assert history == list(range(1, len(history) + 1))  # contiguous, nothing expired
    recorded = [sid for o in outcomes for ids in o.landed.values() for sid in ids]
    recorded += [sid for o in outcomes for sid in o.compactions]
    assert sorted(recorded) == history  # every snapshot is one a process was told about, exactly once
    for o in outcomes:
        assert o.told_ok <= set(o.landed)
        assert sorted([*o.landed, *o.failed]) == list(range(commits))
        for ids in o.landed.values():
            snaps = [table.snapshot(sid) for sid in ids]
            assert [s.commit_kind for s in snaps] == ["APPEND"] + ["COMPACT"] * (len(ids) - 1)
            assert len({s.commit_user for s in snaps}) == 1  # one commit of one writer
        assert all(table.snapshot(sid).commit_kind == "COMPACT" for sid in o.compactions)
    assert any(o.compactions for o in outcomes), "no compaction ran"

    expected = model(outcomes)
    assert as_rows(table.read()) == expected
    assert as_rows(_pypaimon_rows(warehouse, request)) == expected


def _shared_table(warehouse: str) -> lsmlake.Table:
    cat = lsmlake.Catalog(warehouse)
    cat.create_database("db")
    return cat.create_table(TABLE, schema=SHARED_SCHEMA, primary_key=["k"], options=SHARED_OPTIONS)


def run_shared(warehouse: str, processes: int, commits: int) -> list[SharedOutcome]:
    _shared_table(warehouse)
    jobs = [SharedJob(warehouse, w, commits) for w in range(processes)]
    with mp.get_context("spawn").Pool(processes) as pool:
        return pool.map(run_shared_job, jobs)


@pytest.mark.parametrize(
    ("processes", "commits"), [(4, 3), pytest.param(8, 15, marks=pytest.mark.slow, id="8x15")]
)
def test_writers_of_the_same_buckets_are_rebased_not_refused(
    tmp_path: Path, processes: int, commits: int
) -> None:
    """Processes on the same 4 buckets of a deletion-vector table, compaction on, one attempt per write
    (the issue's size, 8 processes, is the slow case; bench/campaign.py runs it for longer)."""
    warehouse = str(tmp_path / "wh")
    outcomes = run_shared(warehouse, processes, commits)
    attempted = sum(len(o.landed) + len(o.refused) for o in outcomes)
    acked = [len(o.landed) for o in outcomes]
    # the target is 99%; a short run on a loaded machine has few attempts, so 90% is asserted
    assert sum(acked) >= 0.9 * attempted, [o.refused for o in outcomes]
    assert min(acked) * 2 >= max(acked)  # the large writer (process 0) is not starved
    table = lsmlake.Catalog(warehouse).open_table(TABLE)
    got = {r["k"]: (r["w"], r["i"]) for r in table.read().to_pylist()}
    assert got == shared_model(outcomes)  # every acknowledged write, in published order
