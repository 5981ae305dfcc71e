"""The Parquet footer cache weighs a footer by the memory it holds, so its byte bound bounds memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FILES = 40

# In a fresh process (freed memory of other tests would hide the growth): cache the footer and the
# statistics of one column of every file, and report the RSS it took and what the cache says it holds.
CHILD = """
import json, sys
from pathlib import Path
from lsmlake.core.fileio import FileIO
from lsmlake.format.parquet_files import _footers, column_ranges

def rss():
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024

paths = sys.argv[2:]
io = FileIO.for_uri(sys.argv[1])[0]
column_ranges(io, paths[0], "k").typed_bounds  # warm up: code paths and allocator arenas
_footers.clear()
before = rss()
for path in paths:
    column_ranges(io, path, "k").typed_bounds
print(json.dumps({"rss": rss() - before, "nbytes": _footers.nbytes, "entries": len(_footers)}))
"""


def test_cached_footers_weigh_at_least_the_memory_they_hold(tmp_path: Path) -> None:
    rows = 200 * 512  # 200 row groups x 6 columns: a level-0 file of a large write has such footers
    table = pa.table(
        {
            "k": np.arange(rows, dtype=np.int64),
            "s": pa.array(np.arange(rows).astype(str)),
            "a": np.random.default_rng(0).random(rows),
            "b": np.arange(rows, dtype=np.int32),
            "_SEQUENCE_NUMBER": np.arange(rows, dtype=np.int64),
            "_VALUE_KIND": np.zeros(rows, dtype=np.int8),
        }
    )
    first = tmp_path / "f0.parquet"
    pq.write_table(table, first, row_group_size=512)
    paths = [str(first)]
    for i in range(1, FILES):
        link = tmp_path / f"f{i}.parquet"
        os.link(first, link)  # a footer is cached per path
        paths.append(str(link))
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), *paths],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    got = json.loads(done.stdout)
    assert got["entries"] == FILES
    serialized = pq.ParquetFile(first).metadata.serialized_size * FILES
    assert got["rss"] > 2 * serialized  # decoded footers hold several times their serialized bytes
    assert got["nbytes"] >= got["rss"]  # ... and the cache counts that, so its bound bounds memory
    assert got["nbytes"] <= 3 * got["rss"]  # without overcounting by much (the cache would hold few)
