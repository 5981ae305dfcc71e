"""Turn user data into rows of the table schema, checked, with their row kinds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.default_values import default_scalar
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataField, DataType, to_arrow_type
from lsmlake.errors import SchemaMismatchError
from lsmlake.mergetree.kv_layout import ROW_KIND_SHORT, RowKind
from lsmlake.write.column_fit import FitRules, fit_column, null_array, zero_array
from lsmlake.write.python_columns import python_column

WriteData = Any
"""pa.Table | pa.RecordBatch | pa.RecordBatchReader | pandas.DataFrame | Mapping[str, list] | a list of
dicts | any object with ``__arrow_c_stream__`` (Polars, DuckDB, ...)."""


def input_rows(
    data: WriteData,
    schema: TableSchema,
    *,
    table_name: str,
    what: str,
    required: Sequence[str] | None = None,
    fill_missing: bool = False,
) -> pa.Table:
    """User data as rows of the table schema: Python data converted with the table's types, every column
    (nested fields included) checked and cast; see ``conform`` for ``required`` and ``fill_missing``."""
    table = to_arrow_table(data, what, schema=schema, table_name=table_name)
    return conform(table, schema, table_name=table_name, required=required, fill_missing=fill_missing)


def to_arrow_table(
    data: WriteData, what: str, *, schema: TableSchema | None = None, table_name: str = ""
) -> pa.Table:
    """Accept the data shapes the write API promises and return one Arrow table; with ``schema``, Python
    data (pandas, dicts, lists of dicts) is converted with the table's column types, not by inference."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if type(data).__module__.startswith("pandas"):  # before the stream protocol: pandas exports it too
        columns = _pandas_columns(data, what)
    elif hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data).read_all()
    elif hasattr(data, "__arrow_c_array__"):
        return pa.table(pa.record_batch(data))
    elif isinstance(data, Mapping):
        columns = {str(k): v for k, v in data.items()}
    elif isinstance(data, Sequence) and data and all(isinstance(r, Mapping) for r in data):
        names = list(dict.fromkeys(chain.from_iterable(data)))
        columns = {str(n): [r.get(n) for r in data] for n in names}
    else:
        raise TypeError(
            f"{what}: expected a pyarrow Table, RecordBatch or RecordBatchReader, a pandas DataFrame, "
            f"an Arrow stream (__arrow_c_stream__), a dict of columns or a list of row dicts, "
            f"got {type(data).__name__}"
        )
    return _python_table(columns, schema, table_name=table_name, what=what)


def _pandas_columns(frame: Any, what: str) -> dict[str, Any]:
    if not hasattr(frame, "columns"):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(frame).__name__}")
    names = [str(c) for c in frame.columns]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{what}: the DataFrame has column(s) {twice} more than once")
    return {name: frame.iloc[:, i] for i, name in enumerate(names)}


def _python_table(
    columns: Mapping[str, Any], schema: TableSchema | None, *, table_name: str, what: str
) -> pa.Table:
    """Columns of Python data as Arrow: typed by the table's columns when known, inferred otherwise."""
    known = {f.name: f for f in schema.fields} if schema is not None else {}
    extra = [n for n in columns if n not in known]
    if schema is not None and extra:  # refused before converting them: they may not even convert
        raise SchemaMismatchError(
            f"table {table_name}: data has column(s) not in the table: {', '.join(extra)}"
        )
    arrays = []
    for name, values in columns.items():
        field = known.get(name)
        if field is None:
            arrays.append(_inferred(values, name, what))
        else:
            arrays.append(python_column(values, field.type, path=name, table_name=table_name))
    lengths = {name: len(a) for name, a in zip(columns, arrays, strict=True)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{what}: columns have different lengths: {lengths}")
    return pa.Table.from_arrays(arrays, names=list(columns))


def _inferred(values: Any, name: str, what: str) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    try:
        return pa.array(values, from_pandas=True)
    except (ValueError, TypeError, OverflowError, pa.ArrowNotImplementedError) as e:
        raise ValueError(f"{what}: cannot convert column {name} to Arrow ({e})") from None


def conform(
    table: pa.Table,
    schema: TableSchema,
    *,
    table_name: str,
    required: Sequence[str] | None = None,
    fill_missing: bool = False,
) -> pa.Table:
    """Select, order and cast columns to the table schema; raise SchemaMismatchError naming the column
    (nested ROW fields too: they must match the table's by name, at any depth).

    ``required`` lists the columns the caller must supply (default: all); with ``fill_missing`` the
    other columns are filled (nulls, or zero values for NOT NULL columns). A column given with a
    default value gets it wherever it is null (Paimon's DefaultValueRow); a column a key-only delete
    leaves out stays null, as the rows Paimon deletes carry their values.
    """
    names = table.column_names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SchemaMismatchError(f"table {table_name}: data has column(s) {', '.join(twice)} more than once")
    present = set(names)
    needed = list(schema.field_names) if required is None else list(required)
    missing = [n for n in needed if n not in present]
    if missing:
        raise SchemaMismatchError(f"table {table_name}: data lacks column(s) {', '.join(missing)}")
    extra = [n for n in names if n not in schema.field_names]
    if extra:
        raise SchemaMismatchError(
            f"table {table_name}: data has column(s) not in the table: {', '.join(extra)}"
        )
    rules = FitRules(table_name)
    columns = []
    for f in schema.fields:
        if f.name not in present:
            if not fill_missing:
                raise SchemaMismatchError(f"table {table_name}: data lacks column {f.name}")
            columns.append(_filler(table.num_rows, to_arrow_type(f.type), f.type.nullable))
            continue
        col = fit_column(table.column(f.name), f.type, path=f.name, rules=rules)
        if not f.type.nullable and col.null_count:
            what = "primary key column" if f.name in schema.primary_keys else "NOT NULL column"
            raise SchemaMismatchError(
                f"table {table_name}: {what} {f.name} holds {col.null_count} null value(s)"
            )
        columns.append(_with_default(col, f, table_name))
    arrow_schema = pa.schema(
        [pa.field(f.name, to_arrow_type(f.type), f.type.nullable) for f in schema.fields]
    )
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def constant_column(value: object, n: int, t: DataType, *, column: str, table_name: str) -> pa.ChunkedArray:
    """``n`` copies of one Python value as a column of type ``t`` (an UPDATE's SET value), checked as a
    written value is; raise SchemaMismatchError naming the column when it does not fit."""
    one = python_column([value], t, path=column, table_name=table_name)
    fitted = fit_column(one, t, path=column, rules=FitRules(table_name))
    return fitted.take(pa.array(np.zeros(n, dtype=np.int32)))


def _with_default(
    column: pa.Array | pa.ChunkedArray, f: DataField, table_name: str
) -> pa.Array | pa.ChunkedArray:
    if f.default_value is None or column.null_count == 0:
        return column
    try:
        value = default_scalar(f.type, f.default_value)
    except ValueError as e:
        raise SchemaMismatchError(f"table {table_name}: column {f.name}: {e}") from None
    return pc.fill_null(column, value)


def _filler(n: int, t: pa.DataType, nullable: bool) -> pa.Array:
    """A column of nulls, or of the type's zero value ("", b"", False, 0) for NOT NULL columns."""
    return null_array(t, n) if nullable else zero_array(t, n)


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
