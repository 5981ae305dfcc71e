"""Short runs of the campaigns of bench/campaign.py: several processes committing to the same buckets of
a deletion-vector table, and a writer SIGKILLed at random times and instrumented points. They assert the
invariants (nothing acknowledged lost, every committed row visible after the next commit, retained
snapshots, tags and branches readable, expired partitions whole or gone, orphan cleaning removes only
unreferenced files), not rates or timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.campaign import run_concurrency
from bench.crash_campaign import run_crash


def test_writers_on_the_same_buckets_lose_no_acknowledged_write(tmp_path: Path) -> None:
    result = run_concurrency(
        processes=3, buckets=2, seconds=3.0, commits=0, keys=16, rows=3, s3=False, work=tmp_path
    )
    print("\n".join(result.lines()))  # the measured rates, for the record (-s)
    assert not result.failures, result.failures
    assert result.acknowledged > 0 and result.attempted >= result.acknowledged
    assert all(s.acknowledged + s.failed == s.attempted for s in result.stats)


def test_writers_of_a_dynamic_bucket_table_lose_no_acknowledged_write(tmp_path: Path) -> None:
    """They place the same new keys concurrently: re-routed, each key stays in one bucket."""
    result = run_concurrency(
        processes=3, buckets=2, seconds=3.0, commits=0, keys=16, rows=3, s3=False, work=tmp_path, dynamic=True
    )
    print("\n".join(result.lines()))
    assert not result.failures, result.failures
    assert result.acknowledged > 0 and all(s.acknowledged + s.failed == s.attempted for s in result.stats)


def test_writers_on_the_same_buckets_of_an_s3_table_lose_no_acknowledged_write(tmp_path: Path) -> None:
    """The same on S3 (a moto server the campaign starts): conditional puts instead of hard links."""
    pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
    pytest.importorskip("boto3")
    result = run_concurrency(
        processes=3, buckets=2, seconds=3.0, commits=0, keys=16, rows=3, s3=True, work=tmp_path
    )
    print("\n".join(result.lines()))
    assert not result.failures, result.failures
    assert result.acknowledged > 0 and result.attempted >= result.acknowledged
    assert all(s.acknowledged + s.failed == s.attempted for s in result.stats)


def test_writers_committing_through_the_jdbc_lock_on_s3_lose_no_acknowledged_write(tmp_path: Path) -> None:
    """S3 with its conditional put switched off: every snapshot is published under a JDBC (SQLite)
    catalog's lock, the only thing keeping two writers from taking the same snapshot id."""
    pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
    pytest.importorskip("boto3")
    result = run_concurrency(
        processes=3,
        buckets=2,
        seconds=3.0,
        commits=0,
        keys=16,
        rows=3,
        s3=True,
        work=tmp_path,
        jdbc_lock=True,
    )
    print("\n".join(result.lines()))
    assert not result.failures, result.failures
    assert result.acknowledged > 0 and result.attempted >= result.acknowledged
    assert all(s.acknowledged + s.failed == s.attempted for s in result.stats)


def test_killed_writers_leave_a_consistent_table(tmp_path: Path) -> None:
    result = run_crash(kills=4, seed=5, work=tmp_path)
    print("\n".join(result.lines()))
    assert not result.failures, result.failures
    assert result.kills == 4 and result.checks > 4 * 5
    assert result.orphans_removed >= 0 and result.acknowledged > 0
    assert result.partitions.expired  # the partitioned table's old partitions were expired and checked
