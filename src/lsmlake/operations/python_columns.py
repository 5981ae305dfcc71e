"""Python values (pandas columns, lists, dicts) as Arrow columns built with the table column's type."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.core.types import DataType, to_arrow_type
from lsmlake.errors import SchemaMismatchError

_CONVERT_ERRORS = (ValueError, TypeError, OverflowError, pa.ArrowNotImplementedError)


def python_column(values: Any, t: DataType, *, path: str, table_name: str) -> pa.Array | pa.ChunkedArray:
    """Arrow values for one column of type ``t``: Arrow data as it is, typed pandas/numpy data as Arrow
    infers it (fitted to ``t`` later), Python objects converted with ``t``'s Arrow type - after their
    dict keys are checked against ``t``'s ROW fields, as Arrow itself ignores unknown keys."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    dtype = getattr(values, "dtype", None)
    if dtype is not None and dtype != np.dtype(object):
        return pa.array(values, from_pandas=True)  # numbers, datetimes, categoricals, Arrow-backed pandas
    if _has_row(t):
        check_dict_keys(list(values), t, path=path, table_name=table_name)
    try:
        return pa.array(values, type=to_arrow_type(t), from_pandas=True)
    except _CONVERT_ERRORS as e:
        if t.root in ("ROW", "ARRAY", "MAP"):
            raise SchemaMismatchError(
                f"table {table_name}: column {path}: values do not convert to {to_arrow_type(t)} ({e})"
            ) from None
        typed_error = e
    try:  # e.g. "12" for an INT column: parsed by the cast that fits the column afterwards
        return pa.array(values, from_pandas=True)
    except _CONVERT_ERRORS:
        raise SchemaMismatchError(
            f"table {table_name}: column {path}: values do not convert to {to_arrow_type(t)} ({typed_error})"
        ) from None


def _has_row(t: DataType) -> bool:
    if t.root == "ROW":
        return True
    return any(_has_row(x) for x in (t.element, t.key, t.value) if x is not None)


def check_dict_keys(values: Sequence[Any], t: DataType, *, path: str, table_name: str) -> None:
    """Every dict given for a ROW field (at any depth) uses only the ROW's field names, and each field
    appears in at least one of them; raise SchemaMismatchError naming the nested path otherwise."""
    if t.root == "ROW":
        _check_row(values, t, path, table_name)
    elif t.root == "ARRAY" and t.element is not None and _has_row(t.element):
        items = list(chain.from_iterable(v for v in values if _is_list_value(v)))
        check_dict_keys(items, t.element, path=f"{path}[]", table_name=table_name)
    elif t.root == "MAP" and t.key is not None and t.value is not None:
        keys, items = _map_parts(values)
        if _has_row(t.key):
            check_dict_keys(keys, t.key, path=f"{path}{{key}}", table_name=table_name)
        if _has_row(t.value):
            check_dict_keys(items, t.value, path=f"{path}{{}}", table_name=table_name)


def _check_row(values: Sequence[Any], t: DataType, path: str, table_name: str) -> None:
    dicts = [v for v in values if isinstance(v, Mapping)]
    wanted = [f.name for f in t.fields]
    if dicts:
        seen = set().union(*dicts)
        unknown = [f"{path}.{k}" for k in sorted(map(str, seen - set(wanted)))]
        if unknown:
            raise SchemaMismatchError(
                f"table {table_name}: column {path}: data has nested field(s) not in the table: "
                f"{', '.join(unknown)}"
            )
        missing = [f"{path}.{n}" for n in wanted if n not in seen]
        if missing:
            raise SchemaMismatchError(
                f"table {table_name}: column {path}: data lacks nested field(s) {', '.join(missing)}"
            )
    tuples = [v for v in values if isinstance(v, tuple)]  # Arrow takes tuples positionally
    for i, f in enumerate(t.fields):
        if _has_row(f.type):
            inner = [d.get(f.name) for d in dicts] + [v[i] for v in tuples if len(v) > i]
            check_dict_keys(inner, f.type, path=f"{path}.{f.name}", table_name=table_name)


def _is_list_value(v: Any) -> bool:
    return v is not None and not isinstance(v, (str, bytes, Mapping)) and isinstance(v, Iterable)


def _map_parts(values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """The keys and the values of maps given as dicts or as lists of (key, value) pairs."""
    keys: list[Any] = []
    items: list[Any] = []
    for v in values:
        if isinstance(v, Mapping):
            keys.extend(v.keys())
            items.extend(v.values())
        elif _is_list_value(v):
            pairs = [p for p in v if isinstance(p, tuple) and len(p) == 2]
            keys.extend(p[0] for p in pairs)
            items.extend(p[1] for p in pairs)
    return keys, items
