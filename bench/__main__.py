"""``python -m bench``: lsmlake vs pypaimon (pure Python and Rust) vs the raw Parquet limit, side by side."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import lsmlake
from bench.common import RESULTS, machine, make_rows, peak_rss_mb
from bench.java_system import JVM_FLAGS, JavaSystem
from bench.java_system import NAME as JAVA
from bench.lookup import lookup_scenarios, lookup_summary
from bench.lsm import UPSERT_COMMITS, live_paths, upserts
from bench.systems import LsmlakeSystem, PypaimonSystem, checksum, save_ipc

NOT_SUPPORTED = "not supported"
PAIRED_FULL_READ = "5c. full read, timed in turn with 5a"


@dataclass
class Row:
    """One system in one scenario: timings of each repetition, result checksum, notes."""

    scenario: str
    system: str
    rows: int
    seconds: list[float] = field(default_factory=list)
    check: dict[str, Any] | None = None
    note: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def rows_per_s(self) -> float | None:
        m = self.median
        return self.rows / m if m else None


class Bench:
    """Runs every scenario for every system, alternating systems within each repetition."""

    def __init__(
        self,
        rows: int,
        repeats: int,
        pypaimon_repeats: int,
        systems: list[str],
        work: Path,
        scenarios: str = "all",
    ) -> None:
        self.n, self.repeats, self.py_repeats = rows, repeats, pypaimon_repeats
        self.scenarios = scenarios
        self.work = work
        self.data = make_rows(rows)
        self.upsert_batches = [upserts(self.data, i) for i in range(UPSERT_COMMITS)]
        self.data_file = save_ipc(self.data, work / "data.arrow")
        self.upsert_files = [
            save_ipc(b, work / f"upsert{i}.arrow") for i, b in enumerate(self.upsert_batches)
        ]
        self.pypaimon = [PypaimonSystem(native=False)] if "pypaimon" in systems else []
        self.pypaimon += [PypaimonSystem(native=True)] if "pypaimon-rust" in systems else []
        self.rows: list[Row] = []
        self.counter = 0
        self.scratch = LsmlakeSystem.create(work / "scratch", self.data.schema, dv=False)
        self.java_upserts = [f"upsert{i}" for i in range(UPSERT_COMMITS)]
        self.java_mor = self.java_dv = work
        self.java = (
            JavaSystem.start(
                work,
                dict(zip(["data", *self.java_upserts], [self.data, *self.upsert_batches], strict=True)),
                [flt for _, _, flt in self.filter_cases()],
            )
            if JAVA in systems
            else None
        )

    def filter_cases(self) -> list[tuple[str, str, list[Any]]]:
        """Scenarios 5a and 5b: name, lsmlake's filter, the filter as the other systems get it."""
        lo, width = self.n // 2, max(self.n // 1000, 1)
        return [
            (
                f"5a. id BETWEEN, {width:,} keys (0.1%)",
                f"id BETWEEN {lo} AND {lo + width - 1}",
                ["between", lo, lo + width - 1],
            ),
            ("5b. amount > 990 (1%)", "amount > 990", ["gt", 990.0]),
        ]

    def warm_write(self) -> None:
        """An untimed small write (the counterpart of pypaimon's warm-up write)."""
        self.scratch.write(self.data.slice(0, 1000))

    def warm_raw_write(self) -> None:
        pq.write_table(self.data.slice(0, 1000), self.work / "scratch.parquet", compression="zstd")

    def fresh(self, tag: str) -> Path:
        self.counter += 1
        return self.work / f"{tag}-{self.counter}"

    def row(self, scenario: str, system: str, rows: int, note: str = "") -> Row:
        r = Row(scenario, system, rows, note=note)
        self.rows.append(r)
        return r

    def reps(self, system: str) -> int:
        return self.py_repeats if system == "pypaimon" else self.repeats

    def run(self) -> None:
        """Every scenario in order; the JVM (if any) stops at the end."""
        try:
            lsm_wh, py_wh = self.write_and_upserts()
            if self.scenarios == "lookup":  # the tables, then only the lookups
                lookup_scenarios(self, self.deletion_vectors(), py_wh)
                return
            mor = self.merge_reads(lsm_wh, py_wh)
            dv = self.deletion_vectors()
            self.filtered(mor, dv, py_wh)
            lookup_scenarios(self, dv, py_wh)
            self.compaction(lsm_wh)
        finally:
            if self.java:
                self.java.close()

    # -- scenarios
    def write_and_upserts(self) -> tuple[Path, dict[str, Path]]:
        n = self.n
        upsert_rows = sum(b.num_rows for b in self.upsert_batches)
        w_base = self.row("1. initial write", "baseline: pyarrow.parquet.write_table", n)
        w_lsm = self.row("1. initial write", "lsmlake", n)
        u_lsm = self.row(f"2. {UPSERT_COMMITS} upsert commits of 30%", "lsmlake", upsert_rows)
        w_py = {p.name: self.row("1. initial write", p.name, n) for p in self.pypaimon}
        u_py = {
            p.name: self.row(f"2. {UPSERT_COMMITS} upsert commits of 30%", p.name, upsert_rows)
            for p in self.pypaimon
        }
        w_java = self.row("1. initial write", JAVA, n) if self.java else None
        u_java = self.row(u_lsm.scenario, JAVA, upsert_rows) if self.java else None
        lsm_wh: Path = self.work
        py_wh: dict[str, Path] = {}
        for rep in range(self.repeats):
            path = self.fresh("raw") / "data.parquet"
            path.parent.mkdir(parents=True)
            w_base.seconds.append(
                LsmlakeSystem.timed(
                    lambda p=path: pq.write_table(self.data, p, compression="zstd", compression_level=1),
                    warmup=self.warm_raw_write,
                )[0]
            )
            lsm_wh = self.fresh("lsm")
            table = LsmlakeSystem.create(lsm_wh, self.data.schema, dv=False)
            w_lsm.seconds.append(LsmlakeSystem.timed(lambda t=table: t.write(self.data), self.warm_write)[0])
            u_lsm.seconds.append(
                LsmlakeSystem.timed(
                    lambda t=table: [t.write(b) for b in self.upsert_batches], self.warm_write
                )[0]
            )
            for p in self.pypaimon:
                if rep < self.reps(p.name):
                    wh = py_wh[p.name] = self.fresh(p.name)
                    w_py[p.name].seconds.append(p.write(wh, self.data_file))
                    u_py[p.name].seconds.append(p.upserts(wh, self.upsert_files))
            if self.java and w_java and u_java:
                self.java_mor = self.fresh(JAVA)
                w_java.seconds.append(self.java.write(self.java_mor, ["data"]))
                u_java.seconds.append(self.java.write(self.java_mor, self.java_upserts))
        return lsm_wh, py_wh

    def java_read(self, row: Row | None, warehouse: Path, flt: list[Any] | None = None) -> None:
        """One timed Java read into ``row``, with its checksum (and, for filtered reads, its row count)."""
        if self.java and row:
            s, check = self.java.read(warehouse, flt)
            row.seconds.append(s)
            row.check = check
            row.rows = check["rows"] if flt else row.rows

    def merge_reads(self, lsm_wh: Path, py_wh: dict[str, Path]) -> Any:
        mor = lsmlake.Catalog(str(lsm_wh)).open_table("db.t")
        files = live_paths(mor)
        scenario = "3. full merge-on-read (no compaction)"
        base = self.row(scenario, "baseline: raw parquet read of the same files", self.n)
        lsm = self.row(scenario, "lsmlake", self.n)
        py = {p.name: self.row(scenario, p.name, self.n) for p in self.pypaimon}
        java = self.row(scenario, JAVA, self.n) if self.java else None
        for rep in range(self.repeats):
            base.seconds.append(LsmlakeSystem.timed(lambda: raw_read(files), lambda: raw_read(files))[0])
            s, out = LsmlakeSystem.timed(mor.read, mor.read)
            lsm.seconds.append(s)
            lsm.check = checksum(out)
            self.java_read(java, self.java_mor)
            for p in self.pypaimon:
                if rep < self.reps(p.name):
                    s, check = p.read(py_wh[p.name])
                    py[p.name].seconds.append(s)
                    py[p.name].check = {k: check[k] for k in ("rows", "id_sum", "amount_sum")}
        return mor

    def deletion_vectors(self) -> Any:
        n = self.n
        scenario = "4. deletion vectors: full read after compaction"
        wh = self.fresh("dv")
        dv = LsmlakeSystem.create(wh, self.data.schema, dv=True)
        write_s, _ = LsmlakeSystem.timed(
            lambda: [dv.write(b) for b in [self.data, *self.upsert_batches]], self.warm_write
        )
        self.row(
            "4a. write + 3 upserts with compaction + DV",
            "lsmlake",
            n + sum(b.num_rows for b in self.upsert_batches),
        ).seconds.append(write_s)
        if self.java:
            self.java_dv = self.fresh(JAVA + "-dv")
            self.row(
                "4a. write + 3 upserts with compaction + DV",
                JAVA,
                n + sum(b.num_rows for b in self.upsert_batches),
            ).seconds.append(self.java.write(self.java_dv, ["data", *self.java_upserts], dv=True))
        files = live_paths(dv)
        base = self.row(scenario, "baseline: raw parquet read of the same files", n)
        lsm = self.row(scenario, "lsmlake", n)
        java = self.row(scenario, JAVA, n) if self.java else None
        for _ in range(self.repeats):
            base.seconds.append(LsmlakeSystem.timed(lambda: raw_read(files), lambda: raw_read(files))[0])
            s, out = LsmlakeSystem.timed(dv.read, dv.read)
            lsm.seconds.append(s)
            lsm.check = checksum(out)
            self.java_read(java, self.java_dv)
        for p in self.pypaimon:
            self.row(scenario, p.name, n, note=f"{NOT_SUPPORTED}: pypaimon cannot compact or write DVs")
        return dv

    def filtered(self, mor: Any, dv: Any, py_wh: dict[str, Path]) -> None:
        n = self.n
        for scenario, where, flt in self.filter_cases():
            rows = {
                "mor": self.row(scenario, "lsmlake merge-on-read", 0),
                "dv": self.row(scenario, "lsmlake deletion vectors", 0),
            }
            # the key-range read is compared with a full read of the same table, timed in turn with it
            # so that both see the same machine load
            paired = (
                {
                    "mor": self.row(PAIRED_FULL_READ, "lsmlake merge-on-read", n),
                    "dv": self.row(PAIRED_FULL_READ, "lsmlake deletion vectors", n),
                }
                if scenario.startswith("5a.")
                else {}
            )
            py = {p.name: self.row(scenario, p.name, 0) for p in self.pypaimon}
            java = {
                wh: self.row(scenario, f"{JAVA} {kind}", 0) if self.java else None
                for wh, kind in ((self.java_mor, "merge-on-read"), (self.java_dv, "deletion vectors"))
            }
            for rep in range(self.repeats):
                # what follows a pypaimon process runs slower: every other repetition reverses the order
                tables = [("mor", mor), ("dv", dv)]
                for key, table in tables if rep % 2 == 0 else tables[::-1]:
                    steps = [(rows[key], partial(table.read, filter=where))]
                    steps += [(paired[key], table.read)] if key in paired else []
                    for row, read in steps if rep % 2 == 0 else steps[::-1]:
                        s, out = LsmlakeSystem.timed(read, read)
                        row.seconds.append(s)
                        row.check = checksum(out)
                        row.rows = out.num_rows
                for p in self.pypaimon:
                    if rep < self.reps(p.name):
                        s, check = p.read(py_wh[p.name], flt)
                        py[p.name].seconds.append(s)
                        py[p.name].check = {k: check[k] for k in ("rows", "id_sum", "amount_sum")}
                        py[p.name].rows = check["rows"]
                for wh, java_row in java.items():
                    self.java_read(java_row, wh, flt)

    def compaction(self, lsm_wh: Path) -> None:
        rows = self.n + sum(b.num_rows for b in self.upsert_batches)
        r = self.row("6. full compaction of the merge-on-read table", "lsmlake", rows)
        table = lsmlake.Catalog(str(lsm_wh)).open_table("db.t").with_options({"write-only": "false"})
        r.seconds.append(LsmlakeSystem.timed(lambda: table.compact(full=True), self.warm_write)[0])
        r.check = checksum(table.read())
        for p in self.pypaimon:
            self.row(r.scenario, p.name, rows, note=f"{NOT_SUPPORTED}: pypaimon has no compaction")
        if self.java:
            java = self.row(r.scenario, JAVA, rows)
            s, java.check = self.java.compact(self.java_mor, "data")
            java.seconds.append(s)


