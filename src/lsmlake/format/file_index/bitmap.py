"""Paimon's bitmap file index, versions 1 and 2: one roaring bitmap of row positions per distinct value."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError
from lsmlake.format.file_index.bit_slices import roaring
from lsmlake.format.file_index.keys import TIMESTAMP_ROOTS

BITMAP = "bitmap"
_FIXED = {
    "TINYINT": ">b",
    "SMALLINT": ">h",
    "INT": ">i",
    "DATE": ">i",
    "TIME": ">i",
    "BIGINT": ">q",
    "FLOAT": ">f",
    "DOUBLE": ">d",
    "BOOLEAN": ">?",
}
BLOCK_SIZE = 16 * 1024


def bitmap_supported(t: DataType) -> bool:
    return t.is_string or t.root in _FIXED or t.root in TIMESTAMP_ROOTS


def _fmt(t: DataType) -> str | None:
    if t.is_string:
        return None
    return ">q" if t.root in TIMESTAMP_ROOTS else _FIXED[t.root]


class _Cursor:
    def __init__(self, buf: bytes, pos: int, t: DataType) -> None:
        self.buf, self.pos, self.fmt = buf, pos, _fmt(t)

    def i32(self) -> int:
        (v,) = struct.unpack_from(">i", self.buf, self.pos)
        self.pos += 4
        return int(v)

    def byte(self) -> int:
        self.pos += 1
        return self.buf[self.pos - 1]

    def key(self) -> Any:
        """The next key; floats as their IEEE bits (Java's Float.equals keeps -0.0 apart from 0.0)."""
        if self.fmt is None:
            n = self.i32()
            self.pos += n
            return bytes(self.buf[self.pos - n : self.pos])
        size = struct.calcsize(self.fmt)
        if self.fmt in (">f", ">d"):
            (v,) = struct.unpack_from(">i" if size == 4 else ">q", self.buf, self.pos)
        else:
            (v,) = struct.unpack_from(self.fmt, self.buf, self.pos)
        self.pos += size
        return v


class BitmapIndex:
    """A parsed bitmap index: ``rows(key)`` is the positions holding ``key`` (None: the null rows)."""

    def __init__(self, data: bytes, t: DataType, *, source: str) -> None:
        self.source = source
        try:
            self._parse(data, t)
        except (struct.error, IndexError, ValueError) as e:
            raise CorruptFileError(f"{source}: malformed bitmap index ({e})") from e

    def _parse(self, data: bytes, t: DataType) -> None:
        c = _Cursor(data, 1, t)
        version = data[0]
        if version not in (1, 2):
            raise CorruptFileError(f"{self.source}: bitmap index version {version} is not supported")
        self.row_count = c.i32()
        n_values = c.i32()
        has_null = c.byte() != 0
        null_offset = c.i32() if has_null else 0
        if has_null and version == 2:
            c.i32()  # null bitmap length: recomputed from the offsets below
        offsets: dict[Any, int] = {}
        if version == 1:
            for _ in range(n_values):
                k = c.key()
                offsets[k] = c.i32()
            body = c.pos
        else:
            blocks = c.i32()
            block_offsets = []
            for _ in range(blocks):
                c.key()
                block_offsets.append(c.i32())
            body_offset = c.i32()
            blocks_start = c.pos
            body = blocks_start + body_offset
            for off in block_offsets:
                c.pos = blocks_start + off
                for _ in range(c.i32()):
                    k = c.key()
                    offsets[k] = c.i32()
                    c.i32()  # length: recomputed from the offsets
        self._float = _fmt(t) in (">f", ">d")
        self._fmt_size = 4 if _fmt(t) == ">f" else 8
        self._data, self._body = data, body
        self._offsets = offsets
        self._null = null_offset if has_null else None
        starts = {o for o in offsets.values() if o >= 0}
        if has_null and null_offset >= 0:
            starts.add(null_offset)
        ordered = sorted(starts)
        ends = [*ordered[1:], len(data) - body][: len(ordered)]
        self._ends = dict(zip(ordered, ends, strict=True))

    def _bitmap(self, offset: int | None) -> BitMap:
        if offset is None:
            return BitMap()
        if offset < 0:
            return BitMap([-1 - offset])
        start = self._body + offset
        return BitMap.deserialize(self._data[start : self._body + self._ends[offset]])

    def rows(self, key: Any) -> BitMap:
        if key is None:
            return self._bitmap(self._null)
        if self._float:
            fmt = ">f" if self._fmt_size == 4 else ">d"
            found = BitMap()
            for k in [key, -key] if key == 0 else [key]:
                (bits,) = struct.unpack(">i" if self._fmt_size == 4 else ">q", struct.pack(fmt, k))
                found |= self._bitmap(self._offsets.get(bits))
            return found
        return self._bitmap(self._offsets.get(key))

    def values(self) -> list[Any]:
        return list(self._offsets)


def _key_writer(t: DataType) -> Callable[[Any], bytes]:
    fmt = _fmt(t)
    if fmt is None:
        return lambda k: struct.pack(">i", len(k)) + k
    if fmt in (">f", ">d"):  # float keys are carried as their IEEE bits
        fmt = ">i" if fmt == ">f" else ">q"
    return lambda k: struct.pack(fmt, k)


def _groups(values: Any, nulls: np.ndarray, t: DataType) -> tuple[list[Any], list[np.ndarray]]:
    """The distinct non-null keys (as written: bytes, ints, bools, or float bits) and each one's rows."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        encoded = pc.dictionary_encode(values)
        codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(), dtype=np.int64)
        dictionary: list[Any] = encoded.dictionary.to_pylist()
    else:
        arr = np.asarray(values)
        if t.root in ("FLOAT", "DOUBLE"):  # by IEEE bits: -0.0 and 0.0 apart, every NaN as one
            arr = np.where(np.isnan(arr), np.nan, arr).astype(arr.dtype)
            arr = arr.view(np.int32 if t.root == "FLOAT" else np.int64)
        uniq, inverse = np.unique(arr, return_inverse=True)
        codes = np.where(nulls, -1, inverse.reshape(-1))
        dictionary = uniq.tolist()
    rows = np.flatnonzero(codes >= 0)
    order = rows[np.argsort(codes[rows], kind="stable")]
    present, starts = np.unique(codes[order], return_index=True)
    groups = np.split(order, starts[1:]) if len(present) else []
    return [dictionary[int(c)] for c in present], groups


def write_bitmap(values: Any, nulls: np.ndarray, t: DataType) -> bytes:
    """A version-2 bitmap index of one column's values (``values`` as :func:`keys.array_keys` gives them)."""
    keys, groups = _groups(values, nulls, t)
    floats = t.root in ("FLOAT", "DOUBLE")
    order = sorted(range(len(keys)), key=lambda i: _order(_bits_float(keys[i], t)) if floats else keys[i])
    null_rows = roaring(np.flatnonzero(nulls))
    null_bytes = null_rows.serialize()
    body: list[bytes] = []
    offset = len(null_bytes) if len(null_rows) > 1 else 0
    if len(null_rows) > 1:
        body.append(null_bytes)
    entries: list[tuple[Any, int, int]] = []
    for i in order:
        rows = groups[i]
        if len(rows) == 1:
            entries.append((keys[i], -1 - int(rows[0]), -1))
        else:
            b = roaring(rows).serialize()
            entries.append((keys[i], offset, len(b)))
            body.append(b)
            offset += len(b)
    has_null = len(null_rows) > 0
    out = [struct.pack(">bii?", 2, len(nulls), len(entries), has_null)]
    if has_null:
        null_offset = -1 - null_rows[0] if len(null_rows) == 1 else 0
        out.append(struct.pack(">ii", null_offset, len(null_bytes)))
    out.append(_blocks(entries, _key_writer(t)))
    return b"".join(out) + b"".join(body)


def _bits_float(bits: int, t: DataType) -> float:
    if t.root == "FLOAT":
        return float(struct.unpack(">f", struct.pack(">i", bits))[0])
    return float(struct.unpack(">d", struct.pack(">q", bits))[0])


def _order(k: float) -> tuple[bool, float, bool]:
    """Java's Float/Double comparator order: -0.0 before 0.0, NaN last."""
    return (k != k, 0.0 if k != k else k, not str(k).startswith("-"))


def _blocks(entries: list[tuple[Any, int, int]], key_bytes: Callable[[Any], bytes]) -> bytes:
    """The v2 index: block directory (first key, offset), then each block's (key, offset, length) entries."""
    blocks: list[list[bytes]] = []
    firsts: list[bytes] = []
    size = BLOCK_SIZE + 1
    for k, off, length in entries:
        kb = key_bytes(k)
        entry = kb + struct.pack(">ii", off, length)
        if size + len(entry) > BLOCK_SIZE:
            blocks.append([])
            firsts.append(kb)
            size = 4
        blocks[-1].append(entry)
        size += len(entry)
    serialized = [struct.pack(">i", len(b)) + b"".join(b) for b in blocks]
    directory = [struct.pack(">i", len(blocks))]
    pos = 0
    for first, s in zip(firsts, serialized, strict=True):
        directory.append(first + struct.pack(">i", pos))
        pos += len(s)
    directory.append(struct.pack(">i", pos))
    return b"".join(directory) + b"".join(serialized)
