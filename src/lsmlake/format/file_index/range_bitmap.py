"""Paimon's range-bitmap file index: a sorted, chunked dictionary of the distinct values and a bit-slice
index of each row's dictionary code."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError
from lsmlake.format.file_index.bit_slices import BitSlices, roaring, write_bit_slices
from lsmlake.format.file_index.keys import TIMESTAMP_ROOTS

RANGE_BITMAP = "range-bitmap"
CHUNK_SIZE = "chunk-size"
VERSION = 1
_FIXED = {
    "BOOLEAN": ">u1",
    "TINYINT": ">i1",
    "SMALLINT": ">i2",
    "INT": ">i4",
    "DATE": ">i4",
    "TIME": ">i4",
    "BIGINT": ">i8",
    "DECIMAL": ">i8",
    "TIMESTAMP": ">i8",
    "TIMESTAMP_LTZ": ">i8",
    "FLOAT": ">f4",
    "DOUBLE": ">f8",
}
_NO_CHUNKING = frozenset({"BOOLEAN", "TINYINT", "SMALLINT"})


def range_bitmap_supported(t: DataType) -> bool:
    """Paimon's KeyFactory types: strings, booleans, numbers, DECIMAL up to 18 digits, dates, times and
    timestamps up to microseconds."""
    if t.root == "DECIMAL":
        return (t.precision or 10) <= 18
    if t.root in TIMESTAMP_ROOTS:
        return (t.precision if t.precision is not None else 6) <= 6
    return t.is_string or t.root in _FIXED


def default_chunk_size(t: DataType) -> str:
    """Paimon's default dictionary chunk size: none for one- and two-byte keys, else 16 kb."""
    return "0b" if t.root in _NO_CHUNKING else "16kb"


# ---------------------------------------------------------------------------------------------- writing


def _flip(bits: np.ndarray) -> np.ndarray:
    """IEEE bits to integers ordered as Java's Float/Double compareTo (-0.0 < 0.0, NaN last); its own inverse."""
    width = bits.dtype.itemsize * 8 - 1
    flipped: np.ndarray = bits ^ ((bits >> width) & np.iinfo(bits.dtype).max)
    return flipped


def _float_dtype(t: DataType) -> type[np.floating[Any]]:
    return np.float32 if t.root == "FLOAT" else np.float64


def _sortable(values: np.ndarray, t: DataType) -> np.ndarray:
    v = np.array(values, dtype=_float_dtype(t))
    v[np.isnan(v)] = np.nan  # every NaN is one key, as compareTo says
    return _flip(v.view(np.int32 if t.root == "FLOAT" else np.int64))


def _sorted_keys(values: Any, nulls: np.ndarray, t: DataType) -> tuple[Any, np.ndarray]:
    """(distinct non-null keys in Java's comparator order, each row's code: -1 for null)."""
    codes = np.full(len(nulls), -1, dtype=np.int64)
    live = ~nulls
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        present = values.filter(pa.array(live)) if len(values) else values
        uniq = pc.unique(present)
        uniq = uniq.take(pc.sort_indices(uniq))  # bytewise, unsigned: BinaryString's order
        if isinstance(uniq, pa.ChunkedArray):
            uniq = uniq.combine_chunks()
        uniq = uniq.cast(pa.binary())
        codes[live] = np.asarray(pc.index_in(present, value_set=uniq).to_numpy(zero_copy_only=False))
        return uniq, codes
    arr = np.asarray(values)[live]
    if t.root in ("FLOAT", "DOUBLE"):
        uniq_sort, inverse = np.unique(_sortable(arr, t), return_inverse=True)
        codes[live] = inverse.reshape(-1)
        return _flip(uniq_sort).view(_float_dtype(t)), codes
    uniq, inverse = np.unique(arr, return_inverse=True)
    codes[live] = inverse.reshape(-1)
    return uniq, codes


