"""The crash campaign: a writer (writes, tags, tag expiry, branch creation, renaming and deletion,
compactions, expiry, partition expiry on a second table, orphan cleaning) is SIGKILLed at a random time or at an
instrumented point, and the table is checked after every kill: no acknowledged commit lost, no committed
row invisible after the next acknowledged commit, every retained snapshot, tag and branch readable (and
equal to the model where an acknowledgement names it), and ``remove_orphan_files`` runs and removes only
files nothing references; the partitioned table's checks are in bench/crash_partitions.py."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import random
import signal
import time
import traceback
from dataclasses import dataclass, field
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
    table_model,
    write_of,
)
from bench.common import machine
from bench.crash_partitions import (
    PTABLE,
    PartitionFigures,
    PartitionHistory,
    check_partitions,
    create_ptable,
    write_partitions,
)
from lsmlake.catalog import Catalog
from lsmlake.core.fileio import FileIO, OutputFile
from lsmlake.table import Table

KEYS = 24
OPS_PER_CHILD = 30
# Instrumented points: where the child kills itself at its n-th hit. ``random`` is a kill by the parent.
POINTS = ("data", "manifest", "index", "snapshot", "append", "overwrite", "hint", "delete", "random")
OPTIONS = {
    "bucket": "2",
    "deletion-vectors.enabled": "true",
    "changelog-producer": "lookup",
    "snapshot.num-retained.min": "3",
    "snapshot.num-retained.max": "5",
}


class KillingIO(FileIO):
    """The table's FileIO, SIGKILLing this process right after the ``hit``-th event at ``point``."""

    def __init__(self, inner: FileIO, point: str, hit: int) -> None:
        self.__dict__.update(inner.__dict__)
        self.point, self.hit, self.hits = point, hit, 0

    def reached(self, point: str) -> None:
        if point == self.point:
            self.hits += 1
            if self.hits == self.hit:
                os.kill(os.getpid(), signal.SIGKILL)

    def create_output(self, path: str) -> OutputFile:  # data and changelog files
        out = super().create_output(path)
        close = out.close

        def closed() -> None:
            close()
            self.reached("data")

        out.close = closed  # type: ignore[method-assign]
        return out

    def write_bytes(self, path: str, data: bytes) -> None:
        super().write_bytes(path, data)
        self.reached("index" if "/index/" in path else "manifest" if "/manifest/" in path else "other")

    def write_if_absent(self, path: str, data: bytes) -> bool:
        linked = super().write_if_absent(path, data)
        if linked and "/snapshot/snapshot-" in path:
            self.reached("snapshot")
            if b'"APPEND"' in data:
                self.reached("append")  # between the APPEND and the COMPACT snapshot
            if b'"OVERWRITE"' in data:
                self.reached("overwrite")  # partition expiry's snapshot
        return linked

    def overwrite_hint(self, path: str, text: str) -> None:
        super().overwrite_hint(path, text)
        self.reached("hint")

    def delete_file(self, path: str) -> None:  # expiry, tag deletion, orphan cleaning, cleanup
        super().delete_file(path)
        self.reached("delete")


def crash_write(seed: int, g: int) -> Write:
    """Global write ``g``: three keys set to ``g + 1``, every fourth also deletes one."""
    rng = random.Random(seed * 7_919 + g)
    keys = rng.sample(range(KEYS), 4)
    return Write({k: g + 1 for k in keys[:3]}, (keys[3],) if g % 4 == 3 else ())


@dataclass(frozen=True)
class ChildJob:
    uri: str
    seed: int
    first_write: int
    point: str
    hit: int
    log: str


