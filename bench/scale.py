"""``python -m bench.scale``: write 20M/100M rows through one writer into 8 and 64 buckets, read them back
streaming, point and range reads, a full compaction; time, rows/s and peak RSS of each step."""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import lsmlake
from bench.common import RESULTS, machine, make_rows
from bench.streaming import _high_water_mb
from lsmlake.core.options import CoreOptions

BATCH = 100_000
STEPS = ("write", "read", "point", "range", "compact")
POINT_READS = 20
MB = 1024 * 1024
# The stated fixed overhead of a write's peak RSS over its input batch plus `write-buffer-size`, the
# same for any number of rows: the interpreter with pyarrow and lsmlake (~60 MB), the Parquet footer
# cache (at most 64 MB), a commit's final-flush merges beyond the budget's free half and what the
# allocators keep of freed memory (mimalloc per thread, glibc arenas). Measured at 20M and 100M rows
# into 8 and 64 buckets (the 8-bucket writes have the largest spilled runs: 411-462 MB over batch +
# buffer; 64 buckets: 228-238 MB), with a margin for this shared machine's noise.
WRITE_OVERHEAD_MB = 480.0


def batches(rows: int, *, batch: int = BATCH) -> Any:
    """``rows`` rows in ``batch``-row tables: one template, its keys shifted per batch (unique keys)."""
    template = make_rows(batch)
    ids = template.column("id").to_numpy()
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        part = template.slice(0, n) if n < batch else template
        yield part.set_column(0, "id", pa.array(ids[:n] + start))


def _open(warehouse: str) -> lsmlake.Table:
    table = lsmlake.Catalog(warehouse).open_table("db.t")
    assert isinstance(table, lsmlake.Table)
    return table


def step_write(warehouse: str, rows: int, buckets: int, options: dict[str, str]) -> dict[str, Any]:
    cat = lsmlake.Catalog(warehouse)
    cat.create_database("db")
    schema = make_rows(1).schema
    table = cat.create_table(
        "db.t", schema=schema, primary_key=["id"], options={"bucket": str(buckets), **options}
    )
    assert isinstance(table, lsmlake.Table)
    batch_bytes = 0
    with table.writer() as writer:
        for part in batches(rows):
            batch_bytes = max(batch_bytes, part.nbytes)
            writer.write(part)
    return {
        "rows": rows,
        "batch_mb": batch_bytes / MB,
        "buffer_mb": table.options.get(CoreOptions.WRITE_BUFFER_SIZE) / MB,
    }


def step_read(warehouse: str) -> dict[str, Any]:
    rows, largest, count = 0, 0, 0
    for batch in _open(warehouse).scan().to_batches():
        rows += batch.num_rows
        largest = max(largest, batch.num_rows)
        count += 1
    return {"rows": rows, "batches": count, "largest_batch_rows": largest}


def step_point(warehouse: str, rows: int) -> dict[str, Any]:
    table = _open(warehouse)
    keys = np.random.default_rng(1).integers(0, rows, POINT_READS)
    found = sum(table.read(filter=f"id = {int(k)}").num_rows for k in keys)
    return {"rows": int(found), "reads": POINT_READS}


def step_range(warehouse: str, rows: int) -> dict[str, Any]:
    low = rows // 2
    got = _open(warehouse).read(filter=f"id >= {low} AND id < {low + 100_000}").num_rows
    return {"rows": got}


def step_compact(warehouse: str, rows: int) -> dict[str, Any]:
    _open(warehouse).compact(full=True)
    return {"rows": rows}


def step_s3() -> dict[str, Any]:
    """A small write (one 1,000-row commit) to a moto S3 server: the HTTP requests it answered."""
    server = importlib.import_module("tests.s3_server")  # the test suite's counting moto server
    with server.running_s3_server() as endpoint:
        cat = lsmlake.Catalog(endpoint.fresh_warehouse(), options=endpoint.options)
        cat.create_database("db")
        data = make_rows(1_000)
        table = cat.create_table("db.t", schema=data.schema, primary_key=["id"], options={"bucket": "2"})
        assert isinstance(table, lsmlake.Table)
        table.write(data)
        endpoint.requests.reset()
        table.write(make_rows(1_000, seed=3))
        counts = endpoint.requests.counts()
    return {"rows": 1_000, "requests": sum(counts.values()), "by_method": counts}


