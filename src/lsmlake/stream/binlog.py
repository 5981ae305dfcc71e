"""Binlog layout (Paimon's `$binlog`): each data column as an array, a -U/+U pair packed into one +U row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lsmlake.read.split_read import ROW_KIND_COLUMN


def binlog_schema(changes: pa.Schema) -> pa.Schema:
    """``rowkind`` then every data column as a list of its (nullable) type."""
    fields = [changes.field(ROW_KIND_COLUMN)]
    fields += [
        pa.field(f.name, pa.list_(pa.field("element", f.type, True)))
        for f in changes
        if f.name != ROW_KIND_COLUMN
    ]
    return pa.schema(fields)


def to_binlog(changes: pa.Table, *, pack_updates: bool = True) -> pa.Table:
    """Rows with a leading ``rowkind`` as binlog rows: ``[value]`` per column, and with ``pack_updates``
    each -U directly followed by +U becomes one +U row holding ``[before, after]`` (streaming reads)."""
    schema = binlog_schema(changes.schema)
    n = changes.num_rows
    kinds = changes.column(ROW_KIND_COLUMN).combine_chunks()
    paired = np.zeros(n, dtype=bool)
    if pack_updates and n > 1:
        k = kinds.to_numpy(zero_copy_only=False)
        paired[:-1] = (k[:-1] == "-U") & (k[1:] == "+U")
    begins = np.ones(n, dtype=bool)  # rows that begin a binlog row: all but the +U of a pair
    begins[1:] = ~paired[:-1]
    starts = np.flatnonzero(begins)
    offsets = pa.array(np.append(starts, n).astype(np.int32))
    out_kinds = kinds.take(pa.array(np.where(paired[starts], starts + 1, starts)))
    columns: list[pa.Array] = [out_kinds]
    for f in schema:
        if f.name == ROW_KIND_COLUMN:
            continue
        values = changes.column(f.name).combine_chunks()
        columns.append(pa.ListArray.from_arrays(offsets, values, type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)
