"""Initial write of N rows into a 4-bucket primary-key table (parquet and avro data files) vs
pyarrow.parquet.write_table of the same rows."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

import lsmlake
from bench.common import make_rows, peak_rss_mb, report, time_alternating


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    data = make_rows(args.rows)
    work = Path(tempfile.mkdtemp(prefix="lsmlake-bench-"))
    counter = iter(range(1_000_000))

    def lsmlake_write(file_format: str = "parquet") -> None:
        wh = work / f"wh{next(counter)}"
        cat = lsmlake.Catalog(str(wh))
        cat.create_database("db")
        options = {"bucket": "4", "file.format": file_format}
        table = cat.create_table("db.t", schema=data.schema, primary_key=["id"], options=options)
        table.write(data)

    def parquet_write() -> None:
        pq.write_table(data, work / f"raw{next(counter)}.parquet", compression="zstd", compression_level=1)

    try:
        ms = time_alternating(
            "initial write, 4 buckets",
            args.rows,
            {
                "pyarrow.parquet.write_table": parquet_write,
                "lsmlake": lsmlake_write,
                "lsmlake (file.format=avro)": lambda: lsmlake_write("avro"),
            },
            args.repeats,
        )
        print(report("Write benchmark", ms, "pyarrow.parquet.write_table", "write"))
        print(f"\npeak RSS {peak_rss_mb():.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
