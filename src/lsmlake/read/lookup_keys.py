"""The keys a lookup is given, checked and turned into an Arrow table of the primary-key columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import pyarrow as pa

from lsmlake.core.types import to_arrow_type
from lsmlake.metadata.table_handle import TableHandle

KeysInput: TypeAlias = pa.Table | pa.RecordBatch | Mapping[str, Sequence[Any]] | Sequence[Any]
"""A table (or batch, or dict of lists) of the key columns; a list of key dicts; for a table whose primary
key is one column a list of values; else a list of tuples in primary-key order."""


def key_table(table: TableHandle, keys: KeysInput) -> pa.Table:
    """``keys`` as a table of exactly the primary-key columns (in the order given), cast to the table's
    key types. Missing, extra or null key columns and values of the wrong type are a ValueError."""
    pk = list(table.schema.primary_keys)
    given = _as_table(table, keys, pk)
    missing = [k for k in pk if k not in given.column_names]
    if missing:
        raise ValueError(
            f"table {table.name}: lookup keys lack primary-key column(s) {missing} "
            f"(the primary key is {pk}; got {given.column_names})"
        )
    extra = [c for c in given.column_names if c not in pk]
    if extra:
        raise ValueError(
            f"table {table.name}: lookup keys have column(s) {extra} outside the primary key {pk}"
        )
    arrays, fields = [], []
    for name in given.column_names:
        column = given.column(name)
        if column.null_count:
            raise ValueError(
                f"table {table.name}: lookup key column {name!r} holds nulls; keys are never null"
            )
        target = to_arrow_type(table.schema.field(name).type)
        if column.type != target:
            try:
                column = column.cast(target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise ValueError(
                    f"table {table.name}: lookup key column {name!r} of type {column.type} "
                    f"does not convert to the key's type {target}: {e}"
                ) from None
        arrays.append(column)
        fields.append(pa.field(name, target, nullable=False))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _as_table(table: TableHandle, keys: KeysInput, pk: list[str]) -> pa.Table:
    if isinstance(keys, pa.Table):
        return keys
    if isinstance(keys, pa.RecordBatch):
        return pa.Table.from_batches([keys])
    if isinstance(keys, Mapping):
        try:
            return pa.table({str(k): list(v) for k, v in keys.items()})
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise ValueError(f"table {table.name}: lookup keys are not columns of key values: {e}") from None
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise ValueError(
            f"table {table.name}: lookup keys must be a pyarrow Table, a dict of columns or a list, "
            f"got {type(keys).__name__}"
        )
    items = list(keys)
    if items and all(isinstance(k, Mapping) for k in items):
        columns: dict[str, list[Any]] = {name: [] for name in items[0]}
        for k in items:
            if set(k) != set(columns):
                raise ValueError(f"table {table.name}: lookup key dicts name different columns: {list(k)}")
            for name, value in k.items():
                columns[name].append(value)
        return _from_columns(table, columns)
    if len(pk) == 1 and not any(isinstance(k, (tuple, list, Mapping)) for k in items):
        return _from_columns(table, {pk[0]: items})
    rows = [k if isinstance(k, (tuple, list)) else (k,) for k in items]
    bad = [r for r in rows if len(r) != len(pk)]
    if bad:
        raise ValueError(
            f"table {table.name}: a lookup key tuple must hold one value per primary-key column {pk}, "
            f"got {tuple(bad[0])}"
        )
    return _from_columns(table, {name: [r[i] for r in rows] for i, name in enumerate(pk)})


def _from_columns(table: TableHandle, columns: dict[str, list[Any]]) -> pa.Table:
    """Python values as Arrow columns of the key types (a value of the wrong type is a ValueError)."""
    arrays = {}
    for name, values in columns.items():
        target = to_arrow_type(table.schema.field(name).type) if name in table.schema.field_names else None
        try:
            arrays[name] = pa.array(values, target)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise ValueError(
                f"table {table.name}: lookup key column {name!r} holds a value that is not a {target}: {e}"
            ) from None
    return pa.table(arrays)