def child(step: str, warehouse: str, rows: int, buckets: int, options: dict[str, str]) -> dict[str, Any]:
    """One step in this fresh process: its result, wall time and peak RSS (VmHWM) over the import baseline."""
    baseline = _high_water_mb()
    start = time.perf_counter()
    if step == "write":
        out = step_write(warehouse, rows, buckets, options)
    elif step == "read":
        out = step_read(warehouse)
    elif step == "point":
        out = step_point(warehouse, rows)
    elif step == "range":
        out = step_range(warehouse, rows)
    elif step == "compact":
        out = step_compact(warehouse, rows)
    else:
        out = step_s3()
    seconds = time.perf_counter() - start
    return {**out, "step": step, "seconds": seconds, "baseline_mb": baseline, "peak_mb": _high_water_mb()}


def run_step(step: str, warehouse: Path, rows: int, buckets: int, options: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.scale", "--child", step, "--warehouse", str(warehouse)]
    cmd += ["--rows", str(rows), "--buckets", str(buckets), "--options", json.dumps(options)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def with_bound(r: dict[str, Any]) -> dict[str, Any]:
    """A write step's result with its stated bound (batch + buffer + fixed overhead) and whether its
    peak RSS stayed within it."""
    if r["step"] != "write":
        return r
    bound = r["batch_mb"] + r["buffer_mb"] + WRITE_OVERHEAD_MB
    return {**r, "overhead_mb": WRITE_OVERHEAD_MB, "bound_mb": bound, "within_bound": r["peak_mb"] <= bound}


def describe(r: dict[str, Any], rows: int, buckets: int) -> str:
    rate = r["rows"] / r["seconds"] if r["seconds"] > 0 else float("inf")
    line = (
        f"| {rows:>11,} | {buckets:>3} | {r['step']:<7} | {r['seconds']:8.1f} | {rate:12,.0f} | "
        f"{r['peak_mb']:8.0f} | {r['peak_mb'] - r['baseline_mb']:8.0f} |"
    )
    if r["step"] == "write":
        line += (
            f" batch {r['batch_mb']:.1f} + buffer {r['buffer_mb']:.0f} + overhead {WRITE_OVERHEAD_MB:.0f}"
            f" = bound {r['bound_mb']:.0f} MB: {'within' if r['within_bound'] else 'OVER'}"
            f" (above batch + buffer: {r['peak_mb'] - r['batch_mb'] - r['buffer_mb']:.0f} MB)"
        )
    elif r["step"] == "read":
        line += f" {r['batches']} batches, largest {r['largest_batch_rows']:,} rows"
    elif r["step"] == "s3":
        line += f" {r['requests']} requests {r['by_method']}"
    return line


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000_000, 100_000_000])
    parser.add_argument("--buckets", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--quick", action="store_true", help="2M rows only")
    parser.add_argument("--steps", nargs="+", default=[*STEPS, "s3"], choices=[*STEPS, "s3"])
    parser.add_argument("--options", default="{}", help="extra table options, as JSON")
    parser.add_argument("--child", choices=[*STEPS, "s3"], help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="scale", help="result file name under bench/results/")
    args = parser.parse_args(argv)
    options = json.loads(args.options)
    if args.child:
        print(json.dumps(child(args.child, args.warehouse, args.rows[0], args.buckets[0], options)))
        return
    sizes = [2_000_000] if args.quick else args.rows
    print(f"machine: {machine()}; batches of {BATCH:,} rows; options {options or 'default'}")
    print("| rows | buckets | step | seconds | rows/s | peak RSS MB | above import MB | notes |")
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    results = []
    for rows in sizes:
        for buckets in args.buckets:
            work = Path(tempfile.mkdtemp(prefix="lsmlake-scale-"))
            try:
                for step in (s for s in args.steps if s != "s3"):
                    r = with_bound(run_step(step, work / "wh", rows, buckets, options))
                    results.append({**r, "table_rows": rows, "buckets": buckets})
                    print(describe(r, rows, buckets), flush=True)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    if "s3" in args.steps:
        r = run_step("s3", Path("unused"), 1_000, 2, {})
        results.append(r)
        print(describe(r, 1_000, 2), flush=True)
    writes = [r for r in results if r["step"] == "write"]
    if writes:
        over = [f"{r['table_rows']:,} rows / {r['buckets']} buckets" for r in writes if not r["within_bound"]]
        print(
            f"write peak RSS bound: input batch + write-buffer-size + {WRITE_OVERHEAD_MB:.0f} MB fixed overhead; "
            + (f"OVER in {', '.join(over)}" if over else f"all {len(writes)} writes within it")
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(
        json.dumps({"machine": machine(), "results": results}, indent=1)
    )


if __name__ == "__main__":
    main()
