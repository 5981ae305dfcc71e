"""lsmlake (this process) and Java Paimon (its JVM, driven from a thread) commit to one table at the same time:
first on different buckets, then on the same ones. Each side keeps what was acknowledged; nothing of it is lost
and both sides read the same final rows, equal to the model built from the acknowledged commits.

A refused lsmlake write (CommitConflictError: nothing published) is retried; a PartiallyPublishedError
means its APPEND landed, so it counts as acknowledged. Java writes with `write-only` = true: Paimon 1.4.2's
FileStoreCommitImpl retries an APPEND that lost the race for the next snapshot id (commit.max-retries) and
checks no conflicts for it, so a Java write is acknowledged or raised with nothing published; a Java
compaction that conflicts with lsmlake's raises ("conflicts detected", ConflictDetection) and is only
counted (a compaction loses no data).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaError, JavaPaimon, java_rows, sort_rows

import lsmlake
from lsmlake.core.bucket import bucket_ids
from lsmlake.errors import CommitConflictError, PartiallyPublishedError

pytestmark = [pytest.mark.java, pytest.mark.slow]

SCHEMA = pa.schema(
    [pa.field("id", pa.int32(), nullable=False), pa.field("side", pa.string()), pa.field("n", pa.int64())]
)
BUCKETS = 4
COMMITS = 10  # per side and phase
ATTEMPTS = 30


@dataclass
class Side:
    """One writer's acknowledged commits, in order, and how often it was refused."""

    name: str
    acked: list[tuple[str, list[int], int]] = field(default_factory=list)  # (+I or -D, ids, commit number)
    refused: int = 0
    compactions_refused: int = 0
    errors: list[BaseException] = field(default_factory=list)


def _keys_by_bucket(table: lsmlake.Table, n: int) -> dict[int, list[int]]:
    ids = pa.array(range(n), pa.int32())
    buckets = bucket_ids([ids], [table.schema.field("id").type], BUCKETS)
    out: dict[int, list[int]] = {b: [] for b in range(BUCKETS)}
    for i, b in enumerate(buckets.tolist()):
        out[int(b)].append(i)
    return out


def _plan(keys: list[int], commit: int) -> tuple[str, list[int]]:
    """Commit ``commit`` of a side: upserts of a window of its keys; every fourth one deletes two of them."""
    if commit % 4 == 3:
        return "-D", [keys[(commit * 3) % len(keys)], keys[(commit * 3 + 1) % len(keys)]]
    start = (commit * 5) % len(keys)
    return "+I", [keys[(start + j) % len(keys)] for j in range(6)]


def _with_retries(side: Side, attempt: Callable[[], None], refused: tuple[type[BaseException], ...]) -> bool:
    for _ in range(ATTEMPTS):
        try:
            attempt()
            return True
        except refused:
            side.refused += 1
    return False


def _lsmlake_side(catalog: lsmlake.Catalog, keys: list[int], side: Side, phase: int) -> None:
    for c in range(COMMITS):
        kind, ids = _plan(keys, c)
        number = phase * 100 + c

        def attempt(kind: str = kind, ids: list[int] = ids, number: int = number) -> None:
            table = catalog.open_table("db.t")
            try:
                if kind == "-D":
                    table.delete(pa.table({"id": pa.array(ids, pa.int32())}))
                else:
                    rows = [{"id": i, "side": "lsmlake", "n": number} for i in ids]
                    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
            except PartiallyPublishedError:
                pass  # the APPEND landed (a later step failed): committed
            side.acked.append((kind, ids, number))

        if not _with_retries(side, attempt, (CommitConflictError,)):
            raise AssertionError(f"lsmlake commit {number} refused {ATTEMPTS} times")
        if c % 5 == 4:
            _with_retries(side, lambda: _compact(catalog), (CommitConflictError,))


def _compact(catalog: lsmlake.Catalog) -> None:
    catalog.open_table("db.t").compact()


def _java_side(java: JavaPaimon, warehouse: str, keys: list[int], side: Side, phase: int) -> None:
    try:
        for c in range(COMMITS):
            kind, ids = _plan(keys, c)
            number = phase * 100 + c
            rows: list[dict[str, Any]] = [{"_kind": kind, "id": i, "side": "java", "n": number} for i in ids]

            def attempt(rows: list[dict[str, Any]] = rows) -> None:
                java.write(warehouse, "db.t", rows, options={"write-only": "true"})

            if not _with_retries(side, attempt, (JavaError,)):
                raise AssertionError(f"Java commit {number} failed {ATTEMPTS} times")
            side.acked.append((kind, ids, number))
            if c % 4 == 1:
                try:
                    java.compact(warehouse, "db.t", full=c % 8 == 1)
                except JavaError as e:
                    assert "conflict" in e.error.lower(), e.error
                    side.compactions_refused += 1
    except BaseException as e:  # handed to the main thread
        side.errors.append(e)


def _model(sides: list[Side], model: dict[int, dict[str, Any]]) -> None:
    for side in sides:  # the sides write disjoint keys: each side's own order is the whole story
        for kind, ids, number in side.acked:
            for i in ids:
                if kind == "-D":
                    model.pop(i, None)
                else:
                    model[i] = {"id": i, "side": side.name, "n": number}


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["plain", "dv"])
def test_both_sides_commit_at_once(options: dict[str, str], java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": str(BUCKETS), **options}
    )
    by_bucket = _keys_by_bucket(table, 200)
    model: dict[int, dict[str, Any]] = {}
    report = []
    phases = {
        # different buckets: lsmlake owns buckets 0 and 1, Java 2 and 3
        1: (by_bucket[0][:10] + by_bucket[1][:10], by_bucket[2][:10] + by_bucket[3][:10]),
        # the same buckets: every bucket, lsmlake its even keys, Java its odd ones
        2: tuple(
            [k for b in range(BUCKETS) for k in by_bucket[b][10:30] if k % 2 == parity] for parity in (0, 1)
        ),
    }
    for phase, (ours, theirs) in phases.items():
        lsm, java = Side("lsmlake"), Side("java")
        thread = threading.Thread(target=_java_side, args=(java_paimon, warehouse, theirs, java, phase))
        thread.start()
        try:
            _lsmlake_side(catalog, ours, lsm, phase)
        finally:
            thread.join(timeout=600)
        assert not java.errors, java.errors
        assert len(lsm.acked) == len(java.acked) == COMMITS
        _model([lsm, java], model)
        report.append((phase, lsm.refused, java.refused, java.compactions_refused))
        # Java's write-only level-0 files are visible only after a compaction when deletion vectors are on
        catalog.open_table("db.t").compact(full=True)
        expected = sort_rows(list(model.values()), ["id"])
        assert sort_rows(catalog.open_table("db.t").read().to_pylist(), ["id"]) == expected, f"phase {phase}"
        assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"]) == expected, f"phase {phase}"
    # Java compacts last; lsmlake reads Java's compaction of the whole history
    java_paimon.compact(warehouse, "db.t")
    expected = sort_rows(list(model.values()), ["id"])
    assert sort_rows(catalog.open_table("db.t").read().to_pylist(), ["id"]) == expected
    print("refusals per phase (phase, lsmlake writes, Java writes, Java compactions):", report)
