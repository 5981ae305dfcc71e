"""Merge engines side by side: write + read throughput of each on the same workload as deduplicate.

``python -m bench.engines [--rows N]``: a 1M-row load then three commits upserting 30% of the keys
(``bench.lsm.upserts``), read back with merge-on-read (``write-only``, so every commit stays a
level-0 run) and after a full compaction. Partial-update gets rows with half their columns null;
aggregation sums ``amount`` and ``qty``, keeps the max ``ts`` and the last non-null ``name``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import lsmlake
from bench.common import make_rows
from bench.lsm import UPSERT_COMMITS, upserts

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row"},
    "partial-update": {"merge-engine": "partial-update"},
    "partial-update + sequence group": {
        "merge-engine": "partial-update",
        "fields.ts.sequence-group": "amount,qty",
    },
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.amount.aggregate-function": "sum",
        "fields.qty.aggregate-function": "sum",
        "fields.ts.aggregate-function": "max",
    },
}


def partial(batch: pa.Table, commit: int) -> pa.Table:
    """Null out half the value columns, alternating per commit, as partial updates do."""
    out = batch
    for i, name in enumerate(("name", "amount", "qty")):
        if (i + commit) % 2:
            nulls = pa.nulls(out.num_rows, out.schema.field(name).type)
            out = out.set_column(out.schema.get_field_index(name), name, nulls)
    return out


def run(engine: str, options: dict[str, str], data: pa.Table, work: Path) -> dict[str, float]:
    root = work / engine.replace(" ", "_").replace("+", "")
    cat = lsmlake.Catalog(str(root))
    cat.create_database("db", exist_ok=True)
    table = cat.create_table(
        "db.t",
        schema=data.schema,
        primary_key=["id"],
        options={"bucket": "4", "write-only": "true", **options},
    )
    batches = [upserts(data, i) for i in range(UPSERT_COMMITS)]
    if options.get("merge-engine") == "partial-update":
        batches = [partial(b, i) for i, b in enumerate(batches)]
    written = data.num_rows + sum(b.num_rows for b in batches)
    start = time.perf_counter()
    table.write(data)
    for b in batches:
        table.write(b)
    write_s = time.perf_counter() - start
    reader = table.with_options({"write-only": "false"})
    start = time.perf_counter()
    merged = reader.read()  # first-row: empty, batch reads skip level 0 as Paimon's do
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    reader.compact(full=True)
    compact_s = time.perf_counter() - start
    start = time.perf_counter()
    after = reader.read()
    read_compacted_s = time.perf_counter() - start
    assert after.num_rows == merged.num_rows or options.get("merge-engine") == "first-row"
    shutil.rmtree(root, ignore_errors=True)
    return {
        "write rows/s": written / write_s,
        "merge read rows/s": written / read_s if merged.num_rows else 0.0,
        "compact s": compact_s,
        "read after compaction rows/s": after.num_rows / read_compacted_s,
        "rows": float(after.num_rows),
        "checksum": float(pc.sum(after.column("qty")).as_py() or 0),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    data = make_rows(args.rows)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for engine, options in ENGINES.items():
            results[engine] = run(engine, options, data, Path(tmp))
    base = results["deduplicate"]
    print(
        f"{'engine':34} {'write r/s':>12} {'MOR read r/s':>13} {'full compact':>13} {'read r/s':>12}  "
        "MOR vs dedup"
    )
    for engine, r in results.items():
        ratio = r["merge read rows/s"] / base["merge read rows/s"] if base["merge read rows/s"] else 0
        mor = f"{r['merge read rows/s']:13,.0f}" if r["merge read rows/s"] else f"{'(level 0 hidden)':>13}"
        print(
            f"{engine:34} {r['write rows/s']:12,.0f} {mor} {r['compact s']:12.2f}s "
            f"{r['read after compaction rows/s']:12,.0f}  read x{ratio:.2f}"
        )


if __name__ == "__main__":
    main()
