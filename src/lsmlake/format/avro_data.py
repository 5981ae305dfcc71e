"""Read Avro data files (``file.format=avro``): records decoded by fastavro, then built into Arrow columns
typed from the file's Avro schema (logical types, key/value-record maps and nested records included)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Context, Decimal
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.metadata.avro_container import decode_avro_header, iter_avro_blocks

_AVRO_TIME_UNITS = {
    "timestamp-millis": "ms",
    "local-timestamp-millis": "ms",
    "timestamp-micros": "us",
    "local-timestamp-micros": "us",
    "timestamp-nanos": "ns",
    "local-timestamp-nanos": "ns",
}
_EXACT = Context(prec=80)  # DECIMAL(38) values scale without rounding (the default context keeps 28 digits)
_PRIMITIVES = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
    "null": pa.null(),
}


def _non_null(avro_type: Any) -> tuple[Any, bool]:
    """The value branch of a field type and whether the field is nullable (a ``["null", T]`` union)."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        return (branches[0] if branches else "null"), True
    return avro_type, False


def _logical(avro_type: Any) -> str | None:
    return avro_type.get("logicalType") if isinstance(avro_type, dict) else None


def _arrow_type(avro_type: Any) -> pa.DataType:
    """The Arrow type of an Avro type (its value branch)."""
    t, _ = _non_null(avro_type)
    logical = _logical(t)
    if logical in _AVRO_TIME_UNITS:
        return pa.timestamp(_AVRO_TIME_UNITS[logical])
    if logical == "date":
        return pa.date32()
    if logical == "time-millis":
        return pa.time32("ms")
    if logical == "time-micros":
        return pa.time64("us")
    if logical == "decimal":
        return pa.decimal128(int(t["precision"]), int(t.get("scale", 0)))
    if isinstance(t, str):
        if t not in _PRIMITIVES:
            raise ValueError(f"Avro type {t!r} has no Arrow form here")
        return _PRIMITIVES[t]
    kind = t["type"]
    if isinstance(kind, (dict, list)) or kind in _PRIMITIVES:
        return _arrow_type(kind)
    if kind == "record":
        return pa.struct(
            [pa.field(f["name"], _arrow_type(f["type"]), _non_null(f["type"])[1]) for f in t["fields"]]
        )
    if kind == "array":
        items = t["items"]
        if logical == "map":  # key/value records: Paimon's map with non-string keys
            key_f, value_f = items["fields"]
            return pa.map_(_arrow_type(key_f["type"]), pa.field("value", _arrow_type(value_f["type"]), True))
        return pa.list_(pa.field("element", _arrow_type(items), _non_null(items)[1]))
    if kind == "map":
        return pa.map_(pa.string(), pa.field("value", _arrow_type(t["values"]), True))
    raise ValueError(f"Avro type {kind!r} has no Arrow form here")


def _python(value: Any, avro_type: Any) -> Any:
    """A decoded value in the form ``pa.array`` takes for ``_arrow_type(avro_type)``."""
    if value is None:
        return None
    t, _ = _non_null(avro_type)
    logical = _logical(t)
    if logical == "decimal":
        return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(
            -int(t.get("scale", 0)), context=_EXACT
        )
    if (
        not isinstance(t, dict)
        or logical in _AVRO_TIME_UNITS
        or logical in ("date", "time-millis", "time-micros")
    ):
        return value
    kind = t["type"]
    if isinstance(kind, (dict, list)):
        return _python(value, kind)
    if kind == "record":
        return {f["name"]: _python(value.get(f["name"]), f["type"]) for f in t["fields"]}
    if kind == "array":
        items = t["items"]
        if logical == "map":
            key_f, value_f = items["fields"]
            return [(_python(e["key"], key_f["type"]), _python(e["value"], value_f["type"])) for e in value]
        return [_python(v, items) for v in value]
    if kind == "map":
        return [(k, _python(v, t["values"])) for k, v in value.items()]
    return value


def _is_flat(avro_type: Any) -> bool:
    t, _ = _non_null(avro_type)
    return isinstance(t, str) or (
        _logical(t) is not None and _logical(t) != "map" and _logical(t) != "decimal"
    )


def _avro_column(values: list[Any], avro_type: Any) -> pa.Array:
    arrow_type = _arrow_type(avro_type)
    if _is_flat(avro_type):
        if pa.types.is_timestamp(arrow_type):  # raw integers (logical types are not decoded)
            return pa.array(values, pa.int64()).cast(arrow_type)
        if pa.types.is_date(arrow_type) or pa.types.is_time32(arrow_type):
            return pa.array(values, pa.int32()).cast(arrow_type)
        if pa.types.is_time64(arrow_type):
            return pa.array(values, pa.int64()).cast(arrow_type)
        return pa.array(values, arrow_type)
    return pa.array([_python(v, avro_type) for v in values], arrow_type)


def _table(records: list[Any], types: dict[str, Any], columns: list[str]) -> pa.Table:
    if not columns:
        return pa.table({"rows": pa.nulls(len(records))}).select([])
    if not records:
        return pa.table({c: pa.array([], _arrow_type(types[c])) for c in columns})
    picked = map(itemgetter(*columns), records)  # the records transposed at C speed
    values = list(zip(*picked, strict=True)) if len(columns) > 1 else [tuple(picked)]
    return pa.table({c: _avro_column(list(v), types[c]) for c, v in zip(columns, values, strict=True)})


def iter_avro(
    io: FileIO, path: str, columns: list[str] | None, max_rows: int | None = None
) -> Iterator[tuple[pa.Table, np.ndarray | None]]:
    """The ``columns`` (None: all, in file order) of an Avro data file: the whole file (positions None)
    without ``max_rows``, else pieces of whole blocks, about ``max_rows`` rows each, with their row
    positions; only one piece's records are decoded at a time (Avro has no column projection)."""
    data = io.read_bytes(path)
    header = decode_avro_header(data, name=path)
    types = {f["name"]: f["type"] for f in json.loads(header.schema_json)["fields"]}
    names = list(types) if columns is None else columns
    pending: list[Any] = []
    offset = 0
    for block in iter_avro_blocks(data, header, name=path):
        pending += [r for r in block if r is not None]
        if max_rows is not None and len(pending) >= max_rows:
            yield _table(pending, types, names), np.arange(offset, offset + len(pending))
            offset += len(pending)
            pending = []
    if max_rows is None:
        yield _table(pending, types, names), None
    elif pending or offset == 0:
        yield _table(pending, types, names), np.arange(offset, offset + len(pending))


def read_avro(io: FileIO, path: str, columns: list[str] | None) -> pa.Table:
    """The ``columns`` (None: all, in file order) of an Avro data file, whole."""
    ((table, _),) = iter_avro(io, path, columns)
    return table
