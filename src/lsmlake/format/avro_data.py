"""Avro data files (``file.format=avro``, rare): decoded record by record into Arrow columns."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.metadata.avro_container import decode_avro_container

_AVRO_TIME_UNITS = {
    "timestamp-millis": "ms",
    "local-timestamp-millis": "ms",
    "timestamp-micros": "us",
    "local-timestamp-micros": "us",
    "timestamp-nanos": "ns",
    "local-timestamp-nanos": "ns",
}


def _avro_logical(avro_type: Any) -> dict[str, Any]:
    """The non-null branch of an Avro field type, as a dict (``{"type": ...}`` for primitives)."""
    if isinstance(avro_type, list):
        avro_type = next((t for t in avro_type if t != "null"), "null")
    return avro_type if isinstance(avro_type, dict) else {"type": avro_type}


def _avro_column(values: list[Any], avro_type: Any) -> pa.Array:
    t = _avro_logical(avro_type)
    logical = t.get("logicalType")
    if logical in _AVRO_TIME_UNITS:
        return pa.array(values, pa.int64()).cast(pa.timestamp(_AVRO_TIME_UNITS[logical]))
    if logical == "date":
        return pa.array(values, pa.int32()).cast(pa.date32())
    if logical == "time-millis":
        return pa.array(values, pa.int32()).cast(pa.time32("ms"))
    if logical == "time-micros":
        return pa.array(values, pa.int64()).cast(pa.time64("us"))
    if logical == "decimal":
        scale, precision = int(t.get("scale", 0)), int(t["precision"])
        unscaled = [None if v is None else int.from_bytes(v, "big", signed=True) for v in values]
        return pa.array(
            [None if u is None else Decimal(u).scaleb(-scale) for u in unscaled],
            pa.decimal128(precision, scale),
        )
    return pa.array(values)


def read_avro(io: FileIO, path: str, columns: list[str]) -> pa.Table:
    """Avro data files (``file.format=avro``, rare) are decoded record by record."""
    contents = decode_avro_container(io.read_bytes(path), name=path)
    records = [r for r in contents.records if r is not None]
    if not columns:
        return pa.table({"rows": pa.nulls(len(records))}).select([])
    types = {f["name"]: f["type"] for f in json.loads(contents.schema_json)["fields"]}
    return pa.table({c: _avro_column([r.get(c) for r in records], types[c]) for c in columns})
