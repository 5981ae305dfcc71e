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
    """Arrow values for one column of type ``t``, to be fitted to ``t`` by ``fit_column`` (which matches
    ROW fields by name and casts safely). Arrow data is taken as it is; pandas/numpy data and Python
    objects are converted by Arrow, with ``t`` guiding the parts Arrow cannot infer: maps (dicts or
    ``(key, value)`` pairs) become entry lists first. Arrow's own typed conversion is the fallback only
    (e.g. integers beyond int64 for a DECIMAL column): it truncates floats given for integers and
    datetimes given for coarser timestamps without a word, which the safe cast refuses."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    dtype = getattr(values, "dtype", None)
    if dtype is not None and dtype != np.dtype(object):
        return pa.array(values, from_pandas=True)  # numbers, datetimes, categoricals, Arrow-backed pandas
    items = list(values)
    try:
        return pa.array(with_map_entries(items, t), from_pandas=True)
    except _CONVERT_ERRORS as e:
        inferred_error = e
    if _has_row(t):
        check_dict_keys(items, t, path=path, table_name=table_name)
    try:
        return pa.array(items, type=to_arrow_type(t), from_pandas=True)
    except _CONVERT_ERRORS:
        raise SchemaMismatchError(
            f"table {table_name}: column {path}: values do not convert to {to_arrow_type(t)} ({inferred_error})"
        ) from None


def with_map_entries(values: list[Any], t: DataType) -> list[Any]:
    """``values`` of type ``t`` with every map (a dict or a list of ``(key, value)`` pairs) at any depth
    turned into a list of ``{"key": k, "value": v}`` dicts, which Arrow infers as map entries."""
    if not _has_map(t):
        return values
    if t.root == "MAP" and t.key is not None and t.value is not None:
        return _map_entries(values, t.key, t.value)
    if t.root == "ARRAY" and t.element is not None:
        lists = [list(v) if _is_list_value(v) else v for v in values]
        flat = with_map_entries(list(chain.from_iterable(v for v in lists if isinstance(v, list))), t.element)
        out, pos = [], 0
        for v in lists:
            if isinstance(v, list):
                out.append(flat[pos : pos + len(v)])
                pos += len(v)
            else:
                out.append(v)
        return out
    if t.root == "ROW":
        rows = [dict(v) if isinstance(v, Mapping) else v for v in values]
        dicts = [r for r in rows if isinstance(r, dict)]
        for f in t.fields:
            if _has_map(f.type):
                inner = with_map_entries([d.get(f.name) for d in dicts], f.type)
                for d, x in zip(dicts, inner, strict=True):
                    if f.name in d:
                        d[f.name] = x
        return rows
    return values


def _map_entries(values: list[Any], key: DataType, value: DataType) -> list[Any]:
    pairs_per_map = [_pairs(v) for v in values]
    flat = [p for pairs in pairs_per_map if pairs is not None for p in pairs]
    keys = with_map_entries([p[0] for p in flat], key)
    items = with_map_entries([p[1] for p in flat], value)
    out, pos = [], 0
    for v, pairs in zip(values, pairs_per_map, strict=True):
        if pairs is None:
            out.append(v)  # null, or not a map: left for Arrow and the fit to refuse
            continue
        out.append(
            [
                {"key": k, "value": x}
                for k, x in zip(keys[pos : pos + len(pairs)], items[pos : pos + len(pairs)], strict=True)
            ]
        )
        pos += len(pairs)
    return out


def _pairs(v: Any) -> list[tuple[Any, Any]] | None:
    if isinstance(v, Mapping):
        return list(v.items())
    if _is_list_value(v):
        pairs = list(v)
        if all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
            return [(p[0], p[1]) for p in pairs]
    return None


def _has_map(t: DataType) -> bool:
    if t.root == "MAP":
        return True
    if t.root == "ROW":
        return any(_has_map(f.type) for f in t.fields)
    return any(_has_map(x) for x in (t.element, t.key, t.value) if x is not None)


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
