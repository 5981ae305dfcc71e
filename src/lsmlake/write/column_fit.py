"""Fit one Arrow column to a table column's type: nested fields matched exactly, values cast safely."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.types import DataType, to_arrow_type
from lsmlake.errors import SchemaMismatchError

_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


@dataclass(frozen=True)
class FitRules:
    """How a column is fitted: ``by_position`` matches ROW fields by position (SQL ``ROW(...)``, as Flink
    does) instead of by name; ``lossy_time`` lets times and timestamps drop sub-precision digits."""

    table_name: str
    by_position: bool = False
    lossy_time: bool = False

    def error(self, path: str, message: str) -> SchemaMismatchError:
        return SchemaMismatchError(f"table {self.table_name}: column {path}: {message}")


def fit_column(
    column: pa.Array | pa.ChunkedArray, t: DataType, *, path: str, rules: FitRules
) -> pa.ChunkedArray:
    """``column`` as the exact Arrow type of ``t``; raise SchemaMismatchError naming the (nested) column
    whose fields or values do not fit. Null structs, lists and maps stay null."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return pa.chunked_array([_fit(c, t, path, rules) for c in chunks], type=to_arrow_type(t))


def _fit(arr: pa.Array, t: DataType, path: str, rules: FitRules) -> pa.Array:
    target = to_arrow_type(t)
    if arr.type == target and not _has_nested_not_null(t):
        return arr
    if arr.null_count == len(arr):
        return null_array(target, len(arr))  # all null (or empty): nothing to convert, whatever the type
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if t.root == "ROW":
        return _fit_struct(arr, t, path, rules)
    if t.root == "ARRAY":
        return _fit_list(arr, t, path, rules)
    if t.root == "MAP":
        return _fit_map(arr, t, path, rules)
    return _cast(arr, t, target, path, rules)


def _has_nested_not_null(t: DataType) -> bool:
    """Whether a nested part of ``t`` is NOT NULL (Arrow does not enforce it, so it is checked)."""
    if t.root == "ROW":
        return any(not f.type.nullable or _has_nested_not_null(f.type) for f in t.fields)
    inner = [x for x in (t.element, t.key, t.value) if x is not None]
    return any(not x.nullable or _has_nested_not_null(x) for x in inner)


def _cast(arr: pa.Array, t: DataType, target: pa.DataType, path: str, rules: FitRules) -> pa.Array:
    if arr.type == target:
        return arr
    temporal = pa.types.is_timestamp(target) or pa.types.is_time(target)
    _check_time_zone(arr.type, target, path, rules)
    try:
        cast = arr.cast(target, safe=not (rules.lossy_time and temporal))
    except _CAST_ERRORS as e:
        raise rules.error(path, f"{arr.type} values do not fit type {target} ({e})") from None
    _check_lossless(arr, cast, path, rules)
    return cast


_INFINITY_TEXT = pa.array(["inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"])


def _check_time_zone(source: pa.DataType, target: pa.DataType, path: str, rules: FitRules) -> None:
    """A timestamp in a zone other than UTC has no single wall-clock time for a TIMESTAMP column."""
    if not (pa.types.is_timestamp(source) and pa.types.is_timestamp(target)) or target.tz is not None:
        return
    if source.tz is not None and source.tz.upper() not in ("UTC", "Z", "+00:00", "ETC/UTC"):
        raise rules.error(
            path,
            f"{source} values carry time zone {source.tz}, but the column is a TIMESTAMP without time "
            "zone; convert them to local wall-clock time (or to UTC) first, or use TIMESTAMP_LTZ",
        )


