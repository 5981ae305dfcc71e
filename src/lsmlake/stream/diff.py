"""The difference between two merged snapshots of a primary-key table, as rows with row kinds (+I, +U, -D)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.read.split_read import ROW_KIND_COLUMN

_SIDE = "__lsmlake_diff_side"
_KINDS = pa.array(["+I", "+U", "-D"], pa.string())
INSERT, UPDATE, DELETE = 0, 1, 2


def _equal(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
    """Null-safe element-wise equality of two equally long columns (nested types compared as values)."""
    try:
        eq = pc.equal(a, b)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same = pc.or_kleene(pc.fill_null(eq, False), both_null)
        return np.asarray(pc.fill_null(same, False).to_numpy(zero_copy_only=False), dtype=bool)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)], dtype=bool)


def diff_rows(before: pa.Table, after: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Rows that turn ``before`` into ``after`` (each holds every key at most once), in key order.

    A key only in ``after`` gives ``+I`` (its new row), a key whose values changed ``+U`` (its new row),
    and a key only in ``before`` ``-D`` (its old row); unchanged keys give nothing. The result has a
    ``rowkind`` column first, then the columns of ``after``.
    """
    if not keys:
        raise ValueError("a diff needs the primary-key columns")
    schema = after.schema
    if before.schema.names != schema.names:
        raise ValueError(f"cannot diff tables of different columns: {before.schema.names} vs {schema.names}")
    both = pa.concat_tables(
        [
            before.cast(schema).append_column(_SIDE, pa.array(np.zeros(before.num_rows, np.int8))),
            after.append_column(_SIDE, pa.array(np.ones(after.num_rows, np.int8))),
        ]
    )
    out_schema = pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), False), *schema])
    n = both.num_rows
    if n == 0:
        return out_schema.empty_table()
    order = pc.sort_indices(both, sort_keys=[*((k, "ascending") for k in keys), (_SIDE, "ascending")])
    rows = both.take(order)
    side = rows.column(_SIDE).to_numpy()
    same_key = np.ones(n - 1, dtype=bool)
    for k in keys:
        col = rows.column(k)
        same_key &= _equal(col.slice(0, n - 1), col.slice(1))
    first = np.zeros(n, dtype=bool)
    first[:-1] = same_key
    second = np.zeros(n, dtype=bool)
    second[1:] = same_key
    single = ~(first | second)
    starts = np.flatnonzero(first)
    ends = starts + 1
    changed = np.zeros(len(starts), dtype=bool)
    if len(starts):
        for name in schema.names:
            if name in keys:
                continue
            col = rows.column(name)
            changed |= ~_equal(col.take(pa.array(starts)), col.take(pa.array(ends)))
    picked = [np.flatnonzero(single & (side == 1)), ends[changed], np.flatnonzero(single & (side == 0))]
    kinds = np.concatenate(
        [np.full(len(p), kind, np.int64) for p, kind in zip(picked, (INSERT, UPDATE, DELETE), strict=True)]
    )
    positions = np.concatenate(picked)
    ordered = np.argsort(positions, kind="stable")
    taken = rows.drop_columns([_SIDE]).take(pa.array(positions[ordered]))
    return pa.Table.from_arrays([_KINDS.take(pa.array(kinds[ordered])), *taken.columns], schema=out_schema)