def run_child(job: ChildJob, ready: Event) -> None:
    """Writes, tags, compactions and orphan cleaning until killed (or OPS_PER_CHILD ops)."""
    try:
        table = Catalog(job.uri).open_table(TABLE)
        io = KillingIO(table.io, job.point, job.hit)
        table = dataclasses.replace(table, io=io)
        ptable = dataclasses.replace(Catalog(job.uri).open_table(PTABLE), io=io)
        log = AckLog(Path(job.log))
        ready.set()
        g = job.first_write
        for op in range(OPS_PER_CHILD):
            write = crash_write(job.seed, g)
            w = table.writer()
            w.write(write.rows(0))
            if write.deletes:
                w.delete(write.delete_rows())
            w.commit()
            assert w.result is not None
            log.append(ack_record(write, g=g, ids=list(w.result.snapshot_ids)))
            if op % 2 == 0:  # the partitioned table; its old partition expires after the commit
                log.append(ack_record(write, p=g, ids=write_partitions(ptable, write, g)))
            if op % 4 == 1:
                # every other tag lives 1 ms and goes in the tag expiry below; branches come from the others
                short = op % 8 == 5
                table.create_tag(f"g{g:06d}", time_retained_ms=1 if short else None)
                log.append({"tag": f"g{g:06d}", "g": g})
                if short:
                    time.sleep(0.002)
                    table.expire_tags()
                else:
                    table.create_branch(f"b{g:06d}", tag=f"g{g:06d}")
                    log.append({"branch": f"b{g:06d}", "g": g})
                    if op % 8 == 1:  # every other branch is renamed (the new name sorts next to the old)
                        table.rename_branch(f"b{g:06d}", f"b{g:06d}r")
                        log.append({"branch": f"b{g:06d}r", "g": g})
                    for old in table.list_branches()[:-1]:
                        table.delete_branch(old)
                for old in [t.name for t in table.list_tags()][:-2]:
                    table.delete_tag(old)
            if op % 6 == 5:
                table.compact(full=True)
            if op % 10 == 9:
                table.remove_orphan_files(older_than_ms=int(time.time() * 1000))
            g += 1
    except BaseException:
        Path(job.log + ".error").write_text(traceback.format_exc())
        raise


@dataclass
class CrashResult:
    kills: int = 0
    kills_by_point: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    acknowledged: int = 0
    landed_unacknowledged: int = 0
    invisible_after_kill: int = 0
    orphans_removed: int = 0
    partitions: PartitionFigures = field(default_factory=PartitionFigures)
    checks: int = 0
    failures: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def lines(self) -> list[str]:
        points = ", ".join(f"{p} {n}" for p, n in sorted(self.kills_by_point.items()))
        return [
            f"machine: {machine()}",
            f"rounds {self.rounds}, SIGKILLs {self.kills} ({points}), wall {self.wall_s:.1f} s",
            f"acknowledged commits {self.acknowledged}; commits that landed unacknowledged (killed after "
            f"the APPEND) {self.landed_unacknowledged}; kills that left committed rows invisible until the "
            f"next commit {self.invisible_after_kill}; orphan files removed {self.orphans_removed}",
            f"partitioned table: old partitions expired {len(self.partitions.expired)}, found whole after a "
            f"kill before their expiry {len(self.partitions.kept_whole)}, orphan files removed "
            f"{self.partitions.orphans_removed}",
            f"checks {self.checks}, failures {len(self.failures)}",
            *(f"FAILED: {f}" for f in self.failures[:20]),
        ]


@dataclass
class _History:
    """Every write that landed, in order (global index, Write), and the acknowledged tags."""

    landed: list[tuple[int, Write]] = field(default_factory=list)
    last_acked: int = -1
    tags: dict[str, int] = field(default_factory=dict)
    branches: dict[str, int] = field(default_factory=dict)
    acked_snapshots: dict[int, int] = field(default_factory=dict)  # last snapshot of write g -> g
    partitioned: PartitionHistory = field(default_factory=PartitionHistory)

    def state(self, upto: int | None = None) -> Model:
        return apply({}, [w for g, w in self.landed if upto is None or g <= upto])


