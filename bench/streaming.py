"""Peak memory of a streaming ``to_batches()`` read vs the Arrow size of the whole table (10M rows, 16 buckets)."""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import lsmlake
from bench.common import make_rows

CHUNK = 1_000_000


def build(warehouse: Path, rows: int, buckets: int) -> int:
    """Write ``rows`` rows in 1M-row commits (merge-on-read: no compaction); returns the Arrow size."""
    cat = lsmlake.Catalog(str(warehouse))
    cat.create_database("db")
    table = cat.open_table("db.t") if cat.table_exists("db.t") else None
    size = 0
    for start in range(0, rows, CHUNK):
        data = make_rows(min(CHUNK, rows - start), seed=start, key_offset=start)
        if table is None:
            created = cat.create_table(
                "db.t",
                schema=data.schema,
                primary_key=["id"],
                options={"bucket": str(buckets), "write-only": "true"},
            )
            assert isinstance(created, lsmlake.Table)
            table = created
        table.write(data)
        size += data.nbytes
    return size


def _high_water_mb() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss it does not inherit the parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(warehouse: str) -> None:
    """In a fresh process: stream the table and report rows and peak RSS above the post-import baseline."""
    table = lsmlake.Catalog(warehouse).open_table("db.t")
    before = _high_water_mb()
    rows = 0
    for batch in table.scan().to_batches():
        rows += batch.num_rows
    print(json.dumps({"rows": rows, "baseline_mb": before, "peak_mb": _high_water_mb()}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return
    work = Path(tempfile.mkdtemp(prefix="lsmlake-bench-stream-"))
    try:
        arrow_bytes = build(work / "wh", args.rows, args.buckets)
        out = subprocess.run(
            [sys.executable, "-m", "bench.streaming", "--child", str(work / "wh")],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        grown = r["peak_mb"] - r["baseline_mb"]
        whole = arrow_bytes / 1024**2
        print(
            f"streamed {r['rows']:,} rows of a {args.buckets}-bucket table; Arrow size of the whole table "
            f"{whole:,.0f} MB; peak RSS growth while streaming {grown:,.0f} MB = {grown / whole:.2f} of it "
            f"(target < 0.25); process peak {r['peak_mb']:,.0f} MB"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