def _string_keys(keys: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(all keys serialized as int length + bytes, each key's start in it, each key's serialized size)."""
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset : keys.offset + len(keys) + 1]
    lengths = np.diff(offsets).astype(np.int64)
    data = np.frombuffer(keys.buffers()[2] or b"", dtype=np.uint8)[offsets[0] : offsets[-1]]
    sizes = lengths + 4
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    prefix = starts[:, None] + np.arange(4)
    out[prefix.ravel()] = lengths.astype(">i4").view(np.uint8)
    payload = np.ones(len(out), dtype=bool)
    payload[prefix.ravel()] = False
    out[payload] = data
    return out, starts, sizes


def _fixed_dictionary(keys: np.ndarray, t: DataType, chunk_size: int) -> bytes:
    fmt = _FIXED[t.root]
    width = int(fmt[-1])
    raw = np.asarray(keys).astype(fmt).view(np.uint8).reshape(-1, width)
    per = 1 + chunk_size // width  # the first key sits in the chunk header
    firsts = np.arange(0, len(keys), per)
    heads: list[bytes] = []
    for j, first in enumerate(firsts):
        size = min(per, len(keys) - int(first)) - 1
        head = bytes([1]) + raw[first].tobytes()
        heads.append(
            head + struct.pack(">iiiii", int(first), j * (per - 1) * width, size, size * width, width)
        )
    rest = np.ones(len(keys), dtype=bool)
    rest[firsts] = False
    return _dictionary(heads, raw[rest].tobytes())


def _string_dictionary(keys: pa.Array, chunk_size: int) -> bytes:
    if not len(keys):
        return _dictionary([], b"")
    data, starts, sizes = _string_keys(keys)
    ends = starts + sizes  # cumulative, inclusive of each key
    n = len(sizes)
    heads: list[bytes] = []
    areas: list[bytes] = []
    keys_offset = 0
    first = 0
    while first < n:
        budget = int(ends[first]) + chunk_size  # keys after the first fit while their bytes do
        last = int(np.searchsorted(ends, budget, side="right")) - 1
        last = min(last, first + chunk_size // 4, n - 1)  # and their int offsets
        size = last - first
        rel = (starts[first + 1 : last + 1] - (ends[first] if size else 0)).astype(">i4").tobytes()
        body = data[int(ends[first]) : int(ends[last])].tobytes()
        head = bytes([1]) + data[int(starts[first]) : int(ends[first])].tobytes()
        heads.append(head + struct.pack(">iiiii", first, keys_offset, size, 4 * size, len(body)))
        areas.append(rel + body)
        keys_offset += len(rel) + len(body)
        first = last + 1
    return _dictionary(heads, b"".join(areas))


def _dictionary(heads: list[bytes], keys: bytes) -> bytes:
    """The ChunkedDictionary: header (version, chunks, offsets length, chunks length), chunk offsets,
    chunk headers, then the keys after each chunk's first."""
    ends = np.cumsum([len(h) for h in heads], dtype=np.int64)
    offset_bytes = (ends - [len(h) for h in heads]).astype(">i4").tobytes()  # each chunk header's start
    chunks = b"".join(heads)
    header = struct.pack(">biii", 1, len(heads), len(offset_bytes), len(chunks))
    return struct.pack(">i", len(header)) + header + offset_bytes + chunks + keys


def _key_bytes(keys: Any, i: int, t: DataType) -> bytes:
    if isinstance(keys, pa.Array):
        k: bytes = keys[i].as_py()
        return struct.pack(">i", len(k)) + k
    return np.asarray(keys[i : i + 1]).astype(_FIXED[t.root]).tobytes()


def write_range_bitmap(values: Any, nulls: np.ndarray, t: DataType, chunk_size: int) -> bytes:
    """A range-bitmap index of one column (``values`` as :func:`keys.array_keys` gives them)."""
    keys, codes = _sorted_keys(values, nulls, t)
    n = len(keys)
    if isinstance(keys, pa.Array):
        dictionary = _string_dictionary(keys, chunk_size)
    else:
        dictionary = _fixed_dictionary(keys, t, chunk_size)
    bounds = _key_bytes(keys, 0, t) + _key_bytes(keys, n - 1, t) if n else b""
    header = struct.pack(">bii", VERSION, len(nulls), n) + bounds + struct.pack(">i", len(dictionary))
    return struct.pack(">i", len(header)) + header + dictionary + write_bit_slices(codes, n)


# ---------------------------------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return out

    def block(self) -> tuple[int, int]:
        """(start, end) of a length-prefixed block, the cursor moved past it."""
        (length,) = self.unpack(">i")
        if length < 0 or self.pos + length > len(self.data):
            raise CorruptFileError(f"block of {length} bytes at {self.pos} runs past the index")
        self.pos += length
        return self.pos - length, self.pos


class RangeBitmapIndex:
    """A parsed range-bitmap index: ``keys`` (the sorted dictionary: numpy, or Arrow binary for strings)
    and the bit-sliced code of each row."""

    def __init__(self, data: bytes, t: DataType, *, source: str) -> None:
        self.source = source
        try:
            self._parse(data, t)
        except (struct.error, IndexError, ValueError) as e:
            raise CorruptFileError(f"{source}: malformed range-bitmap index ({e})") from e

    def _parse(self, data: bytes, t: DataType) -> None:
        r = _Reader(data, 0)
        start, end = r.block()
        head = _Reader(data, start)
        version, self.row_count, self.cardinality = head.unpack(">bii")
        if version > VERSION:
            raise CorruptFileError(f"{self.source}: range-bitmap version {version} is not supported")
        head.pos = end - 4
        (dict_length,) = head.unpack(">i")
        self.keys = self._dictionary(data, end, t)
        self.slices = BitSlices(data, end + dict_length, self.row_count, source=self.source)

    def _dictionary(self, data: bytes, pos: int, t: DataType) -> Any:
        r = _Reader(data, pos)
        start, body = r.block()
        version, n_chunks, offsets_length, chunks_length = struct.unpack_from(">biii", data, start)
        if version > 1:
            raise CorruptFileError(f"{self.source}: dictionary version {version} is not supported")
        offsets = np.frombuffer(data, dtype=">i4", count=n_chunks, offset=body).astype(np.int64)
        chunks = body + offsets_length
        keys_base = chunks + chunks_length
        fixed = _FIXED.get(t.root) if not t.is_string else None
        parts: list[np.ndarray] = []  # fixed: the keys; strings: where each key's length prefix is
        expected = 0
        for j in range(n_chunks):
            c = _Reader(data, chunks + int(offsets[j]))
            (chunk_version,) = c.unpack(">b")
            if chunk_version > 1:
                raise CorruptFileError(f"{self.source}: dictionary chunk version {chunk_version}")
            first = c.pos
            if fixed is not None:
                c.pos += int(fixed[-1])
                code, offset, size, _keys_length, _width = c.unpack(">iiiii")
                parts.append(np.frombuffer(data, dtype=fixed, count=1, offset=first))
                parts.append(np.frombuffer(data, dtype=fixed, count=size, offset=keys_base + offset))
            else:
                (n,) = c.unpack(">i")
                c.pos += n
                code, offset, size, offsets_len, _keys_length = c.unpack(">iiiii")
                area = keys_base + offset
                rel = np.frombuffer(data, dtype=">i4", count=size, offset=area).astype(np.int64)
                parts.append(np.concatenate([[first], area + offsets_len + rel]))
            if code != expected:
                raise CorruptFileError(
                    f"{self.source}: dictionary chunk starts at code {code}, not {expected}"
                )
            expected += size + 1
        if expected != self.cardinality:
            raise CorruptFileError(
                f"{self.source}: dictionary holds {expected} keys, header says {self.cardinality}"
            )
        if fixed is None:
            return _strings(data, np.concatenate(parts) if parts else np.zeros(0, np.int64))
        merged = np.concatenate(parts) if parts else np.zeros(0, dtype=fixed)
        if t.root == "BOOLEAN":
            return merged.astype(bool)
        return merged.astype(np.float64 if t.root in ("FLOAT", "DOUBLE") else np.int64)  # exact widening

    @property
    def codes(self) -> np.ndarray:
        """Each row's position in ``keys``, -1 for null (decodes every bit slice)."""
        return self.slices.codes()

    def rows(self, key_mask: np.ndarray) -> BitMap:
        """The rows whose key is selected by ``key_mask`` (one boolean per dictionary key): a few runs of
        keys by bitmap operations on the slices, many by decoding each row's code."""
        mask = np.asarray(key_mask, dtype=bool)
        edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
        lows, highs = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        if len(lows) > _MAX_RUNS:
            extended = np.append(mask, False)  # code -1 (null) is never selected
            return roaring(np.flatnonzero(extended[self.codes]))
        runs = [
            self.slices.in_range(int(lo), int(hi), self.cardinality)
            for lo, hi in zip(lows, highs, strict=True)
        ]
        return BitMap.union(BitMap(), *runs)

    def null_rows(self) -> BitMap:
        return BitMap(range(self.row_count)) - self.slices.live()

    def live_rows(self) -> BitMap:
        return self.slices.live()


_MAX_RUNS = 16


def _strings(data: bytes, prefixes: np.ndarray) -> pa.Array:
    """Binary keys, each an int length at ``prefixes[i]`` followed by its bytes."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if len(prefixes) and prefixes.max() + 4 > len(raw):
        raise CorruptFileError("dictionary key runs past the index")
    lengths = raw[prefixes[:, None] + np.arange(4)].astype(np.int64) @ np.array([1 << 24, 1 << 16, 1 << 8, 1])
    if (lengths < 0).any() or (len(prefixes) and (prefixes + 4 + lengths).max() > len(raw)):
        raise CorruptFileError("dictionary key runs past the index")
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    starts = prefixes + 4
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
    return pa.BinaryArray.from_buffers(
        pa.binary(), len(prefixes), [None, pa.py_buffer(offsets), pa.py_buffer(raw[index].tobytes())]
    )
