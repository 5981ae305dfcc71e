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


def _bitmap_bytes(rows: np.ndarray) -> bytes:
    b = BitMap(rows.astype(np.uint32))
    b.run_optimize()  # Paimon run-optimizes every bitmap it serializes
    return bytes(b.serialize())


def _bsi(codes: np.ndarray, cardinality: int) -> bytes:
    """The BitSliceIndexBitmap of the codes: header (version, slices, ebm length, slice directory), body."""
    top = cardinality - 1
    n = 64 if top < 0 else max(top.bit_length(), 1)  # Java sizes by the long -1 when there is no key
    live = np.flatnonzero(codes >= 0)
    ebm = _bitmap_bytes(live)
    slices = [_bitmap_bytes(live[((codes[live] >> i) & 1).astype(bool)]) for i in range(n)]
    directory = []
    offset = 0
    for s in slices:
        directory.append(struct.pack(">ii", offset, len(s)))
        offset += len(s)
    header = struct.pack(">bbii", VERSION, n, len(ebm), 8 * n) + b"".join(directory)
    return struct.pack(">i", len(header)) + header + ebm + b"".join(slices)


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
    return struct.pack(">i", len(header)) + header + dictionary + _bsi(codes, n)


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
    and ``codes`` (each row's position in it, -1 for null)."""

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
        version, self.row_count, cardinality = head.unpack(">bii")
        if version > VERSION:
            raise CorruptFileError(f"{self.source}: range-bitmap version {version} is not supported")
        head.pos = end - 4
        (dict_length,) = head.unpack(">i")
        self.keys = self._dictionary(data, end, t, cardinality)
        self.codes = self._codes(data, end + dict_length)

    def _dictionary(self, data: bytes, pos: int, t: DataType, cardinality: int) -> Any:
        r = _Reader(data, pos)
        start, body = r.block()
        version, n_chunks, offsets_length, chunks_length = struct.unpack_from(">biii", data, start)
        if version > 1:
            raise CorruptFileError(f"{self.source}: dictionary version {version} is not supported")
        offsets = np.frombuffer(data, dtype=">i4", count=n_chunks, offset=body).astype(np.int64)
        chunks = body + offsets_length
        keys_base = chunks + chunks_length
        fixed = _FIXED.get(t.root) if not t.is_string else None
        parts: list[Any] = []
        for j in range(n_chunks):
            c = _Reader(data, chunks + int(offsets[j]))
            (chunk_version,) = c.unpack(">b")
            if chunk_version > 1:
                raise CorruptFileError(f"{self.source}: dictionary chunk version {chunk_version}")
            if fixed is not None:
                width = int(fixed[-1])
                first = np.frombuffer(data, dtype=fixed, count=1, offset=c.pos)
                c.pos += width
                code, offset, size, _keys_length, _width = c.unpack(">iiiii")
                rest = np.frombuffer(data, dtype=fixed, count=size, offset=keys_base + offset)
                parts.append((code, np.concatenate([first, rest])))
            else:
                (n,) = c.unpack(">i")
                first_key = data[c.pos : c.pos + n]
                c.pos += n
                code, offset, size, offsets_len, _keys_length = c.unpack(">iiiii")
                area = keys_base + offset
                rel = np.frombuffer(data, dtype=">i4", count=size, offset=area).astype(np.int64)
                parts.append((code, [first_key, *_strings(data, area + offsets_len, rel)]))
        expected = 0
        for code, keys in parts:
            if code != expected:
                raise CorruptFileError(
                    f"{self.source}: dictionary chunk starts at code {code}, not {expected}"
                )
            expected += len(keys)
        if expected != cardinality:
            raise CorruptFileError(
                f"{self.source}: dictionary holds {expected} keys, header says {cardinality}"
            )
        if fixed is not None:
            arrays = [k for _, k in parts]
            merged = np.concatenate(arrays) if arrays else np.zeros(0, dtype=fixed)
            if t.root == "BOOLEAN":
                return merged.astype(bool)
            return merged.astype(np.float64 if t.root in ("FLOAT", "DOUBLE") else np.int64)  # exact widening
        return pa.array([k for _, keys in parts for k in keys], pa.binary())

    def _codes(self, data: bytes, pos: int) -> np.ndarray:
        r = _Reader(data, pos)
        start, body = r.block()
        version, n, ebm_length, _indexes_length = struct.unpack_from(">bbii", data, start)
        if version > VERSION:
            raise CorruptFileError(f"{self.source}: bit-slice version {version} is not supported")
        directory = np.frombuffer(data, dtype=">i4", count=2 * (n & 0xFF), offset=start + 10).reshape(-1, 2)
        live = np.asarray(BitMap.deserialize(data[body : body + ebm_length]).to_array(), dtype=np.int64)
        codes = np.full(self.row_count, -1, dtype=np.int64)
        if len(live) and (live[-1] >= self.row_count):
            raise CorruptFileError(f"{self.source}: row {live[-1]} of {self.row_count}")
        acc = np.zeros(self.row_count, dtype=np.int64)
        slices = body + ebm_length
        for i, (offset, length) in enumerate(directory):
            rows = BitMap.deserialize(data[slices + offset : slices + offset + length]).to_array()
            acc[np.asarray(rows, dtype=np.int64)] |= np.int64(1) << np.int64(i)
        codes[live] = acc[live]
        return codes

    def rows(self, key_mask: np.ndarray) -> BitMap:
        """The rows whose key is selected by ``key_mask`` (one boolean per dictionary key)."""
        extended = np.append(np.asarray(key_mask, dtype=bool), False)  # code -1 (null) is never selected
        return BitMap(np.flatnonzero(extended[self.codes]).astype(np.uint32))


def _strings(data: bytes, base: int, rel: np.ndarray) -> list[bytes]:
    """The keys of a variable-length chunk: each an int length and its bytes at ``base + rel[i]``."""
    out: list[bytes] = []
    for r in rel.tolist():  # per dictionary key at planning, not per row
        (n,) = struct.unpack_from(">i", data, base + r)
        out.append(data[base + r + 4 : base + r + 4 + n])
    return out
