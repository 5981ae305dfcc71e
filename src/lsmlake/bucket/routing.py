"""Route rows to (partition, bucket) groups, vectorized over whole columns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.binary_row import serialize_row
from lsmlake.core.bucket import bucket_ids
from lsmlake.core.schema import TableSchema


@dataclass(frozen=True)
class RowGroup:
    """Rows of one (partition, bucket), as indices into the input in arrival order."""

    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    indices: np.ndarray


def _partition_codes(table: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """One int64 code per row, equal iff the rows' partition values are equal."""
    codes = np.zeros(table.num_rows, dtype=np.int64)
    for key in keys:
        encoded = pc.dictionary_encode(table.column(key)).combine_chunks()
        width = len(encoded.dictionary) + 1
        idx = pc.fill_null(encoded.indices, width - 1).to_numpy(zero_copy_only=False).astype(np.int64)
        codes = codes * width + idx
    return codes


def _dense_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys and each row's index among them, as the narrowest integers (radix-sortable)."""
    top = int(keys.max())
    if top >= (1 << 22):
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.astype(_narrowest(len(uniq)))
    uniq = np.flatnonzero(np.bincount(keys, minlength=top + 1))
    lookup = np.zeros(top + 1, dtype=_narrowest(len(uniq)))
    lookup[uniq] = np.arange(len(uniq))
    return uniq, lookup[keys]  # gathered straight into the narrow type


def _narrowest(distinct: int) -> type[np.integer]:
    return np.uint8 if distinct <= 256 else np.uint16 if distinct <= 65536 else np.int64


def route_rows(table: pa.Table, schema: TableSchema, num_buckets: int) -> list[RowGroup]:
    """Split rows by partition and bucket; a fixed bucket count hashes the bucket key like Java."""
    n = table.num_rows
    if n == 0:
        return []
    pkeys = list(schema.partition_keys)
    part_codes = _partition_codes(table, pkeys) if pkeys else np.zeros(n, dtype=np.int64)
    if num_buckets > 0:
        bkeys = list(schema.bucket_keys)
        buckets = bucket_ids(
            [table.column(k) for k in bkeys], [schema.field(k).type for k in bkeys], num_buckets
        ).astype(np.int64)
    else:
        buckets = np.zeros(n, dtype=np.int64)
    width = max(num_buckets, 1)
    group_key = part_codes * width + buckets
    uniq, inverse = _dense_codes(group_key)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    ptypes = [schema.field(k).type for k in pkeys]
    groups = []
    for g in range(len(uniq)):
        idx = order[bounds[g] : bounds[g + 1]]
        first = int(idx[0])
        values = tuple(table.column(k)[first].as_py() for k in pkeys)
        groups.append(RowGroup(serialize_row(list(values), ptypes), values, int(buckets[first]), idx))
    return groups
