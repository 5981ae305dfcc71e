"""`lsmlake sql` on a 1.5M-row table, in a subprocess: `SELECT *` prints its first rows long before the
table is read through, within a stated memory bound, and COPY to Parquet equals `table.read()`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lsmlake.catalog import Catalog
from lsmlake.sql import execute

pytestmark = pytest.mark.slow

ROWS = 1_500_000
FIRST_ROW_SECONDS = 15.0  # measured about 1-2 s on an idle machine, 5-7 s at load 15 on 2 cores
PEAK_RSS_MB = 700  # measured about 240 MB: the whole table in Arrow is about 60 MB, results stream


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("big") / "wh")
    catalog = Catalog(path)
    execute(
        catalog,
        "CREATE DATABASE db; CREATE TABLE db.big (id BIGINT, name STRING, v DOUBLE, k INT,"
        " PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')",
    )
    ids = pa.array(np.arange(ROWS, dtype=np.int64))
    names = pc.binary_join_element_wise("name-", pc.cast(ids, pa.string()), "")
    k = pa.array((np.arange(ROWS) % 97).astype(np.int32))
    catalog.open_table("db.big").write(
        pa.table({"id": ids, "name": names, "v": pc.multiply(ids, 0.5), "k": k})
    )
    return path


# The child reports its own peak (VmHWM belongs to the address space exec made): ru_maxrss from
# wait4 would start at the pytest worker's own RSS, which Linux keeps across fork and exec.
_REPORT_PEAK = """
import atexit, os, runpy, sys
def _peak():
    with open("/proc/self/status") as status, open(os.environ["LSMLAKE_TEST_PEAK_FILE"], "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(_peak)
sys.argv = ["lsmlake", *sys.argv[1:]]
runpy.run_module("lsmlake", run_name="__main__")
"""


def run_cli(*args: str) -> tuple[float, bytes, bytes, int, int]:
    """Seconds to the first data row on stdout, stdout, stderr, exit code and peak RSS in MB."""
    handle, peak_path = tempfile.mkstemp(suffix=".peak")
    os.close(handle)
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _REPORT_PEAK, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "LSMLAKE_TEST_PEAK_FILE": peak_path},
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = None
    out = []
    for line in proc.stdout:
        out.append(line)
        if first is None and line.strip()[:1].isdigit():
            first = time.monotonic() - start
    err = proc.stderr.read()
    code = proc.wait()
    assert first is not None, (b"".join(out)[:500], err[-2000:])
    peak_kb = int(Path(peak_path).read_text() or 0)
    os.unlink(peak_path)
    return first, b"".join(out), err, code, peak_kb // 1024


def test_select_star_prints_its_first_rows_at_once(warehouse: str) -> None:
    first, out, err, code, rss = run_cli("-w", warehouse, "sql", "SELECT * FROM db.big")
    print(f"table: first row after {first:.2f} s, peak RSS {rss} MB")
    assert code == 0, err
    assert first < FIRST_ROW_SECONDS and rss < PEAK_RSS_MB
    assert f"{ROWS} rows, 40 shown".encode() in out


def test_csv_streams_every_row(warehouse: str) -> None:
    first, out, err, code, rss = run_cli("-w", warehouse, "-o", "csv", "sql", "SELECT * FROM db.big")
    print(f"csv: first row after {first:.2f} s, peak RSS {rss} MB")
    assert code == 0, err
    assert first < FIRST_ROW_SECONDS and rss < PEAK_RSS_MB
    assert out.count(b"\n") == ROWS + 1


def test_copy_to_parquet_equals_the_table(warehouse: str, tmp_path: Path) -> None:
    target = tmp_path / "big.parquet"
    (result,) = execute(Catalog(warehouse), f"COPY (SELECT * FROM db.big) TO '{target}'")
    assert result.message == f"copied {ROWS} row(s) to {target}"
    expected = Catalog(warehouse).open_table("db.big").read()
    # DuckDB's result schema drops the NOT NULL of the key column; the values and their order are equal
    assert pq.read_table(target).cast(expected.schema).equals(expected)
