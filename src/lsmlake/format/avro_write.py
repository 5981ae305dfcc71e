"""Write ``file.format=avro`` data files: Arrow columns in Avro's value forms (integers for temporal
values, unscaled bytes for decimals), encoded into one compressed block per chunk of rows."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from decimal import Context, Decimal
from typing import IO, Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.types import DataField, DataType, to_arrow_type
from lsmlake.format.avro_encode import Piece, column_pieces, interleave, is_flat, value_pieces
from lsmlake.format.avro_schema import data_file_schema
from lsmlake.metadata.avro_container import avro_block, avro_header, java_schema_json, strip_logical_types

_EXACT = Context(prec=80)  # DECIMAL(38) values scale without rounding (the default context keeps 28 digits)


def _avro_unit(t: DataType) -> str:
    return "ms" if (t.precision if t.precision is not None else 6) <= 3 else "us"


def _raw_arrow_type(t: DataType) -> tuple[pa.DataType, pa.DataType]:
    """(the type holding the Avro unit, the integer type of its raw value) for temporal leaves, recursively."""
    root = t.root
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = _avro_unit(t)
        return pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None), pa.int64()
    if root == "DATE":
        return pa.date32(), pa.int32()
    if root == "TIME":
        return pa.time32("ms"), pa.int32()
    if root == "ARRAY":
        assert t.element is not None
        unit, raw = _raw_arrow_type(t.element)
        return (
            pa.list_(pa.field("element", unit, t.element.nullable)),
            pa.list_(pa.field("element", raw, t.element.nullable)),
        )
    if root == "MAP":
        assert t.key is not None and t.value is not None
        ku, kr = _raw_arrow_type(t.key)
        vu, vr = _raw_arrow_type(t.value)
        return (
            pa.map_(ku, pa.field("value", vu, t.value.nullable)),
            pa.map_(kr, pa.field("value", vr, t.value.nullable)),
        )
    if root == "ROW":
        pairs = [(f, _raw_arrow_type(f.type)) for f in t.fields]
        return (
            pa.struct([pa.field(f.name, u, f.type.nullable) for f, (u, _) in pairs]),
            pa.struct([pa.field(f.name, r, f.type.nullable) for f, (_, r) in pairs]),
        )
    same = to_arrow_type(t)
    return same, same


def _has(t: DataType, roots: frozenset[str]) -> bool:
    if t.root in roots:
        return True
    children = [t.element, t.key, t.value, *(f.type for f in t.fields)]
    return any(c is not None and _has(c, roots) for c in children)


def _decimal_bytes(unscaled: int) -> bytes:
    """Java's BigInteger.toByteArray: the shortest big-endian two's complement."""
    length = (~unscaled if unscaled < 0 else unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def _decimal_column(column: pa.Array) -> pa.Array:
    """Decimal128 values as Java's minimal big-endian unscaled bytes, computed over the whole column."""
    n = len(column)
    if n == 0:
        return pa.array([], pa.binary())
    data = column.buffers()[1]
    assert data is not None
    words = np.frombuffer(data, dtype=np.uint8, count=16 * (column.offset + n), offset=0)
    be = words.reshape(-1, 16)[column.offset :, ::-1]  # little-endian words -> big-endian bytes
    sign = np.where(be[:, 0] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    leading = np.cumprod(be == sign[:, None], axis=1).sum(axis=1)
    start = np.minimum(leading, 15)
    msb = np.take_along_axis(be, start[:, None], axis=1)[:, 0] >= 0x80
    start = np.where(msb != (sign == 0xFF), start - 1, start)
    keep = np.arange(16)[None, :] >= start[:, None]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(16 - start, out=offsets[1:])
    flat = np.ascontiguousarray(be[keep])
    validity = column.buffers()[0] if column.null_count else None
    if validity is not None and column.offset:
        validity = pc.is_valid(column).buffers()[1]
    return pa.Array.from_buffers(
        pa.binary(), n, [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(flat.tobytes())]
    )


def _nested_values(value: Any, t: DataType) -> Any:
    """One nested value (temporal leaves already raw integers) in the form fastavro encodes."""
    if value is None:
        return None
    root = t.root
    if root == "DECIMAL":
        assert t.scale is not None
        return _decimal_bytes(int(Decimal(value).scaleb(t.scale, context=_EXACT)))
    if root == "ARRAY":
        assert t.element is not None
        return [_nested_values(v, t.element) for v in value]
    if root == "MAP":
        assert t.key is not None and t.value is not None
        if t.key.is_string:
            return {k: _nested_values(v, t.value) for k, v in value}
        return [{"key": _nested_values(k, t.key), "value": _nested_values(v, t.value)} for k, v in value]
    if root == "ROW":
        return {f.name: _nested_values(value[f.name], f.type) for f in t.fields}
    return value


def raw_column(column: pa.Array, t: DataType) -> pa.Array:
    """A column with temporal values as integers in the Avro unit (nested ones too) and top-level decimals
    as Java's unscaled bytes."""
    unit_type, raw_type = _raw_arrow_type(t)
    if column.type != unit_type:
        column = pc.cast(column, unit_type)
    if raw_type != unit_type:
        column = column.cast(raw_type)
    if t.root == "DECIMAL":
        return _decimal_column(column)
    return column


def avro_column(column: pa.Array, t: DataType) -> list[Any]:
    """A column's values as fastavro takes them for its Avro type (timestamps, dates, times as integers,
    decimals as unscaled bytes, maps as dicts or key/value records)."""
    values: list[Any] = raw_column(column, t).to_pylist()
    if t.root != "DECIMAL" and _has(t, frozenset({"DECIMAL", "MAP"})):
        values = [_nested_values(v, t) for v in values]
    return values


def encode_rows(rows: pa.Table, fields: Sequence[DataField], parsed: Sequence[Any]) -> bytes:
    """The Avro binary records of ``rows``: flat columns encoded with numpy, nested ones by fastavro
    (``parsed``: each field's parsed Avro type, logical annotations stripped)."""
    pieces: list[Piece] = []
    for f, schema in zip(fields, parsed, strict=True):
        column = rows.column(f.name).combine_chunks()
        if is_flat(f.type):
            pieces += column_pieces(raw_column(column, f.type), f.type)
        else:
            pieces.append(value_pieces(avro_column(column, f.type), schema))
    return interleave(pieces, rows.num_rows)


class AvroFileSink:
    """One Avro data file being written to ``stream``: the header first, then a block per ``write``."""

    def __init__(
        self, stream: IO[bytes], fields: Sequence[DataField], *, codec: str, level: int | None
    ) -> None:
        self.stream, self.fields, self.codec, self.level = stream, list(fields), codec, level
        schema = data_file_schema(self.fields)
        named: dict[str, Any] = {}
        self._parsed = [
            fastavro.parse_schema(strip_logical_types(f["type"]), named_schemas=named)
            for f in schema["fields"]
        ]
        self._sync = secrets.token_bytes(16)
        stream.write(avro_header(java_schema_json(schema), codec, self._sync))

    def write(self, rows: pa.Table) -> None:
        """Append ``rows`` (with columns named as the fields) as one block."""
        if rows.num_rows == 0:
            return
        raw = encode_rows(rows, self.fields, self._parsed)
        self.stream.write(
            avro_block(rows.num_rows, raw, codec=self.codec, level=self.level, sync_marker=self._sync)
        )

    def close(self) -> None:
        """Nothing to finish: every block was written whole and an Avro container has no footer."""