def raw_read(files: list[str]) -> pa.Table:
    """The physical baseline: every column of the files, read by pyarrow."""
    return pa.concat_tables([pq.read_table(f) for f in files])


def verify(rows: list[Row]) -> list[str]:
    """Checksums of one scenario must agree across systems: a fast wrong answer fails the bench."""
    problems = []
    by_scenario: dict[str, list[Row]] = {}
    for r in rows:
        if r.check is not None:
            by_scenario.setdefault(r.scenario, []).append(r)
    for scenario, rs in by_scenario.items():
        if any(r.check != rs[0].check for r in rs):
            problems.append(f"{scenario}: results differ: " + "; ".join(f"{r.system}={r.check}" for r in rs))
    return problems


def pruning_summary(rows: list[Row]) -> str:
    """How much faster the 0.1% key-range read is than the full read of the same table (5a against 5c,
    measured in alternation)."""

    def median(scenario_prefix: str, system: str) -> float | None:
        for r in rows:
            if r.scenario.startswith(scenario_prefix) and r.system == system:
                return r.median
        return None

    pairs = [
        (name, median(PAIRED_FULL_READ, system), median("5a.", system))
        for name, system in (
            ("merge-on-read", "lsmlake merge-on-read"),
            ("deletion vectors", "lsmlake deletion vectors"),
        )
    ]
    return "\n".join(
        f"key-range read (0.1%) vs full read, {name} table: {full / part:.1f}x faster "
        f"({part * 1000:.1f} ms vs {full * 1000:.1f} ms)"
        for name, full, part in pairs
        if full and part
    )


