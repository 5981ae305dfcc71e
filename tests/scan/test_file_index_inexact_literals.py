"""A literal the index cannot hold exactly (a double between two 32-bit floats, a time between two
milliseconds) never prunes: rounded, `!=` and strict comparisons would drop rows that match."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lsmlake

SCHEMA = pa.schema([("id", pa.int64()), ("f", pa.float32()), ("t", pa.time32("ms"))])
ROWS = {
    "id": [1, 2, 3],
    "f": pa.array([0.1, 0.1, 0.5], pa.float32()),
    "t": pa.array([dt.time(10, 0), dt.time(10, 0), dt.time(11, 0)], pa.time32("ms")),
}
FILTERS = [
    "f != 0.1",
    "f = 0.1",
    "f != 0.5",
    "t != TIME '10:00:00.0005'",
    "t < TIME '10:00:00.0005'",
    "t <= TIME '10:00:00.0005'",
    "t > TIME '09:59:59.9995'",
    "t = TIME '10:00:00'",
]


@pytest.mark.parametrize("index", ["bitmap", "bsi"])
def test_index_answers_equal_unindexed_reads(catalog: lsmlake.Catalog, index: str) -> None:
    columns = "f,t" if index == "bitmap" else "t"
    indexed = catalog.create_table(
        "db.indexed", schema=SCHEMA, options={f"file-index.{index}.columns": columns}
    )
    plain = catalog.create_table("db.plain", schema=SCHEMA)
    rows = pa.table(ROWS, schema=SCHEMA)
    for t in (indexed, plain):
        for i in range(rows.num_rows):  # one file per row: the index decides about each alone
            t.write(rows.slice(i, 1))
        t.write(pa.table({"id": [4, 5], "f": ROWS["f"][1:], "t": ROWS["t"][1:]}, schema=SCHEMA))
    for where in FILTERS:
        got = sorted(indexed.read(filter=where).column("id").to_pylist())
        assert got == sorted(plain.read(filter=where).column("id").to_pylist()), where
    # the index still prunes with literals it holds exactly (the last file's stats span 10:30)
    assert len(indexed.scan(filter="t = TIME '10:30:00'").plan.counts.by_file_index) == 1
