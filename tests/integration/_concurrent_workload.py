"""Worker processes committing upserts, deletes and compactions to one table, and the model of the result."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

import lsmlake
from lsmlake.errors import CommitConflictError, LsmlakeError

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("p", pa.int32(), nullable=False),
        ("w", pa.int32()),
        ("i", pa.int32()),
    ]
)
KEY_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False)])
PARTITIONS, KEYS_PER_PARTITION = 8, 8  # key k lives in partition k % 8; every process writes every key
TABLE = "db.t"
PRIMARY_KEY, PARTITION_KEYS = ["k", "p"], ["p"]
OPTIONS = {"bucket": "2"}
COMPACT_ATTEMPTS = 3  # a compaction that loses this many races in a row is counted as a conflict
MAX_ATTEMPTS = 400  # a write that loses this many races in a row is counted as failed


@dataclass(frozen=True)
class Job:
    """What one process does: ``commits`` writes; a compacting process compacts after every third, fully
    every other time."""

    uri: str
    options: dict[str, str]
    writer: int
    commits: int
    compacts: bool


@dataclass(frozen=True)
class Batch:
    """The rows of one write, all in one partition: upserts of ``upserts`` to value (w, i), deletes of
    ``deletes``."""

    upserts: list[int]
    deletes: list[int]


def batch(writer: int, i: int) -> Batch:
    """Write ``i`` of process ``writer``: deterministic, so the parent rebuilds it for the model."""
    rng = np.random.default_rng(writer * 100_003 + i)
    partition = int(rng.integers(PARTITIONS))
    keys = (partition + PARTITIONS * rng.choice(KEYS_PER_PARTITION, size=5, replace=False)).tolist()
    return Batch(sorted(keys[:3]), sorted(keys[3:]) if i % 3 == 2 else [])


@dataclass
class Outcome:
    """What one process was told. ``landed``: writes whose APPEND snapshot exists, by write index, with
    the snapshot ids of the commit; ``told_ok``: those whose commit returned normally (the others raised
    an error naming the APPEND in ``published_snapshot_ids``: what followed it failed)."""

    writer: int
    landed: dict[int, list[int]] = field(default_factory=dict)
    told_ok: set[int] = field(default_factory=set)
    failed: list[int] = field(default_factory=list)
    retries: int = 0
    compactions: list[int] = field(default_factory=list)
    compact_conflicts: int = 0


def _write_once(table: lsmlake.Table, data: Batch, writer: int, i: int) -> list[int]:
    """One attempt; returns the snapshot ids published (empty if nothing was), re-raising any error
    after an APPEND landed together with those ids."""
    w = table.writer()
    n = len(data.upserts)
    parts = [k % PARTITIONS for k in data.upserts]
    w.write(pa.table({"k": data.upserts, "p": parts, "w": [writer] * n, "i": [i] * n}, schema=SCHEMA))
    if data.deletes:
        w.delete(
            pa.table({"k": data.deletes, "p": [k % PARTITIONS for k in data.deletes]}, schema=KEY_SCHEMA)
        )
    try:
        w.commit()
    except LsmlakeError as e:
        if e.published_snapshot_ids:  # the APPEND is published; what followed it failed
            assert list(e.published_snapshot_ids) == w.snapshot_ids
            raise _Landed(w.snapshot_ids) from e
        assert not w.snapshot_ids  # nothing published: safe to retry
        raise
    return w.snapshot_ids


class _Landed(Exception):
    """A commit raised after publishing the snapshots ``ids``."""

    def __init__(self, ids: list[int]) -> None:
        super().__init__(ids)
        self.ids = ids


def run_job(job: Job) -> Outcome:
    """The body of one worker process."""
    table = lsmlake.Catalog(job.uri, options=job.options).open_table(TABLE)
    out = Outcome(job.writer)
    jitter = random.Random(job.writer)
    for i in range(job.commits):
        data = batch(job.writer, i)
        for _attempt in range(MAX_ATTEMPTS):
            try:
                out.landed[i] = _write_once(table, data, job.writer, i)
                out.told_ok.add(i)
                break
            except _Landed as e:
                out.landed[i] = e.ids
                break
            except CommitConflictError:
                out.retries += 1
                time.sleep(jitter.uniform(0, 0.02))
        else:
            out.failed.append(i)
        if job.compacts and i % 3 == 2:
            _compact(table, out, full=i % 6 == 2)
    return out


def _compact(table: lsmlake.Table, out: Outcome, *, full: bool) -> None:
    for _attempt in range(COMPACT_ATTEMPTS):
        try:
            sid = table.compact(full=full)
        except CommitConflictError:  # another compaction replaced some of the files first
            out.compact_conflicts += 1
            continue
        if sid is not None:
            out.compactions.append(sid)
        return


def model(outcomes: list[Outcome]) -> dict[int, tuple[int, int]]:
    """Last writer wins in snapshot order: replay every landed write by its APPEND snapshot id."""
    ordered = sorted((ids[0], o.writer, i) for o in outcomes for i, ids in o.landed.items())
    rows: dict[int, tuple[int, int]] = {}
    for _sid, writer, i in ordered:
        data = batch(writer, i)
        for k in data.upserts:
            rows[k] = (writer, i)
        for k in data.deletes:
            rows.pop(k, None)
    return rows


def as_rows(table: pa.Table) -> dict[int, tuple[int, int]]:
    cols = [table.column(c).to_pylist() for c in ("k", "w", "i")]
    return {k: (w, i) for k, w, i in zip(*cols, strict=True)}


# Shared buckets: every process writes keys of all 4 buckets of one unpartitioned deletion-vector table,
# one attempt per write (no caller-side retry); process 0 writes batches 20x larger than the others.
SHARED_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("w", pa.int32()), ("i", pa.int32())])
SHARED_OPTIONS = {"bucket": "4", "deletion-vectors.enabled": "true"}
SHARED_KEYS = 64


@dataclass(frozen=True)
class SharedJob:
    uri: str
    writer: int
    commits: int


@dataclass
class SharedOutcome:
    """``landed``: write index -> APPEND snapshot id; ``refused``: writes that raised with nothing published."""

    writer: int
    landed: dict[int, int] = field(default_factory=dict)
    refused: list[int] = field(default_factory=list)


def shared_keys(writer: int, i: int) -> list[int]:
    rng = np.random.default_rng(writer * 7_919 + i)
    size = 40 if writer == 0 else 2  # the large writer touches every bucket each time
    return sorted(rng.choice(SHARED_KEYS, size=size, replace=False).tolist())


def run_shared_job(job: SharedJob) -> SharedOutcome:
    """One process: ``commits`` single-attempt writes of its keys to value (writer, i)."""
    table = lsmlake.Catalog(job.uri).open_table(TABLE)
    out = SharedOutcome(job.writer)
    for i in range(job.commits):
        keys = shared_keys(job.writer, i)
        n = len(keys)
        w = table.writer()
        w.write(pa.table({"k": keys, "w": [job.writer] * n, "i": [i] * n}, schema=SHARED_SCHEMA))
        try:
            w.commit()
        except LsmlakeError as e:
            if not e.published_snapshot_ids:
                out.refused.append(i)
                continue
        out.landed[i] = w.snapshot_ids[0]
    return out


def shared_model(outcomes: list[SharedOutcome]) -> dict[int, tuple[int, int]]:
    """Last writer wins in APPEND snapshot order."""
    rows: dict[int, tuple[int, int]] = {}
    for _sid, writer, i in sorted((sid, o.writer, i) for o in outcomes for i, sid in o.landed.items()):
        for k in shared_keys(writer, i):
            rows[k] = (writer, i)
    return rows
