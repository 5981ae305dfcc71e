"""Vectorized BinaryRow building, MurmurHash3 (words, seed 42) hashing and bucket ids (format.md §5.6)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lsmlake.core.binary_row import (
    decimal_precision,
    fixed_part_size,
    header_size,
    is_compact_decimal,
    is_compact_timestamp,
)
from lsmlake.core.types import DataType, to_arrow_type

__all__ = ["BinaryRows", "binary_rows", "bucket_for_hash", "bucket_ids", "hash_binary_rows", "hash_bytes",
           "hash_rows"]

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
Columns: TypeAlias = pa.Table | pa.RecordBatch | Sequence[pa.Array | pa.ChunkedArray]
Writer: TypeAlias = Callable[[U8, I64], None]

SEED = 42
_C1, _C2, _C3 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593), np.uint32(0xE6546B64)
_F1, _F2 = np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)
_FIXED_DTYPES = {
    "TINYINT": np.uint8, "SMALLINT": np.uint16, "INT": np.uint32, "DATE": np.uint32, "TIME": np.uint32,
    "FLOAT": np.uint32, "BIGINT": np.uint64, "DOUBLE": np.uint64,
}
_BYTES_ROOTS = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY", "BLOB"})
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


class BinaryRows(NamedTuple):
    """All rows' BinaryRow bytes back to back; row ``i`` is ``data[offsets[i]:offsets[i+1]]`` (8-aligned)."""

    data: U8
    offsets: I64

    @property
    def num_rows(self) -> int:
        return len(self.offsets) - 1

    @property
    def fixed_length(self) -> int | None:
        """The common row length when every row has the same length, else None."""
        lengths = np.diff(self.offsets)
        if len(lengths) == 0 or bool((lengths == lengths[0]).all()):
            return int(lengths[0]) if len(lengths) else 0
        return None

    def row(self, i: int) -> bytes:
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()


@dataclass
class _Col:
    """One encoded column: slot words, null mask and (for var-part fields) the var-part chunk per row."""

    slot: U64
    null: Bools
    var_len: I64 | None = None  # bytes appended to the var part per row
    uses_offset: Bools | None = None  # rows whose slot gets ``offset << 32`` (None: all rows)
    writer: Writer | None = None  # writes the chunks, given each row's absolute chunk position


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
    if t.root in _BYTES_ROOTS:
        if pa.types.is_string(at) or pa.types.is_large_string(at) or pa.types.is_binary(at) \
                or pa.types.is_large_binary(at):
            return arr
        if pa.types.is_string_view(at):
            return arr.cast(pa.large_string())
        return arr.cast(pa.large_binary())
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and pa.types.is_timestamp(at):
        return arr
    if t.root == "DECIMAL":
        # Same scale needs no rescaling; the raw 128-bit value is used unless a compact slot could overflow.
        if pa.types.is_decimal128(at) and at.scale == (t.scale or 0) \
                and (at.precision <= 18 or not is_compact_decimal(t)):
            return arr
        target: pa.DataType = pa.decimal128(decimal_precision(t), t.scale or 0)
    else:
        target = to_arrow_type(t)
    if at == target:
        return arr
    return arr.cast(target, safe=t.root != "TIME")


# --------------------------------------------------------------------------- column encoders


def _encode_fixed(arr: pa.Array, t: DataType, null: Bools) -> _Col:
    if t.root == "BOOLEAN":
        values = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64)
    else:
        values = _primitive(arr, _FIXED_DTYPES[t.root]).astype(np.uint64)  # zero-extends the raw bits
    if null.any():
        values[null] = 0
    return _Col(values, null)