def _check_lossless(source: pa.Array, cast: pa.Array, path: str, rules: FitRules) -> None:
    """Casts Arrow's safe mode lets through but that change values: a finite number (or numeric text)
    that overflows to infinity in FLOAT/DOUBLE, and integers other than 0 and 1 as BOOLEAN."""
    if pa.types.is_floating(cast.type):
        if pa.types.is_floating(source.type) or pa.types.is_decimal(source.type):
            finite = pc.is_finite(source.cast(pa.float64()))
        elif pa.types.is_string(source.type) or pa.types.is_large_string(source.type):
            finite = pc.invert(pc.is_in(pc.utf8_lower(pc.utf8_trim_whitespace(source)), _INFINITY_TEXT))
        else:
            return
        overflow = pc.and_(pc.fill_null(finite, False), pc.invert(pc.fill_null(pc.is_finite(cast), True)))
        if pc.any(overflow).as_py():
            bad = source.filter(overflow)[0].as_py()
            raise rules.error(path, f"{source.type} value {bad!r} overflows type {cast.type}")
    elif pa.types.is_boolean(cast.type) and pa.types.is_integer(source.type):
        other = pc.invert(pc.is_in(source, pa.array([0, 1], source.type)))
        if pc.any(pc.fill_null(other, False)).as_py():
            bad = source.filter(pc.fill_null(other, False))[0].as_py()
            raise rules.error(path, f"{source.type} value {bad!r} is not a BOOLEAN (only 0 and 1 are)")


def _check_not_null(
    values: pa.Array, t: DataType, valid: pa.Array | None, path: str, rules: FitRules
) -> None:
    """NOT NULL nested values must hold no nulls (where their parent is not null itself)."""
    if t.nullable or not values.null_count:
        return
    bad = values.null_count if valid is None else pc.sum(pc.and_(values.is_null(), valid)).as_py() or 0
    if bad:
        raise rules.error(path, f"NOT NULL field holds {bad} null value(s)")


def _fit_struct(arr: pa.Array, t: DataType, path: str, rules: FitRules) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise rules.error(path, f"expected {to_arrow_type(t)} values, got {arr.type}")
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    wanted = [f.name for f in t.fields]
    children = _children(arr)
    if rules.by_position:
        if len(names) != len(wanted):
            raise rules.error(
                path,
                f"ROW value has {len(names)} field(s), the column type has {len(wanted)} ({', '.join(wanted)})",
            )
        picked = children
    else:
        _check_field_names(names, wanted, path, rules)
        picked = [children[names.index(w)] for w in wanted]
    valid = arr.is_valid() if arr.null_count else None
    fitted = []
    for f, child in zip(t.fields, picked, strict=True):
        out = _fit(child, f.type, f"{path}.{f.name}", rules)
        _check_not_null(out, f.type, valid, f"{path}.{f.name}", rules)
        if not f.type.nullable and out.null_count:  # only under null parents: Parquet wants a value there
            out = pc.coalesce(out, zero_array(out.type, len(out)))
        fitted.append(out)
    target = to_arrow_type(t)
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(fitted, fields=list(target), mask=mask)


def _children(arr: pa.Array) -> list[pa.Array]:
    """A struct's fields with the parent's nulls merged in and its offset applied (a null-typed field is
    rebuilt: ``flatten`` gets its length wrong)."""
    return [pa.nulls(len(arr)) if pa.types.is_null(c.type) else c for c in arr.flatten()]


def _check_field_names(names: list[str], wanted: list[str], path: str, rules: FitRules) -> None:
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise rules.error(path, f"ROW value has field(s) {', '.join(twice)} more than once")
    unknown = [f"{path}.{n}" for n in names if n not in wanted]
    if unknown:
        raise rules.error(path, f"data has nested field(s) not in the table: {', '.join(unknown)}")
    missing = [f"{path}.{n}" for n in wanted if n not in names]
    if missing:
        raise rules.error(path, f"data lacks nested field(s) {', '.join(missing)}")


def _is_list_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def _offsets(arr: pa.Array) -> pa.Array:
    """Fresh int32 offsets for the values ``flatten()`` returns (null lists count as empty)."""
    lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.array(offsets, pa.int32())


def _list_values(arr: pa.Array) -> pa.Array:
    """The values of a list array, as ``flatten()`` returns them; a null-typed one is rebuilt from the
    list lengths (``flatten`` gets its length wrong, as for struct fields)."""
    values = arr.flatten()
    if pa.types.is_null(values.type):
        return pa.nulls(int(pc.sum(pc.fill_null(pc.list_value_length(arr), 0)).as_py() or 0))
    return values


