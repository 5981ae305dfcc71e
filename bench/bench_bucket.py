"""Throughput of vectorized bucket_ids versus a pure-Python per-row encode_row + hash loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.core.binary_row import encode_row, hash_row_bytes
from lsmlake.core.bucket import bucket_for_hash, bucket_ids
from lsmlake.core.types import MAX_LENGTH, DataType

ROWS = 1_000_000
SAMPLE = 20_000
BUCKETS = 4


def best_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    """Fastest wall time of ``repeat`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def random_strings(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` ASCII strings with lengths uniform in 4..20, built without a Python loop."""
    lengths = rng.integers(4, 21, size=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, size=int(offsets[-1]), dtype=np.uint8)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def bench(label: str, column: pa.Array, key_type: DataType) -> None:
    types = [key_type]
    vectorized = ROWS / best_of(lambda: bucket_ids([column], types, BUCKETS), repeat=5)
    sample = column.slice(0, SAMPLE).to_pylist()

    def python_loop() -> list[int]:
        return [bucket_for_hash(hash_row_bytes(encode_row([v], types)), BUCKETS) for v in sample]

    python = SAMPLE / best_of(python_loop)
    expected = np.array(python_loop(), dtype=np.int32)
    agree = (bucket_ids([column.slice(0, SAMPLE)], types, BUCKETS) == expected).all()
    assert agree, "vectorized and pure-Python buckets disagree"
    print(f"{label:<28} {vectorized:>14,.0f} {python:>14,.0f} {vectorized / python:>8.1f}x")


def main() -> None:
    rng = np.random.default_rng(7)
    print(f"{ROWS:,} rows, {BUCKETS} buckets (python baseline extrapolated from {SAMPLE:,} rows)")
    print(f"{'key':<28} {'bucket_ids rows/s':>14} {'python rows/s':>14} {'ratio':>9}")
    ints = pa.array(rng.integers(-(2**63), 2**63 - 1, size=ROWS, dtype=np.int64))
    bench("BIGINT", ints, DataType("BIGINT"))
    bench("STRING (len 4..20)", random_strings(rng, ROWS), DataType("VARCHAR", length=MAX_LENGTH))


if __name__ == "__main__":
    main()