def _encode_timestamp(arr: pa.Array, t: DataType, null: Bools) -> _Col:
    raw = _primitive(arr, np.int64).astype(np.int64)
    per = _UNIT_NANOS[arr.type.unit]
    if per >= 1_000_000:
        millis, nanos = raw * (per // 1_000_000), np.zeros(len(raw), dtype=np.int64)
    else:
        millis, rest = np.divmod(raw, 1_000_000 // per)
        nanos = rest * per
    millis[null] = 0
    nanos[null] = 0
    if is_compact_timestamp(t):
        return _Col(millis.view(np.uint64), null)

    def write(flat: U8, pos: I64) -> None:
        flat.view(np.int64)[pos >> 3] = millis

    return _Col(nanos.view(np.uint64), null, np.full(len(raw), 8, dtype=np.int64), None, write)


def _bit_length(x: U64) -> I64:
    out = np.zeros(len(x), dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << s)
        x = np.where(big, x >> np.uint64(s), x)
        out += big * s
    out += x != 0
    return out


def _encode_decimal(arr: pa.Array, t: DataType, null: Bools) -> _Col:
    pairs = _primitive(arr, np.uint64, 2).reshape(-1, 2).copy()  # little-endian (low, high) words
    pairs[null] = 0
    if is_compact_decimal(t):
        return _Col(pairs[:, 0].copy(), null)
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

    def write(flat: U8, pos: I64) -> None:
        flat64 = flat.view(np.uint64)
        flat64[pos >> 3] = words[:, 0]
        flat64[(pos >> 3) + 1] = words[:, 1]

    return _Col(width.astype(np.uint64), null, np.full(len(arr), 16, dtype=np.int64), None, write)


def _encode_bytes(arr: pa.Array, null: Bools) -> _Col:
    n = len(arr)
    bufs = arr.buffers()
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    raw_offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)
    offsets = raw_offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
    starts = offsets[:-1]
    lengths = np.where(null, 0, offsets[1:] - offsets[:-1]).astype(np.int64)
    has_data = bufs[2] is not None and bufs[2].size > 0
    data = np.frombuffer(bufs[2], dtype=np.uint8) if has_data else np.zeros(1, dtype=np.uint8)
    slot = np.zeros(n, dtype=np.uint64)
    inline = ~null & (lengths <= 7)
    if inline.any():
        ix = np.nonzero(inline)[0]
        cols = np.arange(8)
        src = np.minimum(starts[ix, None] + cols[:7], len(data) - 1)
        ln = lengths[ix]
        packed = np.zeros((len(ix), 8), dtype=np.uint8)
        packed[:, :7] = np.where(cols[:7] < ln[:, None], data[src], 0)
        packed[:, 7] = 0x80 | ln
        slot[ix] = packed.view(np.uint64)[:, 0]
    long = ~null & (lengths >= 8)
    if not long.any():
        return _Col(slot, null)
    slot[long] = lengths[long].astype(np.uint64)
    var_len = np.where(long, (lengths + 7) & ~7, 0)

    def write(flat: U8, pos: I64) -> None:
        ln = lengths[long]
        before = np.cumsum(ln) - ln
        step = np.arange(int(ln.sum()), dtype=np.int64)
        dst = np.repeat(pos[long] - before, ln) + step
        src = np.repeat(starts[long] - before, ln) + step
        flat[dst] = data[src]

    return _Col(slot, null, var_len, long, write)


def _encode_column(arr: pa.Array, t: DataType) -> _Col:
    arr = _conform(arr, t)
    null = _null_mask(arr)
    root = t.root
    if root == "BOOLEAN" or root in _FIXED_DTYPES:
        return _encode_fixed(arr, t, null)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _encode_timestamp(arr, t, null)
    if root == "DECIMAL":
        return _encode_decimal(arr, t, null)
    if root in _BYTES_ROOTS:
        return _encode_bytes(arr, null)
    raise ValueError(f"type {root} is not supported as a bucket key / BinaryRow field")


# --------------------------------------------------------------------------- rows


def binary_rows(columns: Columns, types: Sequence[DataType]) -> BinaryRows:
    """Every row's BinaryRow bytes (RowKind 0), byte-identical to ``encode_row`` of that row's values."""
    arrays = _columns(columns)
    if len(arrays) != len(types) or not arrays:
        raise ValueError(f"{len(arrays)} columns for {len(types)} types (need at least one)")
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError("columns have different lengths")
    cols = [_encode_column(a, t) for a, t in zip(arrays, types, strict=True)]
    arity = len(types)
    if n == 0:
        return BinaryRows(np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))
    head_words, fixed_words = header_size(arity) // 8, fixed_part_size(arity) // 8

    cursor = np.full(n, fixed_words * 8, dtype=np.int64)
    positions: list[I64 | None] = []
    for col in cols:
        if col.var_len is None:
            positions.append(None)
            continue
        positions.append(cursor.copy())
        shifted = cursor.astype(np.uint64) << np.uint64(32)
        if col.uses_offset is None:
            col.slot |= shifted
        else:
            col.slot[col.uses_offset] |= shifted[col.uses_offset]
        cursor += col.var_len
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(cursor, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    flat64 = data.view(np.uint64)

    uniform = bool((cursor == cursor[0]).all())
    fixed = flat64.reshape(n, -1)[:, :fixed_words] if uniform else np.zeros((n, fixed_words), np.uint64)
    for i, col in enumerate(cols):
        fixed[:, head_words + i] = col.slot
        if col.null.any():
            bit = i + 8
            fixed[:, bit // 64] |= col.null.astype(np.uint64) << np.uint64(bit % 64)
    if not uniform:
        flat64[(offsets[:-1, None] >> 3) + np.arange(fixed_words)] = fixed
    starts = offsets[:-1]
    for col, pos in zip(cols, positions, strict=True):
        if col.writer is not None and pos is not None:
            col.writer(data, starts + pos)
    return BinaryRows(data, offsets)


# --------------------------------------------------------------------------- hashing


def _mix(h: npt.NDArray[np.uint32], w: npt.NDArray[np.uint32]) -> None:
    """One MurmurHash3 x86_32 body step over word column ``w``, in place on ``h``."""
    k = w * _C1
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= _C2
    h ^= k
    rot = h >> np.uint32(19)
    h <<= np.uint32(13)
    h |= rot
    h *= np.uint32(5)
    h += _C3


def _fmix(h: npt.NDArray[np.uint32], lengths: npt.NDArray[np.uint32]) -> npt.NDArray[np.int32]:
    h ^= lengths
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h.view(np.int32)


def hash_binary_rows(rows: BinaryRows) -> npt.NDArray[np.int32]:
    """Java ``BinaryRow.hashCode()`` (MurmurHashUtils.hashBytesByWords, seed 42) of every row."""
    n = rows.num_rows
    words = rows.data.view("<u4")
    lengths = np.diff(rows.offsets)
    length = rows.fixed_length
    if length is not None:
        h = np.full(n, SEED, dtype=np.uint32)
        if n == 0:
            return h.view(np.int32)
        matrix = words.reshape(n, -1)
        for j in range(length // 4):
            _mix(h, matrix[:, j])
        return _fmix(h, lengths.astype(np.uint32))
    # Variable lengths: longest rows first, so the rows still hashing at word j are a prefix.
    nwords = lengths // 4
    order = np.argsort(-nwords, kind="stable")
    word_start = (rows.offsets[:-1] // 4)[order]
    active = np.searchsorted(-nwords[order], -np.arange(int(nwords.max())), side="left")
    hs = np.full(n, SEED, dtype=np.uint32)
    for j, k in enumerate(active.tolist()):
        _mix(hs[:k], words[word_start[:k] + j])
    out = np.empty(n, dtype=np.int32)
    out[order] = _fmix(hs, lengths[order].astype(np.uint32))
    return out


def hash_rows(columns: Columns, types: Sequence[DataType]) -> npt.NDArray[np.int32]:
    """The BinaryRow hash of every row of ``columns`` (the bucket-key columns, in bucket-key order)."""
    return hash_binary_rows(binary_rows(columns, types))


def bucket_ids(columns: Columns, types: Sequence[DataType], num_buckets: int) -> npt.NDArray[np.int32]:
    """Paimon's default bucket of every row: ``Math.abs(hash % numBuckets)`` with Java's truncating ``%``."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    hashes = hash_rows(columns, types).astype(np.int64)
    return np.abs(np.fmod(hashes, num_buckets)).astype(np.int32)


# --------------------------------------------------------------------------- scalar helpers


def hash_bytes(row_bytes: bytes) -> int:
    """Scalar ``hashBytesByWords`` (seed 42) of one row's bytes (length a multiple of 4), as Java int."""
    if len(row_bytes) % 4:
        raise ValueError("hashBytesByWords needs a length that is a multiple of 4")
    m = 0xFFFFFFFF
    h = SEED
    for (w,) in struct.iter_unpack("<I", row_bytes):
        k = (w * 0xCC9E2D51) & m
        k = ((k << 15) | (k >> 17)) & m
        k = (k * 0x1B873593) & m
        h ^= k
        h = ((h << 13) | (h >> 19)) & m
        h = (h * 5 + 0xE6546B64) & m
    h ^= len(row_bytes)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def bucket_for_hash(hash_value: int, num_buckets: int) -> int:
    """``Math.abs(hash % numBuckets)`` for one Java int hash."""
    return abs(hash_value) % num_buckets
