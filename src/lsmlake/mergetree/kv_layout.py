"""The key-value file layout of primary-key tables: _KEY_* columns, sequence number, row kind, values."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataField, DataType, to_arrow_field

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_FIELD_ID_START = 2147483647 // 2
SEQUENCE_NUMBER_ID = 2147483646
VALUE_KIND_ID = 2147483645


class RowKind(IntEnum):
    """Paimon's row kinds as stored in _VALUE_KIND."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3


ROW_KIND_SHORT = {
    "+I": RowKind.INSERT,
    "-U": RowKind.UPDATE_BEFORE,
    "+U": RowKind.UPDATE_AFTER,
    "-D": RowKind.DELETE,
}


def key_fields(schema: TableSchema) -> list[DataField]:
    """The trimmed primary-key fields as they appear in a key-value file (``_KEY_<name>``)."""
    out = []
    for name in schema.trimmed_primary_keys:
        f = schema.field(name)
        out.append(DataField(KEY_FIELD_ID_START + f.id, KEY_PREFIX + name, f.type.copy(nullable=False)))
    return out


def kv_fields(schema: TableSchema) -> list[DataField]:
    """The columns of a primary-key data file (Paimon's KeyValue schema): keys, sequence, kind, values."""
    return [
        *key_fields(schema),
        DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, DataType("BIGINT", False)),
        DataField(VALUE_KIND_ID, VALUE_KIND, DataType("TINYINT", False)),
        *schema.fields,
    ]


def kv_arrow_schema(schema: TableSchema) -> pa.Schema:
    """Arrow schema of a primary-key data file, with Parquet field ids."""
    return pa.schema([to_arrow_field(f) for f in kv_fields(schema)])


def to_kv_table(rows: pa.Table, kinds: np.ndarray, sequence: np.ndarray, schema: TableSchema) -> pa.Table:
    """Lay out logical rows (in table schema) as a key-value file table."""
    arrow_schema = kv_arrow_schema(schema)
    columns: list[pa.Array | pa.ChunkedArray] = [rows.column(n) for n in schema.trimmed_primary_keys]
    columns.append(pa.array(sequence, pa.int64()))
    columns.append(pa.array(kinds.astype(np.int8), pa.int8()))
    columns.extend(rows.column(f.name) for f in schema.fields)
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def sort_by_key(
    table: pa.Table,
    key_names: Sequence[str],
    sequence_fields: Sequence[str] = (),
    *,
    descending_sequence: bool = False,
    seq_column: str | None = SEQUENCE_NUMBER,
) -> pa.Table:
    """Sort rows by key (nulls first), then user sequence fields, then the system sequence number.

    Arrow's sort is stable, so rows already in sequence order may pass ``seq_column=None``.
    """
    order = "descending" if descending_sequence else "ascending"
    keys = [(k, "ascending", "at_start") for k in key_names]
    keys += [(s, order, "at_start") for s in sequence_fields]
    if seq_column is not None:
        keys.append((seq_column, "ascending", "at_start"))
    idx = pc.sort_indices(table, sort_keys=keys)
    return table.take(idx)


def _same_as_next(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """For each row but the last: whether the next row holds an equal value (nulls equal nulls)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(arr)
    if n < 2:
        return np.zeros(0, dtype=bool)
    if not arr.null_count and (pa.types.is_integer(arr.type) or pa.types.is_date(arr.type)):
        values = arr.to_numpy(zero_copy_only=False)
        return np.asarray(values[1:] == values[:-1], dtype=bool)
    head, tail = arr.slice(0, n - 1), arr.slice(1)
    eq = pc.fill_null(pc.equal(head, tail), False).to_numpy(zero_copy_only=False)
    both_null = np.logical_and(
        pc.is_null(head).to_numpy(zero_copy_only=False), pc.is_null(tail).to_numpy(zero_copy_only=False)
    )
    return np.asarray(np.logical_or(eq, both_null), dtype=bool)


def _same_key_as_next(sorted_table: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """For each row but the last: whether the next row has the same key (all key columns equal)."""
    same = np.ones(max(sorted_table.num_rows - 1, 0), dtype=bool)
    for name in key_names:
        same &= _same_as_next(sorted_table.column(name))
    return same


def key_group_starts(sorted_table: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """Boolean mask marking the first row of each run of equal keys in a key-sorted table."""
    starts = np.ones(sorted_table.num_rows, dtype=bool)
    if sorted_table.num_rows:
        starts[1:] = ~_same_key_as_next(sorted_table, key_names)
    return starts


def is_retract(kinds: np.ndarray) -> np.ndarray:
    """Rows that retract (UPDATE_BEFORE or DELETE)."""
    return np.asarray((kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE), dtype=bool)
