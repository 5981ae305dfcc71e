"""Peak memory of a full compaction of one big bucket vs the Arrow size of the bucket's data."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import lsmlake
from bench.common import make_rows
from bench.streaming import _high_water_mb

CHUNK = 1_000_000


def build(warehouse: Path, rows: int, *, dv: bool) -> int:
    """One bucket: ``rows`` keys written in 1M-row commits, then 30% of them upserted; no compaction."""
    cat = lsmlake.Catalog(str(warehouse))
    cat.create_database("db")
    size = 0
    table = None
    for start in range(0, rows, CHUNK):
        data = make_rows(min(CHUNK, rows - start), seed=start, key_offset=start)
        if table is None:
            options = {"bucket": "1", "write-only": "true", "deletion-vectors.enabled": str(dv).lower()}
            created = cat.create_table("db.t", schema=data.schema, primary_key=["id"], options=options)
            assert isinstance(created, lsmlake.Table)
            table = created
        table.write(data)
        size += data.nbytes
    assert table is not None
    rng = np.random.default_rng(1)
    keys = rng.choice(rows, int(rows * 0.3), replace=False)
    upserts = make_rows(len(keys), seed=99).set_column(0, "id", pa.array(keys))
    table.write(upserts)
    return int(size + upserts.nbytes)


def child(warehouse: str) -> None:
    table = lsmlake.Catalog(warehouse).open_table("db.t").with_options({"write-only": "false"})
    before = _high_water_mb()
    start = time.perf_counter()
    table.compact(full=True)
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "baseline_mb": before,
                "peak_mb": _high_water_mb(),
                "seconds": seconds,
                "rows": table.read(columns=["id"]).num_rows,
            }
        )
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--dv", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return
    work = Path(tempfile.mkdtemp(prefix="lsmlake-bench-compact-"))
    try:
        arrow = build(work / "wh", args.rows, dv=args.dv) / 1024**2
        disk = sum(p.stat().st_size for p in (work / "wh").rglob("*.parquet")) / 1024**2
        out = subprocess.run(
            [sys.executable, "-m", "bench.compaction_memory", "--child", str(work / "wh")],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        grown = r["peak_mb"] - r["baseline_mb"]
        print(
            f"full compaction of one bucket: {args.rows * 1.3:,.0f} input rows, {disk:,.0f} MB of Parquet, "
            f"{arrow:,.0f} MB as Arrow; {r['seconds']:.1f} s ({args.rows * 1.3 / r['seconds']:,.0f} rows/s); "
            f"peak RSS growth {grown:,.0f} MB = {grown / arrow:.2f} of the Arrow size; {r['rows']:,} rows after"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
