"""Paimon's bitmap file index, versions 1 and 2: one roaring bitmap of row positions per distinct value."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
from pyroaring import BitMap

from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError
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


def write_bitmap(values: Any, nulls: np.ndarray, t: DataType) -> bytes:
    """A version-2 bitmap index of one column's values (``values`` as :func:`keys.array_keys` gives them)."""
    n = len(nulls)
    positions: dict[Any, list[int]] = {}
    live = np.flatnonzero(~nulls)
    if t.is_string:
        for i in live.tolist():
            positions.setdefault(values[i], []).append(i)
    elif t.root in ("FLOAT", "DOUBLE"):
        bits = np.asarray(values)[live]
        bits = (
            np.where(np.isnan(bits), np.nan, bits)
            .astype(bits.dtype)
            .view(np.int32 if t.root == "FLOAT" else np.int64)
        )
        for b, i in zip(bits.tolist(), live.tolist(), strict=True):
            positions.setdefault(b, []).append(i)
    else:
        arr = np.asarray(values)[live]
        order = np.argsort(arr, kind="stable")
        uniq, first = np.unique(arr[order], return_index=True)
        groups = np.split(live[order], first[1:]) if len(uniq) else []
        positions = {k.item(): g.tolist() for k, g in zip(uniq, groups, strict=True)}
    null_rows = BitMap(np.flatnonzero(nulls).tolist())
    null_bytes = null_rows.serialize()
    body: list[bytes] = []
    offset = len(null_bytes) if len(null_rows) > 1 else 0
    if len(null_rows) > 1:
        body.append(null_bytes)
    entries: list[tuple[Any, int, int]] = []
    floats = t.root in ("FLOAT", "DOUBLE")
    for k in sorted(positions, key=lambda b: _order(_bits_float(b, t)) if floats else b):
        rows = positions[k]
        if len(rows) == 1:
            entries.append((k, -1 - rows[0], -1))
        else:
            b = BitMap(rows).serialize()
            entries.append((k, offset, len(b)))
            body.append(b)
            offset += len(b)
    key_bytes = _key_writer(t)
    has_null = len(null_rows) > 0
    out = [struct.pack(">bii?", 2, n, len(entries), has_null)]
    if has_null:
        null_offset = -1 - null_rows[0] if len(null_rows) == 1 else 0
        out.append(struct.pack(">ii", null_offset, len(null_bytes)))
    out.append(_blocks(entries, key_bytes))
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
