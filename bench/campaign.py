"""Campaigns against a table shared by several writers (issue 21).

``python -m bench.campaign concurrency``: N processes commit upserts and deletes to the same buckets of
a deletion-vector table (compaction on) for T seconds or C commits; each fsyncs an acknowledgement line
after every acknowledged commit; at the end the table is checked against the model (every acknowledged
write present, each key's value the last one in snapshot order). ``--s3`` runs it on a moto S3 server;
``--jdbc-lock`` adds a JDBC (SQLite file) catalog over it with the conditional put switched off, so that
every snapshot is published under the JDBC lock.

``python -m bench.campaign crash``: SIGKILLs a writer at random times and at instrumented points and
checks the table after every kill (bench/crash_campaign.py).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import lsmlake
from bench.campaign_log import (
    TABLE,
    AckLog,
    Model,
    Write,
    ack_record,
    apply,
    differences,
    moto_server,
    table_model,
    write_of,
)
from bench.common import machine
from bench.crash_campaign import run_crash
from lsmlake.catalog import Catalog
from lsmlake.errors import CommitConflictError, LsmlakeError
from lsmlake.table import Table

MAX_ATTEMPTS = 60  # caller-side attempts of one write before it is counted as failed


@dataclass(frozen=True)
class Job:
    """What one worker process does."""

    uri: str
    options: dict[str, str]
    writer: int
    seconds: float
    commits: int
    keys: int
    rows: int
    log_dir: str


@dataclass
class WorkerStats:
    """What one worker was told."""

    writer: int
    attempted: int = 0
    acknowledged: int = 0
    first_try: int = 0
    retries: int = 0
    failed: int = 0
    partial: int = 0  # acknowledged by an error naming the published snapshots
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)  # why commits were refused, counted


def campaign_options(buckets: int, *, dynamic: bool = False, keys: int = 64) -> dict[str, str]:
    """The campaign table's options; ``dynamic``: dynamic bucket mode, sized to fill about ``buckets``
    buckets with the ``keys`` of the shared key space (writers race to place the same new keys)."""
    layout = {"bucket": str(buckets)}
    if dynamic:
        layout = {"bucket": "-1", "dynamic-bucket.target-row-num": str(max(keys // buckets, 1))}
    return {
        **layout,
        "deletion-vectors.enabled": "true",
        "snapshot.num-retained.min": "10",
        "snapshot.num-retained.max": "200",
    }


def jdbc_lock_options(work: Path) -> dict[str, str]:
    """A JDBC catalog in a SQLite file of ``work``, its lock on, over an S3 store whose conditional put is
    switched off: the lock is then the only thing that keeps two commits from taking one snapshot id."""
    return {
        "metastore": "jdbc",
        "uri": f"jdbc:sqlite:{work / 'catalog.sqlite'}",
        "lock.enabled": "true",
        "lock-check-max-sleep": "20 ms",
        "s3.create.conditional.enabled": "false",
    }


def make_write(writer: int, i: int, keys: int, rows: int) -> Write:
    """Write ``i`` of ``writer``: ``rows`` keys of the shared key space, every fifth also deletes one."""
    rng = random.Random(writer * 1_000_003 + i)
    picked = rng.sample(range(keys), min(rows + 1, keys))
    value = (writer << 32) | i
    return Write(
        {k: value for k in picked[:rows]}, (picked[rows],) if i % 5 == 4 and len(picked) > rows else ()
    )


def _commit(table: Table, write: Write, writer: int) -> tuple[int, ...]:
    w = table.writer()
    w.write(write.rows(writer))
    if write.deletes:
        w.delete(write.delete_rows())
    w.commit()
    assert w.result is not None
    return w.result.snapshot_ids


def refusal_reason(error: Exception) -> str:
    """The kind of a refusal: its message without table name, numbers and file names."""
    text = str(error).split(": ", 1)[-1]
    text = re.sub(r"\S+\.(parquet|orc|avro)\b|\d+(\.\d+)?", "#", text)
    return text[:90]


def run_worker(job: Job, ready: Event, go: Event) -> None:
    """The body of one worker process: writes for ``seconds`` after ``go`` or ``commits`` commits."""
    warnings.filterwarnings("ignore", category=UserWarning)  # lost compaction races: counted by the checks
    table = Catalog(job.uri, options=job.options).open_table(TABLE)
    log = AckLog(Path(job.log_dir) / f"acks-{job.writer}.jsonl")
    stats = WorkerStats(job.writer)
    jitter = random.Random(job.writer)
    ready.set()
    go.wait()
    deadline = time.time() + job.seconds if job.seconds else float("inf")
    i = 0
    while time.time() < deadline and i < job.commits:
        write = make_write(job.writer, i, job.keys, job.rows)
        stats.attempted += 1
        start = time.perf_counter()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                ids = _commit(table, write, job.writer)
            except CommitConflictError as e:  # nothing was published: retrying is safe
                stats.retries += 1
                reason = refusal_reason(e)
                stats.reasons[reason] = stats.reasons.get(reason, 0) + 1
                time.sleep(jitter.uniform(0, 0.05))
                continue
            except LsmlakeError as e:
                if not e.published_snapshot_ids:
                    stats.failed += 1
                    stats.errors.append(f"{type(e).__name__}: {e}"[:300])
                    break
                ids, stats.partial = e.published_snapshot_ids, stats.partial + 1
            log.append(ack_record(write, w=job.writer, i=i, ids=list(ids), attempts=attempt))
            stats.acknowledged += 1
            stats.first_try += attempt == 1
            stats.latencies.append(time.perf_counter() - start)
            break
        else:
            stats.failed += 1
            stats.errors.append(f"gave up after {MAX_ATTEMPTS} attempts")
        i += 1
    log.close()
    (Path(job.log_dir) / f"stats-{job.writer}.json").write_text(json.dumps(asdict(stats)))


@dataclass
class CampaignResult:
    """The figures a concurrency campaign prints, and what its checks found."""

    processes: int
    buckets: int
    wall_s: float
    stats: list[WorkerStats]
    failures: list[str]
    invisible_before_next_commit: int = 0

    @property
    def attempted(self) -> int:
        return sum(s.attempted for s in self.stats)

    @property
    def acknowledged(self) -> int:
        return sum(s.acknowledged for s in self.stats)

    def lines(self) -> list[str]:
        acks = [s.acknowledged for s in self.stats]
        first = sum(s.first_try for s in self.stats)
        lat = sorted(x for s in self.stats for x in s.latencies)
        p50 = statistics.median(lat) if lat else 0.0
        p99 = lat[int(len(lat) * 0.99)] if lat else 0.0
        return [
            f"machine: {machine()}",
            f"{self.processes} processes, {self.buckets} buckets, wall {self.wall_s:.1f} s",
            f"commits attempted {self.attempted}, acknowledged {self.acknowledged} "
            f"({_pct(self.acknowledged, self.attempted)}), without caller-side retry {first} "
            f"({_pct(first, self.attempted)}), caller-side retries {sum(s.retries for s in self.stats)}, "
            f"failed {sum(s.failed for s in self.stats)}, acknowledged by a partial-publish error "
            f"{sum(s.partial for s in self.stats)}",
            f"per-process acknowledgements: min {min(acks, default=0)}, max {max(acks, default=0)}",
            f"acknowledged commits/s {self.acknowledged / self.wall_s:.1f}; latency p50 {p50 * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.0f} ms",
            f"rows invisible to a batch read until the next commit: {self.invisible_before_next_commit} key(s)",
            f"checks: {'all passed' if not self.failures else f'{len(self.failures)} FAILED'}",
            *(f"FAILED: {f}" for f in self.failures),
            *(f"worker {s.writer}: {e}" for s in self.stats for e in s.errors[:2]),
            *(f"refused {n}x: {r}" for r, n in self._reasons()),
        ]

    def _reasons(self) -> list[tuple[str, int]]:
        counts: dict[str, int] = {}
        for s in self.stats:
            for r, n in s.reasons.items():
                counts[r] = counts.get(r, 0) + n
        return sorted(counts.items(), key=lambda x: -x[1])


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "n/a"


def check_against_model(table: Table, log_dir: Path, processes: int) -> tuple[list[str], int]:
    """Compare the table with the acknowledged writes in APPEND snapshot order: the failures, and how
    many keys a batch read showed wrong before the next commit healed them."""
    records = [r for w in range(processes) for r in AckLog.read(log_dir / f"acks-{w}.jsonl")]
    failures: list[str] = []
    appends = [r["ids"][0] for r in records]
    if len(set(appends)) != len(appends):
        failures.append("two acknowledged commits name the same APPEND snapshot")
    ordered = [write_of(r) for r in sorted(records, key=lambda r: r["ids"][0])]
    model: Model = apply({}, ordered)
    lsmlake.clear_caches()
    committed = table_model(table.with_options({"deletion-vectors.merge-on-read": "true"}).read())
    if committed != model:
        failures.append(
            f"committed rows differ from the acknowledged writes: {differences(committed, model)}"
        )
    rows = table.with_options({"deletion-vectors.merge-on-read": "true"}).read()
    if len(set(rows.column("k").to_pylist())) != rows.num_rows:
        failures.append("a key is live more than once (in two buckets)")
    visible = table_model(table.read())
    invisible = sum(1 for k in set(visible) | set(committed) if visible.get(k) != committed.get(k))
    if invisible:  # the next commit must heal it
        table.write(Write({-1: -1}).rows(-1))
        lsmlake.clear_caches()
        after = table_model(table.read())
        expected = {**committed, -1: -1}
        if after != expected:
            failures.append(f"rows still invisible after the next commit: {differences(after, expected)}")
    return failures, invisible


def run_concurrency(
    *,
    processes: int,
    buckets: int,
    seconds: float,
    commits: int,
    keys: int,
    rows: int,
    s3: bool,
    work: Path,
    dynamic: bool = False,
    jdbc_lock: bool = False,
) -> CampaignResult:
    """Run one concurrency campaign in ``work`` (a local warehouse, or a moto S3 one with ``s3``;
    ``dynamic``: a dynamic-bucket table, see ``campaign_options``; ``jdbc_lock``: every process commits
    through a JDBC catalog, see ``jdbc_lock_options``)."""
    if jdbc_lock and not s3:
        raise ValueError("jdbc_lock needs s3: the lock replaces the S3 conditional put")
    with ExitStack() as stack:
        options: dict[str, str] = {}
        uri = str(work / "warehouse")
        if s3:
            server = stack.enter_context(moto_server())
            # moto keeps its buckets per process, across servers: a fresh prefix for every campaign
            uri, options = server.warehouse(f"campaign-{uuid.uuid4().hex[:12]}"), server.options()
        if jdbc_lock:
            options = {**options, **jdbc_lock_options(work)}
        catalog = Catalog(uri, options=options)
        catalog.create_database("db", exist_ok=True)
        table = catalog.create_table(
            TABLE,
            schema=Write({}).rows(0).schema,
            primary_key=["k"],
            options=campaign_options(buckets, dynamic=dynamic, keys=keys),
        )
        log_dir = work / "acks"
        log_dir.mkdir(exist_ok=True)
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["lsmlake.catalog", "lsmlake.table", "bench.campaign_log"])
        per_process = max(commits // processes, 1) if commits else sys.maxsize
        jobs = [
            Job(uri, options, w, seconds, per_process, keys, rows, str(log_dir)) for w in range(processes)
        ]
        ready, go = [ctx.Event() for _ in jobs], ctx.Event()
        workers = [ctx.Process(target=run_worker, args=(j, r, go)) for j, r in zip(jobs, ready, strict=True)]
        for p in workers:
            p.start()
        for r in ready:  # every process has started and opened the table
            r.wait(300)
        start = time.time()
        go.set()
        for p in workers:
            p.join()
        wall = time.time() - start
        stats = [_stats(log_dir, w) for w in range(processes)]
        failures = [f"worker {w} exited with {p.exitcode}" for w, p in enumerate(workers) if p.exitcode]
        found, invisible = check_against_model(table, log_dir, processes)
        return CampaignResult(processes, buckets, wall, stats, failures + found, invisible)


def _stats(log_dir: Path, writer: int) -> WorkerStats:
    path = log_dir / f"stats-{writer}.json"
    if not path.exists():
        return WorkerStats(writer, errors=["no stats (the process died)"])
    data: dict[str, Any] = json.loads(path.read_text())
    return WorkerStats(**data)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.campaign", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="campaign", required=True)
    conc = sub.add_parser("concurrency", help="N writers on the same buckets, checked against a model")
    conc.add_argument("--processes", type=int, default=8)
    conc.add_argument("--buckets", type=int, default=4)
    conc.add_argument("--seconds", type=float, default=60.0, help="stop after this long (0: no limit)")
    conc.add_argument("--commits", type=int, default=0, help="stop after this many commits in all (0: none)")
    conc.add_argument("--keys", type=int, default=64, help="size of the key space all writers share")
    conc.add_argument("--rows", type=int, default=4, help="upserted rows per commit")
    conc.add_argument("--s3", action="store_true", help="on a moto S3 server instead of local disk")
    conc.add_argument(
        "--dynamic", action="store_true", help="a dynamic-bucket table of about --buckets buckets"
    )
    conc.add_argument(
        "--jdbc-lock",
        action="store_true",
        help="with --s3: commit through a JDBC (SQLite) catalog's lock, the conditional put switched off",
    )
    conc.add_argument("--keep", action="store_true", help="keep the work directory")
    crash = sub.add_parser("crash", help="SIGKILL writers and check the table after each kill")
    crash.add_argument("--kills", type=int, default=40)
    crash.add_argument("--seed", type=int, default=1)
    crash.add_argument("--keep", action="store_true")
    crash.add_argument("--stop-on-failure", action="store_true", help="stop at the first failed check")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix=f"lsmlake-{args.campaign}-"))
    try:
        if args.campaign == "crash":
            crash_result = run_crash(
                kills=args.kills,
                seed=args.seed,
                work=work,
                progress=True,
                stop_on_failure=args.stop_on_failure,
            )
            print("\n".join(crash_result.lines()))
            return 1 if crash_result.failures else 0
        if not args.seconds and not args.commits:
            parser.error("give --seconds or --commits")
        if args.jdbc_lock and not args.s3:
            parser.error("--jdbc-lock needs --s3 (the lock stands in for the S3 conditional put)")
        result = run_concurrency(
            processes=args.processes,
            buckets=args.buckets,
            seconds=args.seconds,
            commits=args.commits,
            keys=args.keys,
            rows=args.rows,
            s3=args.s3,
            work=work,
            dynamic=args.dynamic,
            jdbc_lock=args.jdbc_lock,
        )
        where = ("S3 (moto)" if args.s3 else "local disk") + (", dynamic bucket" if args.dynamic else "")
        where += ", JDBC lock, no conditional put" if args.jdbc_lock else ""
        print(where + ": " + "\n".join(result.lines()))
        return 1 if result.failures else 0
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