def _fit_list(arr: pa.Array, t: DataType, path: str, rules: FitRules) -> pa.Array:
    if not _is_list_like(arr.type):
        raise rules.error(path, f"expected {to_arrow_type(t)} values, got {arr.type}")
    assert t.element is not None
    values = _fit(_list_values(arr), t.element, f"{path}[]", rules)
    _check_not_null(values, t.element, None, f"{path}[]", rules)
    mask = arr.is_null() if arr.null_count else None
    return pa.ListArray.from_arrays(_offsets(arr), values, type=to_arrow_type(t), mask=mask)


def _map_entries(arr: pa.Array, path: str, t: DataType, rules: FitRules) -> tuple[pa.Array, list[pa.Array]]:
    """A map column (or a list of two-field structs, as Python dicts of entries and some writers spell
    maps) as a list array of entries; returns the list array and the flattened keys and values."""
    if pa.types.is_map(arr.type):
        mt = arr.type
        entries = pa.field("entries", pa.struct([mt.key_field, mt.item_field]), nullable=False)
        arr = arr.view(pa.list_(entries))
    elif not _is_list_like(arr.type):
        raise rules.error(path, f"expected {to_arrow_type(t)} values, got {arr.type}")
    flat = _list_values(arr)
    if pa.types.is_null(flat.type) and len(flat) == 0:  # only empty maps: no entry type to infer
        return arr, [pa.array([], pa.null()), pa.array([], pa.null())]
    if not pa.types.is_struct(flat.type) or flat.type.num_fields != 2:
        raise rules.error(path, f"expected {to_arrow_type(t)} values, got {arr.type}")
    return arr, _children(flat)


def _fit_map(arr: pa.Array, t: DataType, path: str, rules: FitRules) -> pa.Array:
    assert t.key is not None and t.value is not None
    listed, (raw_keys, raw_values) = _map_entries(arr, path, t, rules)
    keys = _fit(raw_keys, t.key, f"{path}{{key}}", rules)
    if keys.null_count:
        raise rules.error(f"{path}{{key}}", f"map keys cannot be null ({keys.null_count} are)")
    values = _fit(raw_values, t.value, f"{path}{{}}", rules)
    _check_not_null(values, t.value, None, f"{path}{{}}", rules)
    mask = arr.is_null() if arr.null_count else None
    return pa.MapArray.from_arrays(_offsets(listed), keys, values, type=to_arrow_type(t), mask=mask)


def null_array(t: pa.DataType, n: int) -> pa.Array:
    """``n`` nulls of an Arrow type; a struct's NOT NULL fields hold zeros under them (Parquet checks)."""
    if pa.types.is_struct(t) and n and _has_not_null_field(t):
        children = zero_array(t, n).flatten()
        return pa.StructArray.from_arrays(children, fields=list(t), mask=pa.array(np.ones(n, dtype=bool)))
    return pa.nulls(n, t)


def _has_not_null_field(t: pa.DataType) -> bool:
    fields = [t.field(i) for i in range(t.num_fields)] if pa.types.is_struct(t) else []
    return any(not f.nullable or _has_not_null_field(f.type) for f in fields)


def zero_array(t: pa.DataType, n: int) -> pa.Array:
    """``n`` non-null "zero" values of an Arrow type: 0, "", b"", False, the epoch, empty lists and maps,
    structs of zeros (what a NOT NULL slot holds where no value was given)."""
    if pa.types.is_struct(t):
        children = [zero_array(t.field(i).type, n) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(t))
    empty_offsets = pa.array(np.zeros(n + 1, dtype=np.int32))
    if pa.types.is_map(t):
        keys, items = pa.array([], t.key_type), pa.array([], t.item_type)
        return pa.MapArray.from_arrays(empty_offsets, keys, items, type=t)
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(empty_offsets, pa.array([], t.value_type), type=t)
    return pa.repeat(pa.scalar(_zero_value(t), type=t), n)


def _zero_value(t: pa.DataType) -> object:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ""
    if pa.types.is_fixed_size_binary(t):
        return b"\0" * t.byte_width
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return b""
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_decimal(t):
        return Decimal(0)
    if pa.types.is_date(t):
        return dt.date(1970, 1, 1)
    if pa.types.is_time(t):
        return dt.time(0)
    if pa.types.is_timestamp(t):
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc if t.tz else None)
    return 0
