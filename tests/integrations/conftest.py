"""Shared by the engine tests: a primary-key table with many files (overlapping upserts, deletes, nulls, NaN,
a struct column), built once per module."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("p", pa.string()),
        ("n", pa.int32()),
        ("f", pa.float64()),
        ("b", pa.bool_()),
        ("addr", pa.struct([("city", pa.string()), ("zip", pa.int32())])),
    ]
)


def _rows(ids: list[int], round_: int) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "p": [None if i % 11 == 0 else f"p{(i + round_) % 4}" for i in ids],
            "n": [None if i % 5 == 0 else (i * 7 + round_) % 50 - 10 for i in ids],
            "f": [math.nan if i % 13 == 0 else None if i % 9 == 0 else (i % 17) / 4 - 1 for i in ids],
            "b": [None if i % 6 == 0 else (i + round_) % 2 == 0 for i in ids],
            "addr": [None if i % 8 == 0 else {"city": f"c{i % 3}", "zip": i % 20} for i in ids],
        },
        schema=SCHEMA,
    )


def make_table(root: Path) -> lsmlake.Table:
    """Eight level-0 files in one bucket: disjoint key ranges, then upserts over two of them and deletes,
    so planning can prune by key and the read merges where files overlap."""
    catalog = lsmlake.Catalog(str(root))
    catalog.create_database("db")
    options = {"bucket": "1", "write-only": "true", "read.batch-size": "16"}
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=options)
    for k in range(6):
        table.write(_rows(list(range(k * 40, k * 40 + 40)), 0))
    table.write(_rows(list(range(30, 90, 2)), 1))
    table.delete(pa.table({"id": pa.array([31, 33, 200, 201], pa.int64())}))
    return table


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> lsmlake.Table:
    """Built once per module: the tests only read it."""
    return make_table(tmp_path_factory.mktemp("wh"))
