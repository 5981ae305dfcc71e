"""The bench's point-lookup scenarios: single-key latency (cold and warm, p50/p99) and 10k-key batches,
``table.lookup`` beside a filtered ``read()`` of the same keys and pypaimon's filtered read."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

import lsmlake
from bench.systems import LsmlakeSystem, PypaimonSystem, checksum

BATCH_KEYS = 10_000
WARM_KEYS = 200
COLD_KEYS = 20
READ_KEYS = 50
PYPAIMON_KEYS = {"pypaimon": 3, "pypaimon-rust": 10}


class Recorder(Protocol):
    """What the scenarios need of the bench: its size, repetitions, systems and result rows."""

    n: int
    repeats: int
    pypaimon: list[PypaimonSystem]

    def row(self, scenario: str, system: str, rows: int, note: str = "") -> Any: ...

    def reps(self, system: str) -> int: ...


def percentile_note(seconds: list[float]) -> str:
    """p50 and p99 of per-key latencies, in milliseconds."""
    p50, p99 = np.percentile(np.asarray(seconds) * 1000, [50, 99])
    return f"p50 {p50:.2f} ms, p99 {p99:.2f} ms over {len(seconds)} keys"


def _latencies(
    keys: list[int], step: Callable[[int], pa.Table], *, before: Callable[[int], Any]
) -> tuple[list[float], pa.Table]:
    """Seconds of ``step(k)`` for each key, ``before(k)`` run untimed first; and every result."""
    seconds, results = [], []
    for k in keys:
        before(k)
        start = time.perf_counter()
        results.append(step(k))
        seconds.append(time.perf_counter() - start)
    return seconds, pa.concat_tables(results)


def lookup_scenarios(bench: Recorder, table: lsmlake.Table, py_wh: dict[str, Path]) -> None:
    """Scenario 7 on the deletion-vector table (pypaimon reads its own merge-on-read table of the same
    rows, as it writes no deletion vectors)."""
    rng = np.random.default_rng(11)
    n = bench.n
    # keys that exist, and 5% that do not (beyond the highest id)
    count = min(BATCH_KEYS, n)
    batch = rng.choice(n, size=count, replace=False).astype(np.int64)
    absent = rng.choice(count, size=max(count // 20, 1), replace=False)
    batch[absent] = n + np.arange(len(absent))
    singles = [int(k) for k in rng.choice(n, size=WARM_KEYS, replace=False)]

    def one(k: int) -> pa.Table:
        return table.lookup([k])

    def point_read(k: int) -> pa.Table:
        return table.read(filter=f"id = {k}")

    cold_s, cold_out = _latencies(singles[:COLD_KEYS], one, before=lambda _: lsmlake.clear_caches())
    cold = bench.row(
        "7a. single-key lookup, cold (caches cleared)", "lsmlake lookup", 1, percentile_note(cold_s)
    )
    cold.seconds, cold.check = cold_s, checksum(cold_out)
    scenario = "7b. single-key lookup, warm"
    warm_s, warm_out = _latencies(singles, one, before=one)
    warm = bench.row(scenario, "lsmlake lookup", 1, percentile_note(warm_s))
    warm.seconds, warm.check = warm_s, checksum(warm_out)
    read_s, read_out = _latencies(singles[:READ_KEYS], point_read, before=point_read)
    read = bench.row(scenario, "lsmlake read(filter='id = k')", 1, percentile_note(read_s))
    read.seconds = read_s
    read.check = checksum(read_out)
    warm.check = checksum(pa.concat_tables([one(k) for k in singles[:READ_KEYS]]))
    for p in bench.pypaimon:
        keys = singles[: PYPAIMON_KEYS.get(p.name, 3)]
        seconds, check = p.point_reads(py_wh[p.name], keys)
        r = bench.row(scenario, f"{p.name} filtered read (id = k)", 1, percentile_note(seconds))
        r.seconds = seconds
        mine = checksum(pa.concat_tables([one(k) for k in keys]))
        if {k: check[k] for k in mine} != mine:  # a fast wrong answer fails the bench
            raise RuntimeError(f"{scenario}: {p.name} read {check}, lsmlake looked up {mine}")

    scenario = f"7c. batch lookup of {count:,} random keys (5% absent)"
    keys = pa.table({"id": batch})
    look = bench.row(scenario, "lsmlake lookup", count)
    filt = bench.row(scenario, "lsmlake read(filter='id IN (...)')", count)
    where = f"id IN ({','.join(map(str, batch.tolist()))})"
    for _ in range(bench.repeats):
        s, out = LsmlakeSystem.timed(lambda: table.lookup(keys), lambda: table.lookup(keys))
        look.seconds.append(s)
        look.check = checksum(out)
        s, out = LsmlakeSystem.timed(lambda: table.read(filter=where), lambda: table.read(filter=where))
        filt.seconds.append(s)
        filt.check = checksum(out)
    for p in bench.pypaimon:
        r = bench.row(scenario, f"{p.name} filtered read (is_in)", count)
        for _ in range(bench.reps(p.name)):
            s, check = p.read(py_wh[p.name], ["in", batch.tolist()])
            r.seconds.append(s)
            r.check = {k: check[k] for k in ("rows", "id_sum", "amount_sum")}


def lookup_summary(rows: list[Any]) -> str:
    """Warm single-key lookup against the filtered read, and batch keys/s, from the same run."""

    def median(prefix: str, system: str) -> float | None:
        return next((r.median for r in rows if r.scenario.startswith(prefix) and r.system == system), None)

    lines = []
    warm, read = median("7b.", "lsmlake lookup"), median("7b.", "lsmlake read(filter='id = k')")
    if warm and read:
        lines.append(
            f"warm single-key lookup vs read(filter='id = k'): {read / warm:.1f}x faster "
            f"(p50 {warm * 1000:.2f} ms vs {read * 1000:.2f} ms)"
        )
    batch = median("7c.", "lsmlake lookup")
    batch_read = median("7c.", "lsmlake read(filter='id IN (...)')")
    rows_of = next((r.rows for r in rows if r.scenario.startswith("7c.")), 0)
    if batch and batch_read:
        lines.append(
            f"batch lookup: {rows_of / batch:,.0f} keys/s, {batch_read / batch:.1f}x the filtered read "
            f"({batch * 1000:.1f} ms vs {batch_read * 1000:.1f} ms)"
        )
    return "\n".join(lines)
