"""Turn user data into rows of the table schema, checked, with their row kinds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import to_arrow_type
from lsmlake.errors import SchemaMismatchError
from lsmlake.mergetree.kv_layout import ROW_KIND_SHORT, RowKind

WriteData = Any  # pa.Table | pa.RecordBatch | pa.RecordBatchReader | pandas.DataFrame | Mapping[str, list]


def to_arrow_table(data: WriteData, what: str) -> pa.Table:
    """Accept the data shapes the write API promises and return one Arrow table."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, Mapping):
        return pa.table(dict(data))
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, Sequence) and data and isinstance(data[0], Mapping):
        return pa.Table.from_pylist(list(data))
    raise TypeError(
        f"{what}: expected a pyarrow Table, RecordBatch, RecordBatchReader or pandas DataFrame, "
        f"got {type(data).__name__}"
    )


def conform(
    table: pa.Table,
    schema: TableSchema,
    *,
    table_name: str,
    required: Sequence[str] | None = None,
    fill_missing: bool = False,
) -> pa.Table:
    """Select, order and cast columns to the table schema; raise SchemaMismatchError naming the column.

    ``required`` lists the columns the caller must supply (default: all); with ``fill_missing`` the
    other columns are filled (nulls, or zero values for NOT NULL columns).
    """
    present = set(table.column_names)
    needed = list(schema.field_names) if required is None else list(required)
    missing = [n for n in needed if n not in present]
    if missing:
        raise SchemaMismatchError(f"table {table_name}: data lacks column(s) {', '.join(missing)}")
    extra = [n for n in table.column_names if n not in schema.field_names]
    if extra:
        raise SchemaMismatchError(
            f"table {table_name}: data has column(s) not in the table: {', '.join(extra)}"
        )
    columns = []
    for f in schema.fields:
        target = to_arrow_type(f.type)
        if f.name not in present:
            if not fill_missing:
                raise SchemaMismatchError(f"table {table_name}: data lacks column {f.name}")
            columns.append(_filler(table.num_rows, target, f.type.nullable))
            continue
        col = table.column(f.name)
        if col.type != target:
            try:
                col = col.cast(target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaMismatchError(
                    f"table {table_name}: column {f.name} has type {col.type}, which does not fit "
                    f"{f.type} ({e})"
                ) from None
        if not f.type.nullable and col.null_count:
            what = "primary key column" if f.name in schema.primary_keys else "NOT NULL column"
            raise SchemaMismatchError(
                f"table {table_name}: {what} {f.name} holds {col.null_count} null value(s)"
            )
        columns.append(col)
    arrow_schema = pa.schema(
        [pa.field(f.name, to_arrow_type(f.type), f.type.nullable) for f in schema.fields]
    )
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def _filler(n: int, t: pa.DataType, nullable: bool) -> pa.Array:
    """A column of nulls, or of the type's zero value ("", b"", False, 0) for NOT NULL columns."""
    if nullable:
        return pa.nulls(n, t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        zero: Any = ""
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        zero = b""
    elif pa.types.is_boolean(t):
        zero = False
    else:
        zero = 0
    return pa.repeat(pa.array([zero], type=t)[0], n)


def row_kinds(table: pa.Table, options: CoreOptions, default: RowKind, *, table_name: str) -> np.ndarray:
    """Row kinds as int8: from ``rowkind.field`` when set, else ``default`` for every row."""
    field = options.rowkind_field
    if field is None:
        return np.full(table.num_rows, int(default), dtype=np.int8)
    if field not in table.column_names:
        raise SchemaMismatchError(f"table {table_name}: rowkind.field column {field!r} is missing")
    col = table.column(field)
    kinds = np.full(table.num_rows, -1, dtype=np.int8)
    for text, kind in ROW_KIND_SHORT.items():
        mask = pc.fill_null(pc.equal(col, text), False).to_numpy(zero_copy_only=False)
        kinds[mask] = int(kind)
    if (kinds < 0).any():
        bad = pc.unique(col.filter(pa.array(kinds < 0))).to_pylist()[:5]
        raise SchemaMismatchError(
            f"table {table_name}: rowkind.field column {field!r} holds {bad}; expected +I, -U, +U or -D"
        )
    return kinds
