"""Vectorized BinaryRow building: Arrow columns encoded as numpy word arrays (fixed slots, var chunks).

:func:`binary_rows` lays them out as each row's BinaryRow bytes; :mod:`lsmlake.core.bucket` hashes the
same words without building the rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lsmlake.core.binary_row import (
    BYTES_ROOTS,
    decimal_precision,
    fixed_part_size,
    header_size,
    is_compact_decimal,
    is_compact_timestamp,
)
from lsmlake.core.types import DataType, to_arrow_type

U8 = npt.NDArray[np.uint8]
U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
Columns: TypeAlias = pa.Table | pa.RecordBatch | Sequence[pa.Array | pa.ChunkedArray]
Rows: TypeAlias = I64 | slice  # an index array of rows, or slice(None) for all rows
WordFn: TypeAlias = Callable[[int, Rows], U64]

_FIXED_DTYPES = {
    "TINYINT": np.uint8,
    "SMALLINT": np.uint16,
    "INT": np.uint32,
    "DATE": np.uint32,
    "TIME": np.uint32,
    "FLOAT": np.uint32,
    "BIGINT": np.uint64,
    "DOUBLE": np.uint64,
}
_LOW_BYTES = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)  # mask of the low i bytes
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


class BinaryRows(NamedTuple):
    """All rows' BinaryRow bytes back to back; row ``i`` is ``data[offsets[i]:offsets[i+1]]`` (8-aligned)."""

    data: U8
    offsets: I64

    @property
    def num_rows(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int) -> bytes:
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()


@dataclass
class EncodedField:
    """One encoded field: its slot word and null mask, plus the chunk it appends to the var part."""

    slot: U64
    null: Bools
    var_words: int | I64 = 0  # 8-byte words appended to the var part (per row, or the same for all rows)
    uses_offset: Bools | None = None  # rows whose slot gets ``offset << 32`` (None: every row)
    word: WordFn | None = None  # word(m, rows): word m of the chunk for those rows (only rows that have it)


@dataclass
class EncodedRows:
    """All fields of all rows, with var-part offsets resolved into the slots."""

    cols: list[EncodedField]
    header: list[U64] | None  # header words per row; None when no field is null (all zero)
    var_start: list[I64 | None]  # per field: the row-relative word index of its chunk
    lengths: I64  # row lengths in bytes


# --------------------------------------------------------------------------- Arrow -> numpy


def _as_array(col: object) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if isinstance(col, pa.Array):
        return col
    return pa.array(col)


def _columns(data: Columns) -> list[pa.Array]:
    cols = data.columns if isinstance(data, (pa.Table, pa.RecordBatch)) else list(data)
    return [_as_array(c) for c in cols]


def _null_mask(arr: pa.Array) -> Bools:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=np.bool_)
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _primitive(arr: pa.Array, dtype: npt.DTypeLike, width: int = 1) -> npt.NDArray[Any]:
    """The values buffer as numpy (``width`` items per value), sliced to the array, no copy."""
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None:
        return np.zeros(n * width, dtype=dtype)
    flat = np.frombuffer(buf, dtype=dtype)
    return flat[arr.offset * width : (arr.offset + n) * width]


