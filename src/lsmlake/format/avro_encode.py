"""Avro binary encoding of Arrow columns with numpy: every column becomes pieces (bytes plus a length per
row) that are interleaved row by row into the records of one block; nested columns go through fastavro."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.types import DataType

_FLAT_ROOTS = frozenset(
    {
        "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR", "VARCHAR", "BINARY",
        "VARBINARY", "BLOB", "TIMESTAMP", "TIMESTAMP_LTZ", "DATE", "TIME", "DECIMAL",
    }
)  # fmt: skip
_UNION_NULL = np.uint8(0)  # zig-zag of branch 0 ("null")
_UNION_VALUE = np.uint8(2)  # zig-zag of branch 1 (the type)


@dataclass(frozen=True)
class Piece:
    """Bytes of one part of a column, ``lengths[i]`` of them belonging to row ``i`` (in row order)."""

    data: np.ndarray  # uint8
    lengths: np.ndarray  # int64, one per row


def _varints(values: np.ndarray) -> Piece:
    """Avro longs: zig-zag, then 7-bit groups, least significant first, high bit set on all but the last."""
    v = values.astype(np.int64, copy=False)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    lengths = np.ones(len(z), dtype=np.int64)
    rest = z >> np.uint64(7)
    while rest.any():
        lengths += rest != 0
        rest >>= np.uint64(7)
    width = int(lengths.max()) if len(z) else 1
    k = np.arange(width, dtype=np.uint64)
    groups = (z[:, None] >> (k[None, :] * np.uint64(7))) & np.uint64(0x7F)
    more = k[None, :].astype(np.int64) < (lengths[:, None] - 1)
    encoded = (groups | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
    keep = k[None, :].astype(np.int64) < lengths[:, None]
    return Piece(encoded[keep], lengths)


def _fixed(values: np.ndarray, dtype: str) -> Piece:
    data = np.ascontiguousarray(values.astype(dtype, copy=False)).view(np.uint8)
    width = np.dtype(dtype).itemsize
    return Piece(data, np.full(len(values), width, dtype=np.int64))


def _binary(column: pa.Array) -> list[Piece]:
    """Avro bytes/string: the length as a long, then the bytes (straight from the Arrow buffers)."""
    large = pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type)
    offsets_type = np.int64 if large else np.int32
    n = len(column)
    offsets_buf = column.buffers()[1]
    data_buf = column.buffers()[2]
    assert offsets_buf is not None
    offsets = np.frombuffer(offsets_buf, dtype=offsets_type, count=column.offset + n + 1)[column.offset :]
    lengths = np.diff(offsets).astype(np.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    raw = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)[start:stop]
    return [_varints(lengths), Piece(raw, lengths)]


def _expand(pieces: list[Piece], valid: np.ndarray) -> list[Piece]:
    """Pieces of the valid rows only, stretched over every row (null rows get no bytes)."""
    out = []
    for p in pieces:
        lengths = np.zeros(len(valid), dtype=np.int64)
        lengths[valid] = p.lengths
        out.append(Piece(p.data, lengths))
    return out


def _flat_pieces(column: pa.Array, t: DataType) -> list[Piece]:
    """A non-null flat column (values already in their Avro unit) as pieces."""
    root = t.root
    if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY", "BLOB", "DECIMAL"):
        return _binary(column)
    if root == "BOOLEAN":
        return [_fixed(column.to_numpy(zero_copy_only=False), "u1")]
    if root == "FLOAT":
        return [_fixed(column.to_numpy(zero_copy_only=False), "<f4")]
    if root == "DOUBLE":
        return [_fixed(column.to_numpy(zero_copy_only=False), "<f8")]
    return [_varints(column.to_numpy(zero_copy_only=False))]


def is_flat(t: DataType) -> bool:
    """Whether ``column_pieces`` encodes the type (nested types go through ``value_pieces``)."""
    return t.root in _FLAT_ROOTS


def column_pieces(raw: pa.Array, t: DataType) -> list[Piece]:
    """A flat column as pieces, its values already raw (temporal values as integers in the Avro unit,
    decimals as unscaled bytes); a nullable one is a ``["null", T]`` union."""
    n = len(raw)
    if not t.nullable:
        return _flat_pieces(raw, t)
    valid = np.ones(n, dtype=bool) if raw.null_count == 0 else pc.is_valid(raw).to_numpy(zero_copy_only=False)
    prefix = Piece(np.where(valid, _UNION_VALUE, _UNION_NULL).astype(np.uint8), np.ones(n, dtype=np.int64))
    values = raw if raw.null_count == 0 else raw.filter(pa.array(valid))
    return [prefix, *_expand(_flat_pieces(values, t), valid)]


def value_pieces(values: Sequence[Any], parsed_schema: Any) -> Piece:
    """Values (in fastavro's form, for a parsed schema) encoded one by one by fastavro."""
    parsed = parsed_schema
    buf = io.BytesIO()
    ends = []
    write = fastavro.schemaless_writer
    for v in values:
        write(buf, parsed, v)
        ends.append(buf.tell())
    lengths = np.diff(np.asarray([0, *ends], dtype=np.int64))
    return Piece(np.frombuffer(buf.getvalue(), dtype=np.uint8), lengths)


def interleave(pieces: Sequence[Piece], rows: int) -> bytes:
    """The records: for each row, its bytes of every piece in order."""
    if rows == 0:
        return b""
    row_lengths = np.zeros(rows, dtype=np.int64)
    for p in pieces:
        row_lengths += p.lengths
    row_starts = np.zeros(rows, dtype=np.int64)
    np.cumsum(row_lengths[:-1], out=row_starts[1:])
    out = np.empty(int(row_lengths.sum()), dtype=np.uint8)
    in_row = np.zeros(rows, dtype=np.int64)
    for p in pieces:
        total = int(p.lengths.sum())
        if total:
            src_starts = np.zeros(rows, dtype=np.int64)
            np.cumsum(p.lengths[:-1], out=src_starts[1:])
            shift = np.repeat(row_starts + in_row - src_starts, p.lengths)
            out[shift + np.arange(total, dtype=np.int64)] = p.data[:total]
        in_row += p.lengths
    return out.tobytes()
