"""LSM benchmarks: merge-on-read vs deletion vectors vs raw Parquet reads of the same files, and compaction."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lsmlake
from bench.common import Measurement, make_rows, peak_rss_mb, report, time_alternating
from lsmlake.metadata.live_files import live_entries

UPSERT_FRACTION = 0.3
UPSERT_COMMITS = 3


def upserts(base: pa.Table, commit: int) -> pa.Table:
    """30% of the keys with new values (unsorted)."""
    n = base.num_rows
    rng = np.random.default_rng(100 + commit)
    pick = rng.choice(n, int(n * UPSERT_FRACTION), replace=False)
    rows = base.take(pa.array(pick))
    return rows.set_column(2, "amount", pa.array(rng.random(len(pick)) * 1000))


def build(root: Path, data: pa.Table, *, dv: bool) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(root))
    cat.create_database("db", exist_ok=True)
    name = "db.dv" if dv else "db.mor"
    options = {"bucket": "4", "deletion-vectors.enabled": str(dv).lower()}
    if not dv:
        options["write-only"] = "true"  # merge-on-read of many level-0 files: no compaction
    table = cat.create_table(name, schema=data.schema, primary_key=["id"], options=options)
    table.write(data)
    for i in range(UPSERT_COMMITS):
        table.write(upserts(data, i))
    return table


def live_paths(table: lsmlake.Table) -> list[str]:
    return [
        f"{table.root}/bucket-{e.bucket}/{e.file.file_name}"
        for e in live_entries(table.io, table.paths, table.latest_snapshot())
        if not (table.options.deletion_vectors_enabled and e.file.level == 0)
    ]


def raw_read(paths: list[str], columns: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(p, columns=columns) for p in paths])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    data = make_rows(args.rows)
    columns = data.column_names
    work = Path(tempfile.mkdtemp(prefix="lsmlake-bench-lsm-"))
    try:
        start = time.perf_counter()
        mor = build(work / "mor", data, dv=False)
        mor_write_s = time.perf_counter() - start
        start = time.perf_counter()
        dv = build(work / "dv", data, dv=True)
        dv_write_s = time.perf_counter() - start
        mor_files, dv_files = live_paths(mor), live_paths(dv)
        assert mor.read().num_rows == dv.read().num_rows == args.rows
        n = args.rows
        ms: list[Measurement] = []
        ms += time_alternating(
            "merge-on-read, full read",
            n,
            {
                "raw parquet read of the same files": lambda: raw_read(mor_files, columns),
                "lsmlake merge-on-read": lambda: mor.read(),
            },
            args.repeats,
        )
        ms += time_alternating(
            "deletion vectors, full read",
            n,
            {
                "raw parquet read of the same files": lambda: raw_read(dv_files, columns),
                "lsmlake deletion-vector read": lambda: dv.read(),
            },
            args.repeats,
        )
        lo, hi = n // 2, n // 2 + n // 1000
        ms += time_alternating(
            "id BETWEEN (0.1% of keys)",
            n // 1000,
            {
                "lsmlake merge-on-read": lambda: mor.read(filter=f"id BETWEEN {lo} AND {hi - 1}"),
                "lsmlake deletion-vector read": lambda: dv.read(filter=f"id BETWEEN {lo} AND {hi - 1}"),
            },
            args.repeats,
        )
        ms += time_alternating(
            "amount > 990 (1%)",
            n // 100,
            {
                "lsmlake merge-on-read": lambda: mor.read(filter="amount > 990"),
                "lsmlake deletion-vector read": lambda: dv.read(filter="amount > 990"),
            },
            args.repeats,
        )
        start = time.perf_counter()
        mor.with_options({"write-only": "false"}).compact(full=True)
        full_s = time.perf_counter() - start
        print(report_pairs(ms))
        total_rows = int(n * (1 + UPSERT_FRACTION * UPSERT_COMMITS))
        print()
        print(
            f"writes ({total_rows:,} rows in {1 + UPSERT_COMMITS} commits): merge-on-read {total_rows / mor_write_s:,.0f} "
            f"rows/s, with deletion vectors and compaction {total_rows / dv_write_s:,.0f} rows/s"
        )
        print(
            f"full compaction of the merge-on-read table: {total_rows / full_s:,.0f} input rows/s ({full_s:.2f} s)"
        )
        print(f"peak RSS {peak_rss_mb():.0f} MB")
        report("LSM benchmark", ms, ms[0].system, "lsm")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report_pairs(ms: list[Measurement]) -> str:
    """A markdown table; each scenario's first system is its baseline."""
    lines = [
        "| scenario | system | output rows | median s | rows/s | vs first row of scenario |",
        "|---|---|---:|---:|---:|---:|",
    ]
    base: dict[str, Measurement] = {}
    for m in ms:
        b = base.setdefault(m.scenario, m)
        lines.append(
            f"| {m.scenario} | {m.system} | {m.rows:,} | {m.median:.3f} | {m.rows_per_s:,.0f} | "
            f"{m.rows_per_s / b.rows_per_s:.2f}x |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