def markdown(rows: list[Row]) -> str:
    lines = [
        "| scenario | system | rows | median s | rows/s | vs first row | note |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    first: dict[str, Row] = {}
    for r in sorted(rows, key=lambda r: r.scenario.split(".")[0]):
        b = first.setdefault(r.scenario, r)
        ratio = (
            f"{r.rows_per_s / b.rows_per_s:.2f}x"
            if r.rows_per_s and b.rows_per_s and r.rows and b.rows and r.rows == b.rows
            else (f"{b.median / r.median:.2f}x" if r.median and b.median else "")
        )
        lines.append(
            f"| {r.scenario} | {r.system} | {r.rows:,} | "
            f"{'' if r.median is None else f'{r.median:.3f}'} | "
            f"{'' if r.rows_per_s is None else f'{r.rows_per_s:,.0f}'} | {ratio} | {r.note} |"
        )
    return "\n".join(lines)


def chart(rows: list[Row], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # optional: `pip install -e .[bench]`
        print("(matplotlib not installed: no chart)")
        return
    timed = [r for r in rows if r.rows_per_s]
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(timed) + 1))
    ax.barh([f"{r.scenario} | {r.system}" for r in timed], [r.rows_per_s or 0 for r in timed])
    ax.set_xscale("log")
    ax.set_xlabel("rows/s (log)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--pypaimon-repeats", type=int, default=1, help="repetitions of the slow pure-Python runs"
    )
    parser.add_argument("--systems", default=f"lsmlake,pypaimon,pypaimon-rust,{JAVA}")
    parser.add_argument("--quick", action="store_true", help="100k rows, 2 repetitions (CI-sized)")
    parser.add_argument(
        "--scenarios",
        choices=["all", "lookup"],
        default="all",
        help="lookup: write the tables, then time only the point lookups (e.g. with --rows 10000000)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.repeats = min(args.rows, 100_000), 2
    work = Path(tempfile.mkdtemp(prefix="lsmlake-bench-"))
    try:
        bench = Bench(
            args.rows, args.repeats, args.pypaimon_repeats, args.systems.split(","), work, args.scenarios
        )
        bench.run()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = markdown(bench.rows)
    print(
        f"machine: {machine()}; N = {args.rows:,}; medians of {args.repeats} (pure pypaimon: "
        f"{args.pypaimon_repeats}); lsmlake peak RSS {peak_rss_mb():.0f} MB"
        + (f"; {JAVA}: Paimon {bench.java.version} in one JVM ({' '.join(JVM_FLAGS)})" if bench.java else "")
        + "\n"
    )
    print(text)
    summary = "\n".join(x for x in (pruning_summary(bench.rows), lookup_summary(bench.rows)) if x)
    print("\n" + summary)
    RESULTS.mkdir(exist_ok=True)
    stem = f"bench-{args.rows}" + ("-lookup" if args.scenarios == "lookup" else "")
    (RESULTS / f"{stem}.json").write_text(
        json.dumps(
            {
                "machine": machine(),
                "rows": args.rows,
                "results": [
                    {**asdict(r), "median": r.median, "rows_per_s": r.rows_per_s} for r in bench.rows
                ],
            },
            indent=2,
        )
    )
    (RESULTS / f"{stem}.md").write_text(text + "\n\n" + summary + "\n")
    chart(bench.rows, RESULTS / f"{stem}.png")
    problems = verify(bench.rows)
    for p in problems:
        print("CHECK FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
