"""Dynamic (``bucket = -1``) vs fixed bucket write throughput on the 1M-row workload, side by side.

Scenarios: the initial write of N rows into an empty table, then upsert commits of 30% of the keys
(the dynamic writer loads the HASH index of the partition and looks every key up). Systems: fixed
``bucket = 4``; dynamic with the default target (2M rows per bucket, so one bucket here); dynamic with
``dynamic-bucket.target-row-num = N/4`` (four buckets, like the fixed table); cross-partition upsert
(key ``id``, partitioned by ``id % 4``, so every key is looked up in the global index).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import lsmlake
from bench.common import make_rows, peak_rss_mb, report, time_alternating
from bench.lsm import upserts


def with_part(data: pa.Table) -> pa.Table:
    return data.append_column("p", pc.bit_wise_and(data.column("id"), 3))


def systems(rows: int) -> dict[str, tuple[dict[str, str], bool]]:
    """name -> (table options, partitioned by id % 4 with key id: cross-partition)."""
    return {
        "fixed bucket=4": ({"bucket": "4"}, False),
        "dynamic (default target)": ({}, False),
        f"dynamic (target {rows // 4:,})": ({"dynamic-bucket.target-row-num": str(rows // 4)}, False),
        "dynamic cross-partition": ({"dynamic-bucket.target-row-num": str(rows // 4)}, True),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    data = make_rows(args.rows)
    batch = upserts(data, 0)
    work = Path(tempfile.mkdtemp(prefix="lsmlake-bench-dyn-"))
    counter = iter(range(1_000_000))
    tables: dict[str, lsmlake.Table] = {}

    def initial(name: str, options: dict[str, str], cross: bool) -> Callable[[], None]:
        def run() -> None:
            cat = lsmlake.Catalog(str(work / f"wh{next(counter)}"))
            cat.create_database("db")
            rows = with_part(data) if cross else data
            table = cat.create_table(
                "db.t",
                schema=rows.schema,
                primary_key=["id"],
                partition_keys=["p"] if cross else [],
                options=options,
            )
            table.write(rows)
            tables[name] = table

        return run

    def upsert(name: str, cross: bool) -> Callable[[], object]:
        rows = with_part(batch) if cross else batch
        return lambda: tables[name].write(rows)

    try:
        configs = systems(args.rows)
        initial_ms = time_alternating(
            "initial write",
            args.rows,
            {name: initial(name, opts, cross) for name, (opts, cross) in configs.items()},
            args.repeats,
        )
        upsert_ms = time_alternating(
            "upsert 30% of keys",
            batch.num_rows,
            {name: upsert(name, cross) for name, (_, cross) in configs.items()},
            args.repeats,
        )
        for name, table in tables.items():
            buckets = sorted({s.bucket for s in table.scan().splits()})
            print(f"{name}: {table.read(columns=['id']).num_rows:,} rows in buckets {buckets}")
        print(
            report("Dynamic vs fixed bucket: initial write", initial_ms, "fixed bucket=4", "dynamic_initial")
        )
        print()
        print(report("Dynamic vs fixed bucket: upsert commit", upsert_ms, "fixed bucket=4", "dynamic_upsert"))
        print(f"\npeak RSS {peak_rss_mb():.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