def _conform(arr: pa.Array, t: DataType) -> pa.Array:
    """Cast ``arr`` to what the encoder reads for ``t`` (keeps any timestamp unit and any string flavour)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    at = arr.type
    if t.root in BYTES_ROOTS:
        if (
            pa.types.is_string(at)
            or pa.types.is_large_string(at)
            or pa.types.is_binary(at)
            or pa.types.is_large_binary(at)
        ):
            return arr
        if pa.types.is_string_view(at):
            return arr.cast(pa.large_string())
        return arr.cast(pa.large_binary())
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and pa.types.is_timestamp(at):
        return arr
    if t.root == "DECIMAL":
        # Same scale needs no rescaling; the raw 128-bit value is used unless a compact slot could overflow.
        if (
            pa.types.is_decimal128(at)
            and at.scale == (t.scale or 0)
            and (at.precision <= 18 or not is_compact_decimal(t))
        ):
            return arr
        target: pa.DataType = pa.decimal128(decimal_precision(t), t.scale or 0)
    else:
        target = to_arrow_type(t)
    if at == target:
        return arr
    return arr.cast(target, safe=t.root != "TIME")


# --------------------------------------------------------------------------- column encoders


def _encode_fixed(arr: pa.Array, t: DataType, null: Bools) -> EncodedField:
    if t.root == "BOOLEAN":
        values = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64)
    else:
        values = _primitive(arr, _FIXED_DTYPES[t.root]).astype(np.uint64)  # zero-extends the raw bits
    if null.any():
        values[null] = 0
    return EncodedField(values, null)


def _encode_timestamp(arr: pa.Array, t: DataType, null: Bools) -> EncodedField:
    raw = _primitive(arr, np.int64).astype(np.int64)
    per = _UNIT_NANOS[arr.type.unit]
    if per >= 1_000_000:
        millis, nanos = raw * (per // 1_000_000), np.zeros(len(raw), dtype=np.int64)
    else:
        millis, rest = np.divmod(raw, 1_000_000 // per)
        nanos = rest * per
    millis[null] = 0
    nanos[null] = 0
    millis_bits = millis.view(np.uint64)
    if is_compact_timestamp(t):
        return EncodedField(millis_bits, null)
    # Slot: offset | nanos-of-milli; var part: the epoch millis (reserved, zero, for nulls).
    return EncodedField(nanos.view(np.uint64), null, 1, None, lambda m, rows: millis_bits[rows])


def _bit_length(x: U64) -> I64:
    out = np.zeros(len(x), dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << s)
        x = np.where(big, x >> np.uint64(s), x)
        out += big * s
    out += x != 0
    return out


def _encode_decimal(arr: pa.Array, t: DataType, null: Bools) -> EncodedField:
    pairs = _primitive(arr, np.uint64, 2).reshape(-1, 2).copy()  # little-endian (low, high) words
    pairs[null] = 0
    if is_compact_decimal(t):
        return EncodedField(pairs[:, 0].copy(), null)
    # BigInteger.toByteArray(): minimal big-endian two's complement, zero-padded to 16 bytes on the right.
    neg = pairs[:, 1] >> np.uint64(63) != 0
    mag = np.where(neg[:, None], ~pairs, pairs)
    bits = np.where(mag[:, 1] != 0, 64 + _bit_length(mag[:, 1]), _bit_length(mag[:, 0]))
    width = np.where(null, 0, bits // 8 + 1)
    big_endian = pairs.view(np.uint8)[:, ::-1]
    cols = np.arange(16)
    src = np.minimum((16 - width)[:, None] + cols, 15)
    chunk = np.where(cols < width[:, None], np.take_along_axis(big_endian, src, axis=1), 0).astype(np.uint8)
    words = np.ascontiguousarray(chunk).view(np.uint64)
    return EncodedField(width.astype(np.uint64), null, 2, None, lambda m, rows: words[rows, m])


def _byte_windows(data: U8) -> U64:
    """``out[i]`` = the 8 bytes at ``data[i:i+8]`` as a little-endian uint64 (zero past the end)."""
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[: len(data)] = data
    return np.ndarray(shape=(len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))


def _encode_bytes(arr: pa.Array, null: Bools) -> EncodedField:
    n = len(arr)
    bufs = arr.buffers()
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    if bufs[1] is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        raw_offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)
        offsets = raw_offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
    base, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(bufs[2], dtype=np.uint8)[base:end] if end > base else np.zeros(0, dtype=np.uint8)
    windows = _byte_windows(data)
    starts = offsets[:-1] - base
    lengths = np.where(null, 0, offsets[1:] - offsets[:-1])
    # Up to 7 bytes inline: the data in the low bytes, 0x80 | len in the top byte.
    short = np.minimum(lengths, 7)
    slot = (windows[starts] & _LOW_BYTES[short]) | ((short | 0x80).astype(np.uint64) << np.uint64(56))
    slot[null] = 0
    long = lengths >= 8
    if not long.any():
        return EncodedField(slot, null)
    slot[long] = lengths[long].astype(np.uint64)

    def word(m: int, rows: Rows) -> U64:
        rest = lengths[rows] - 8 * m
        out: U64 = windows[starts[rows] + 8 * m] & _LOW_BYTES[np.minimum(rest, 8)]
        return out

    return EncodedField(slot, null, np.where(long, (lengths + 7) >> 3, 0), long, word)


def _encode_column(arr: pa.Array, t: DataType) -> EncodedField:
    arr = _conform(arr, t)
    null = _null_mask(arr)
    root = t.root
    if root == "BOOLEAN" or root in _FIXED_DTYPES:
        return _encode_fixed(arr, t, null)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _encode_timestamp(arr, t, null)
    if root == "DECIMAL":
        return _encode_decimal(arr, t, null)
    if root in BYTES_ROOTS:
        return _encode_bytes(arr, null)
    raise ValueError(f"type {root} is not supported as a bucket key / BinaryRow field")


def encode_columns(columns: Columns, types: Sequence[DataType]) -> EncodedRows:
    arrays = _columns(columns)
    if len(arrays) != len(types) or not arrays:
        raise ValueError(f"{len(arrays)} columns for {len(types)} types (need at least one)")
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError("columns have different lengths")
    cols = [_encode_column(a, t) for a, t in zip(arrays, types, strict=True)]
    cursor: int | I64 = fixed_part_size(len(types)) // 8  # in words, row-relative
    var_start: list[I64 | None] = []
    for col in cols:
        if col.word is None:
            var_start.append(None)
            continue
        start = np.broadcast_to(np.asarray(cursor, dtype=np.int64), (n,))
        var_start.append(start)
        shifted = start.astype(np.uint64) << np.uint64(35)  # byte offset << 32
        if col.uses_offset is None:
            col.slot |= shifted
        else:
            col.slot[col.uses_offset] |= shifted[col.uses_offset]
        cursor = cursor + col.var_words
    lengths = np.broadcast_to(np.asarray(cursor, dtype=np.int64) * 8, (n,))
    header: list[U64] | None = None
    if any(col.null.any() for col in cols):
        header = [np.zeros(n, dtype=np.uint64) for _ in range(header_size(len(types)) // 8)]
        for i, col in enumerate(cols):
            bit = i + 8
            header[bit // 64] |= col.null.astype(np.uint64) << np.uint64(bit % 64)
    return EncodedRows(cols, header, var_start, lengths)


def chunk_steps(col: EncodedField, n: int) -> Iterator[tuple[int, Rows]]:
    """(m, rows) for every word m of a field's var chunk, with the rows whose chunk has a word m."""
    if isinstance(col.var_words, int):
        for m in range(col.var_words):
            yield m, slice(None)
        return
    for m in range(int(col.var_words.max(initial=0))):
        rows = np.flatnonzero(col.var_words > m)
        yield m, slice(None) if len(rows) == n else rows


# --------------------------------------------------------------------------- rows


def binary_rows(columns: Columns, types: Sequence[DataType]) -> BinaryRows:
    """Every row's BinaryRow bytes (RowKind 0), byte-identical to ``encode_row`` of that row's values."""
    enc = encode_columns(columns, types)
    n = len(enc.lengths)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(enc.lengths, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    flat64 = data.view(np.uint64)
    row_word = offsets[:-1] >> 3
    no_nulls: list[U64 | None] = [None] * (header_size(len(types)) // 8)
    fixed = [*(enc.header or no_nulls), *(c.slot for c in enc.cols)]
    uniform = n == 0 or bool((enc.lengths == enc.lengths[0]).all())
    matrix = flat64.reshape(n, -1) if uniform and n else None
    for j, values in enumerate(fixed):
        if values is None:
            continue
        if matrix is not None:
            matrix[:, j] = values
        else:
            flat64[row_word + j] = values
    for col, start in zip(enc.cols, enc.var_start, strict=True):
        if col.word is None or start is None:
            continue
        base = row_word + start
        for m, rows in chunk_steps(col, n):
            flat64[base[rows] + m] = col.word(m, rows)
    return BinaryRows(data, offsets)
