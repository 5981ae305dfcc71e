"""Shared benchmark helpers: data generation, timing with repetitions, peak memory, result files."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

RESULTS = Path(__file__).parent / "results"


def make_rows(n: int, *, seed: int = 7, key_offset: int = 0) -> pa.Table:
    """n rows: an int64 key (shuffled) and four value columns, one of them a string."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(n).astype(np.int64) + key_offset
    words = np.array(["alpha", "bravo", "charlie", "delta-echo-foxtrot", "golf", "hotel-india"], dtype=object)
    return pa.table(
        {
            "id": ids,
            "name": pa.array(
                words[rng.integers(0, len(words), n)] + pa.array(ids).to_numpy().astype(str).astype(object)
            ),
            "amount": rng.random(n) * 1000,
            "qty": rng.integers(0, 1000, n).astype(np.int32),
            "ts": rng.integers(1_600_000_000_000, 1_700_000_000_000, n).astype(np.int64),
        }
    )


@dataclass
class Measurement:
    """Median wall time of several runs of one system in one scenario."""

    scenario: str
    system: str
    rows: int
    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.median if self.median > 0 else float("inf")


def time_alternating(
    scenario: str, rows: int, systems: dict[str, Callable[[], object]], repeats: int
) -> list[Measurement]:
    """Run each system ``repeats`` times, alternating between systems, and keep every timing."""
    results = {name: Measurement(scenario, name, rows, []) for name in systems}
    for _ in range(repeats):
        for name, fn in systems.items():
            start = time.perf_counter()
            fn()
            results[name].seconds.append(time.perf_counter() - start)
    return list(results.values())


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, pyarrow {pa.__version__}"


def report(title: str, measurements: list[Measurement], baseline: str, out_name: str) -> str:
    """A markdown table with ratios to the baseline; also saved as JSON under bench/results/."""
    base = next(m for m in measurements if m.system == baseline)
    lines = [
        f"### {title}",
        "",
        f"machine: {machine()}",
        "",
        "| scenario | system | rows | median s | rows/s | vs " + baseline + " |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for m in measurements:
        ratio = m.rows_per_s / base.rows_per_s
        lines.append(
            f"| {m.scenario} | {m.system} | {m.rows:,} | {m.median:.3f} | {m.rows_per_s:,.0f} | {ratio:.2f}x |"
        )
    text = "\n".join(lines)
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "title": title,
        "machine": machine(),
        "measurements": [{**asdict(m), "median": m.median, "rows_per_s": m.rows_per_s} for m in measurements],
    }
    (RESULTS / f"{out_name}.json").write_text(json.dumps(payload, indent=2))
    return text
