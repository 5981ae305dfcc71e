"""Ray vs the single-machine path: reads and full compaction of one primary-key table, side by side.

``python -m bench.ray_bench [--rows N] [--buckets B] [--workers 1 2] [--repeats R]``

The table (default 10M rows, 16 buckets, ``write-only`` so nothing compacts on write) gets a base
write and two upserts of 30% of the keys, leaving three overlapping runs per bucket. Measured:

- read, merge-on-read: every bucket merged section by section;
- full compaction: ``table.compact(full=True)`` vs ``executor="ray"``, each run on a fresh copy;
- read, compacted: the same rows as raw splits after the full compaction.

The single-machine path is ``table.read()`` / ``table.compact()`` (threads); the Ray path runs
on a local Ray cluster of 1 and 2 worker CPUs (``ray.init(num_cpus=N)``), each started and warmed
up once (start-up time printed separately, not in the figures). A Ray read is timed to a
materialized dataset (blocks in the object store), the local one to an Arrow table in memory.
The single-machine figures are measured before and after the Ray ones (best of both). Results
are also saved as ``bench/results/ray-<rows>.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import lsmlake
from bench.common import RESULTS, Measurement, machine, make_rows
from bench.lsm import UPSERT_COMMITS, upserts

LOCAL = "single machine"


def build(root: Path, rows: int, buckets: int) -> Path:
    """The merge-on-read table; returns its warehouse directory."""
    warehouse = root / "pristine"
    cat = lsmlake.Catalog(str(warehouse))
    cat.create_database("db")
    data = make_rows(rows)
    table = cat.create_table(
        "db.t", schema=data.schema, primary_key=["id"], options={"bucket": str(buckets), "write-only": "true"}
    )
    table.write(data)
    for commit in range(UPSERT_COMMITS - 1):
        table.write(upserts(data, commit))
    return warehouse


def fresh(root: Path, warehouse: Path, name: str) -> lsmlake.Table:
    """A copy of the pristine table (compaction changes it)."""
    target = root / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(warehouse, target)
    return lsmlake.Catalog(str(target)).open_table("db.t")


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def timed_on_fresh(
    fn: Callable[[lsmlake.Table], object], make: Callable[[], lsmlake.Table], repeats: int
) -> list[float]:
    """Time ``fn`` on a new copy of the table each repetition (the copying is not timed)."""
    out = []
    for _ in range(repeats):
        table = make()
        start = time.perf_counter()
        fn(table)
        out.append(time.perf_counter() - start)
    return out


def run(rows: int, buckets: int, workers: list[int], repeats: int) -> list[Measurement]:
    results: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="lsmlake-ray-bench-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        pristine = build(root, rows, buckets)
        print(
            f"built {rows:,} rows in {buckets} buckets ({UPSERT_COMMITS} runs per bucket) "
            f"in {time.perf_counter() - start:.1f} s"
        )
        merged = fresh(root, pristine, "read")
        compacted = fresh(root, pristine, "compacted")
        compacted.compact(full=True)
        expected_rows = merged.read(columns=["id"]).num_rows

        def add(scenario: str, system: str, seconds: list[float]) -> None:
            found = next((m for m in results if (m.scenario, m.system) == (scenario, system)), None)
            if found is None:
                results.append(Measurement(scenario, system, expected_rows, seconds))
            else:
                found.seconds.extend(seconds)
            print(f"  {scenario:<28} {system:<16} {min(seconds):8.2f} s (best of {len(seconds)})")

        def copy() -> lsmlake.Table:
            return fresh(root, pristine, "run")

        def local() -> None:
            add("read, merge-on-read", LOCAL, timed(lambda: merged.read(), repeats))
            add("full compaction", LOCAL, timed_on_fresh(lambda t: t.compact(full=True), copy, repeats))
            add("read, compacted", LOCAL, timed(lambda: compacted.read(), repeats))

        local()

        import ray
        import ray.data

        import lsmlake.ray as lray

        for n in workers:
            start = time.perf_counter()
            ray.init(num_cpus=n, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
            ray.data.DataContext.get_current().enable_progress_bars = False
            lray.read_table(compacted, filter="id < 1000").materialize()  # start the workers
            print(f"ray with {n} worker CPU(s): started and warmed up in {time.perf_counter() - start:.1f} s")
            system = f"ray, {n} worker{'s' if n > 1 else ''}"

            def ray_read(table: lsmlake.Table) -> None:
                ds = lray.read_table(table).materialize()
                assert ds.count() == expected_rows, "the Ray read lost or duplicated rows"
                del ds

            add("read, merge-on-read", system, timed(lambda: ray_read(merged), repeats))
            add(
                "full compaction",
                system,
                timed_on_fresh(lambda t: t.compact(full=True, executor="ray"), copy, repeats),
            )
            add("read, compacted", system, timed(lambda: ray_read(compacted), repeats))
            ray.shutdown()
        local()  # again after the Ray runs: the figures must not depend on what ran first
    return results


def table_text(results: list[Measurement], rows: int, buckets: int) -> str:
    systems = list(dict.fromkeys(m.system for m in results))
    scenarios = list(dict.fromkeys(m.scenario for m in results))
    best = {(m.scenario, m.system): min(m.seconds) for m in results}
    lines = [
        f"### Ray vs single machine: {rows:,} rows, {buckets} buckets",
        "",
        f"machine: {machine()}",
        "",
        "| scenario | " + " | ".join(systems) + " |",
        "|---|" + "---:|" * len(systems),
    ]
    for scenario in scenarios:
        local = best[(scenario, LOCAL)]
        cells = []
        for s in systems:
            seconds = best[(scenario, s)]
            cells.append(f"{seconds:.2f} s" + ("" if s == LOCAL else f" ({local / seconds:.2f}x)"))
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    lines += ["", "best of the repetitions; (Nx) = speed relative to the single-machine path"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    results = run(args.rows, args.buckets, args.workers, args.repeats)
    text = table_text(results, args.rows, args.buckets)
    print()
    print(text)
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "title": f"ray-bench {args.rows} rows {args.buckets} buckets",
        "machine": machine(),
        "measurements": [{**asdict(m), "best": min(m.seconds)} for m in results],
        "table": text,
    }
    (RESULTS / f"ray-{args.rows}.json").write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