def run_crash(
    *, kills: int, seed: int, work: Path, progress: bool = False, stop_on_failure: bool = False
) -> CrashResult:
    """Kill writers until ``kills`` SIGKILLs, checking the table after each round."""
    uri = str(work / "warehouse")
    catalog = Catalog(uri)
    catalog.create_database("db")
    catalog.create_table(TABLE, schema=Write({}).rows(0).schema, primary_key=["k"], options=OPTIONS)
    create_ptable(catalog)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["lsmlake.catalog", "lsmlake.table", "bench.crash_campaign"])
    rng = random.Random(seed)
    result, history, next_write = CrashResult(), _History(), 0
    start = time.time()
    while result.kills < kills:
        point = rng.choice(POINTS)
        job = ChildJob(
            uri, seed, next_write, point, rng.randint(1, 6), str(work / f"acks-{result.rounds}.jsonl")
        )
        ready = ctx.Event()
        child = ctx.Process(target=run_child, args=(job, ready))
        child.start()
        if point == "random" and ready.wait(60):
            time.sleep(rng.uniform(0.0, 1.0))
            if child.is_alive() and child.pid is not None:
                os.kill(child.pid, signal.SIGKILL)
        child.join(300)
        result.rounds += 1
        if child.exitcode == -signal.SIGKILL:
            result.kills += 1
            result.kills_by_point[point] = result.kills_by_point.get(point, 0) + 1
        elif child.exitcode != 0:
            error = Path(job.log + ".error")
            result.failures.append(
                f"round {result.rounds} ({point}): the writer failed: "
                + (error.read_text().strip().splitlines()[-1] if error.exists() else f"exit {child.exitcode}")
            )
        seen = len(result.failures)
        next_write = _check_round(catalog.open_table(TABLE), job, history, result)
        _check_partitioned(catalog.open_table(PTABLE), job, history, result)
        if progress:
            for failure in result.failures[seen:]:
                print(f"  FAILED: {failure}", flush=True)
        if stop_on_failure and len(result.failures) > seen:
            break
        if progress and result.rounds % 25 == 0:
            print(
                f"  {result.kills} kills, {len(result.failures)} failures, {time.time() - start:.0f} s",
                flush=True,
            )
    result.wall_s = time.time() - start
    return result


def _check_round(table: Table, job: ChildJob, history: _History, result: CrashResult) -> int:
    """Check the table after one round; the next round's first write index."""
    records = AckLog.read(Path(job.log))
    acked = [r for r in records if "up" in r and "g" in r]
    result.acknowledged += len(acked)
    for r in records:
        if "tag" in r:
            history.tags[r["tag"]] = r["g"]
        if "branch" in r:
            history.branches[r["branch"]] = r["g"]
    where = f"round {result.rounds} ({job.point} #{job.hit})"
    if [r["g"] for r in acked] != list(range(job.first_write, job.first_write + len(acked))):
        result.failures.append(f"{where}: acknowledgements out of order")
    inflight = job.first_write + len(acked)
    done = [(r["g"], write_of(r)) for r in acked]
    for r in acked:
        history.acked_snapshots[r["ids"][-1]] = r["g"]
    lsmlake.clear_caches()
    result.checks += 1
    committed = table_model(table.with_options({"deletion-vectors.merge-on-read": "true"}).read())
    without = apply(history.state(), [w for _, w in done])
    with_inflight = apply(without, [crash_write(job.seed, inflight)])
    history.landed += done
    if done:
        history.last_acked = done[-1][0]
    if committed == with_inflight and committed != without:
        history.landed.append((inflight, crash_write(job.seed, inflight)))
        result.landed_unacknowledged += 1
    elif committed != without:
        result.failures.append(
            f"{where}: committed rows differ from the model: {differences(committed, without)}"
        )
    _check_visible(table, committed, history, result, where)
    _check_history(table, history, result, where)
    _check_orphans(table, job.uri, committed, history, result, where)
    return inflight + 1


def _check_partitioned(table: Table, job: ChildJob, history: _History, result: CrashResult) -> None:
    """The partitioned table after a round: the write after its last acknowledgement there may have
    landed unacknowledged if the main table acknowledged it (the partitioned write comes second)."""
    records = AckLog.read(Path(job.log))
    main = [r["g"] for r in records if "g" in r and "up" in r]
    parted = [r for r in records if "p" in r]
    nxt = job.first_write + 2 * len(parted)  # op o writes g = first_write + o there when o is even
    inflight = (nxt, crash_write(job.seed, nxt)) if nxt in main else None
    where = f"round {result.rounds} ({job.point} #{job.hit})"
    failures, checks = check_partitions(
        table, job.uri, parted, inflight, history.partitioned, result.partitions, where
    )
    result.failures += failures
    result.checks += checks


