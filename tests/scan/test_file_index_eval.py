"""Candidate rows from lsmlake-written indexes always hold every row the filter matches (random data and filters)."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lsmlake.core.binary_row import Timestamp
from lsmlake.core.types import DataType
from lsmlake.expr.tree import And, Compare, In, IsNotNull, IsNull, Or, Predicate
from lsmlake.format.file_index.bitmap import BITMAP, write_bitmap
from lsmlake.format.file_index.bloom import BLOOM_FILTER, hash_values, write_bloom
from lsmlake.format.file_index.bsi import BSI, write_bsi
from lsmlake.format.file_index.container import read_container, write_container
from lsmlake.format.file_index.keys import array_keys, distinct_live
from lsmlake.scan.file_index_eval import candidate_rows, parse_indexes

N = 300


def _column(root: str, rng: random.Random) -> tuple[DataType, pa.Array, list[Any]]:
    """A column of ``root`` with nulls and repeats: its type, Arrow array and the literals to probe with."""
    pool: list[Any]
    if root == "BIGINT":
        pool, arrow_type, t = (
            [rng.randint(-(2**40), 2**40) for _ in range(20)] + [0, -1],
            pa.int64(),
            DataType(root, True),
        )
    elif root == "VARCHAR":
        pool, arrow_type, t = (
            [f"s{rng.randint(0, 50)}" for _ in range(20)] + [""],
            pa.string(),
            DataType(root, True),
        )
    elif root == "DOUBLE":
        pool, arrow_type, t = [0.0, -0.0, 1.5, -2.25, 1e300, float("nan")], pa.float64(), DataType(root, True)
    elif root == "DECIMAL":
        pool = [Decimal(rng.randint(-99999, 99999)).scaleb(-2) for _ in range(15)]
        arrow_type, t = pa.decimal128(9, 2), DataType(root, True, precision=9, scale=2)
    else:  # TIMESTAMP(9): sub-microsecond values the micro-second index truncates
        base = dt.datetime(2024, 1, 1)
        pool = [
            pa.scalar(int(base.timestamp() * 1e9) + rng.randint(-5000, 5000), pa.timestamp("ns"))
            for _ in range(15)
        ]
        pool = [p.value for p in pool]
        arrow_type, t = pa.timestamp("ns"), DataType("TIMESTAMP", True, precision=9)
    values = [None if rng.random() < 0.1 else rng.choice(pool) for _ in range(N)]
    literals: list[Any] = pool + ([12345] if root == "BIGINT" else ["zz"] if root == "VARCHAR" else [])
    if root == "TIMESTAMP":
        literals = [Timestamp.from_epoch_nanos(v + d) for v in pool for d in (-1, 0, 1)]
        return t, pa.array(values, arrow_type), literals
    return t, pa.array(values, arrow_type), literals


def _indexes(t: DataType, arr: pa.Array) -> dict[str, bytes]:
    keys, nulls = array_keys(arr, t)
    out = {BITMAP: write_bitmap(keys, nulls, t)} if t.root != "DECIMAL" else {}
    if t.root in ("BIGINT", "DECIMAL", "TIMESTAMP"):
        out[BSI] = write_bsi(keys, nulls)
    if t.root != "DECIMAL":
        out[BLOOM_FILTER] = write_bloom(hash_values(distinct_live(keys, nulls), t), N, 0.05)
    return out


def _leaf(rng: random.Random, literals: list[Any]) -> Predicate:
    kind = rng.random()
    if kind < 0.1:
        return IsNull("c")
    if kind < 0.2:
        return IsNotNull("c")
    if kind < 0.4:
        return In("c", tuple(rng.sample(literals, min(3, len(literals)))))
    return Compare("c", rng.choice(["=", "=", "!=", "<", "<=", ">", ">="]), rng.choice(literals))


@pytest.mark.parametrize("root", ["BIGINT", "VARCHAR", "DOUBLE", "DECIMAL", "TIMESTAMP"])
def test_candidates_are_a_superset_of_the_matches(root: str) -> None:
    rng = random.Random(root)
    t, arr, literals = _column(root, rng)
    data = write_container({"c": _indexes(t, arr)})
    table = pa.table({"c": arr})
    pruned = 0
    for kind in (BITMAP, BSI, BLOOM_FILTER):
        blobs = [b for b in read_container(data, source="t") if b.index_type == kind]
        if not blobs:
            continue
        ix = parse_indexes(blobs, {"c": t}, N, source="t")
        for _ in range(150):
            p = _leaf(rng, literals)
            if rng.random() < 0.3:
                p = (And if rng.random() < 0.5 else Or)((p, _leaf(rng, literals)))
            matches = {i for i, hit in enumerate(p.mask(table).to_pylist()) if hit}
            rows = candidate_rows(p, ix)
            if rows is not None:
                assert matches <= set(rows), (kind, str(p))
                pruned += len(rows) < N
    assert pruned > 50  # the indexes do answer