def _check_visible(
    table: Table, committed: Model, history: _History, result: CrashResult, where: str
) -> None:
    """Rows of writes up to the last acknowledged commit are visible; each key of a later write that
    landed unacknowledged may still show the value before it (until the next acknowledged commit)."""
    result.checks += 1
    visible = table_model(table.read())
    if visible != committed:
        result.invisible_after_kill += 1
    later = [g for g, _ in history.landed if g > history.last_acked]
    states = [history.state(history.last_acked), *(history.state(g) for g in later)]
    wrong = [k for k in set(visible) | set(committed) if all(visible.get(k) != s.get(k) for s in states)]
    if wrong:
        result.failures.append(
            f"{where}: committed rows invisible after a later acknowledged commit: "
            f"{differences(visible, committed)}"
        )


def _check_history(table: Table, history: _History, result: CrashResult, where: str) -> None:
    """Every retained snapshot and tag reads; those an acknowledgement names read as the model says."""
    for sid in table.snapshot_manager.snapshot_ids():
        result.checks += 1
        try:
            got = table_model(table.read(snapshot_id=sid))
        except Exception as e:
            result.failures.append(f"{where}: snapshot {sid} is unreadable: {type(e).__name__}: {e}")
            continue
        g = history.acked_snapshots.get(sid)
        if g is not None and got != history.state(g):
            result.failures.append(
                f"{where}: snapshot {sid} (write {g}): {differences(got, history.state(g))}"
            )
    for branch in table.list_branches():
        result.checks += 1
        try:
            got = table_model(table.branch(branch).read())
        except Exception as e:
            result.failures.append(f"{where}: branch {branch} is unreadable: {type(e).__name__}: {e}")
            continue
        g = history.branches.get(branch)
        if g is not None and got != history.state(g):
            result.failures.append(
                f"{where}: branch {branch} (write {g}): {differences(got, history.state(g))}"
            )
    for tag in table.list_tags():
        result.checks += 1
        try:
            got = table_model(table.read(tag=tag.name))
        except Exception as e:
            result.failures.append(f"{where}: tag {tag.name} is unreadable: {type(e).__name__}: {e}")
            continue
        g = history.tags.get(tag.name)
        if g is not None and got != history.state(g):
            result.failures.append(
                f"{where}: tag {tag.name} (write {g}): {differences(got, history.state(g))}"
            )


def _referenced(table: Table, uri: str) -> set[str]:
    """Names of the data files the retained snapshots and the tags reference."""
    files = Catalog(uri).get_table(f"{TABLE}$files")
    names: set[str] = set()
    reads: list[Any] = [files.read(snapshot_id=s) for s in table.snapshot_manager.snapshot_ids()]
    reads += [files.with_options({"scan.tag-name": t.name}).read() for t in table.list_tags()]
    reads += [Catalog(uri).get_table(f"{TABLE}$branch_{b}$files").read() for b in table.list_branches()]
    for r in reads:
        names |= {p.rsplit("/", 1)[-1] for p in r.column("file_path").to_pylist()}
    return names


def _check_orphans(
    table: Table, uri: str, committed: Model, history: _History, result: CrashResult, where: str
) -> None:
    """remove_orphan_files runs, removes no referenced file, and everything reads the same after it."""
    result.checks += 1
    try:
        referenced = _referenced(table, uri)
        removed = table.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    except Exception as e:
        result.failures.append(f"{where}: remove_orphan_files failed: {type(e).__name__}: {e}")
        return
    result.orphans_removed += len(removed)
    bad = sorted(p for p in removed if p.rsplit("/", 1)[-1] in referenced)
    if bad:
        result.failures.append(f"{where}: remove_orphan_files removed referenced files: {bad[:3]}")
    lsmlake.clear_caches()
    after = table_model(table.with_options({"deletion-vectors.merge-on-read": "true"}).read())
    if after != committed:
        result.failures.append(f"{where}: rows changed by orphan cleaning: {differences(after, committed)}")
    failures = len(result.failures)
    _check_history(table, history, result, where + " after orphan cleaning")
    del result.failures[failures + 3 :]
