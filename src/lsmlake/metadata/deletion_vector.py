"""Deletion vectors: RoaringBitmap row-position sets and their Java-compatible index files (§7.1-7.3)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap, FrozenBitMap, FrozenBitMap64

from lsmlake.errors import CorruptFileError
from lsmlake.metadata.index_manifest import DeletionVectorMeta

__all__ = [
    "BITMAP32_MAGIC",
    "BITMAP64_MAGIC",
    "DV_INDEX_VERSION",
    "DeletionVector",
    "check_cardinality",
    "encode_deletion_vector",
    "read_deletion_vector",
    "read_deletion_vectors",
    "write_deletion_index",
]

DV_INDEX_VERSION = 1
BITMAP32_MAGIC = 1581511376  # written big-endian: 5e 43 f2 d0
BITMAP64_MAGIC = 1681511377  # written little-endian: d1 d3 39 64
MAX_32BIT_POSITION = 2**31 - 1  # Java's RoaringBitmap32 limit
_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_NO_OFFSET_THRESHOLD = 4

Positions = FrozenBitMap | FrozenBitMap64


@dataclass(frozen=True, eq=False)
class DeletionVector:
    """An immutable set of deleted row positions of one data file (32-bit, or 64-bit when needed)."""

    positions: Positions

    def __post_init__(self) -> None:
        p = self.positions
        if isinstance(p, AbstractBitMap64) and not isinstance(p, FrozenBitMap64):
            object.__setattr__(self, "positions", FrozenBitMap64(p))
        elif isinstance(p, AbstractBitMap) and not isinstance(p, FrozenBitMap):
            object.__setattr__(self, "positions", FrozenBitMap(p))
        elif not isinstance(p, (FrozenBitMap, FrozenBitMap64)):
            raise TypeError(f"positions must be a pyroaring bitmap, got {type(p).__name__}")

    @classmethod
    def empty(cls) -> DeletionVector:
        return cls(FrozenBitMap())

    @classmethod
    def from_positions(cls, positions: np.ndarray[Any, Any] | Iterable[int]) -> DeletionVector:
        """A DV from row positions (any integer array; duplicates are fine, negatives are not)."""
        arr = np.asarray(positions if isinstance(positions, np.ndarray) else list(positions))
        if arr.size == 0:
            return cls.empty()
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"deletion positions must be integers, got dtype {arr.dtype}")
        if arr.min() < 0:
            raise ValueError(f"deletion positions must be >= 0, got {int(arr.min())}")
        if int(arr.max()) <= 0xFFFFFFFF:
            return cls(FrozenBitMap(np.ascontiguousarray(arr, dtype=np.uint32)))
        return cls(FrozenBitMap64(np.ascontiguousarray(arr, dtype=np.uint64)))

    @property
    def cardinality(self) -> int:
        return len(self.positions)

    @property
    def is_empty(self) -> bool:
        return len(self.positions) == 0

    @property
    def is_64bit(self) -> bool:
        return isinstance(self.positions, FrozenBitMap64)

    def contains(self, pos: int) -> bool:
        return 0 <= pos <= (2**64 - 1 if self.is_64bit else 0xFFFFFFFF) and pos in self.positions

    def __contains__(self, pos: object) -> bool:
        return isinstance(pos, (int, np.integer)) and self.contains(int(pos))

    def __len__(self) -> int:
        return len(self.positions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeletionVector):
            return NotImplemented
        if self.is_64bit == other.is_64bit:
            return bool(self.positions == other.positions)
        return np.array_equal(self.to_numpy(), other.to_numpy())

    def __hash__(self) -> int:
        return hash((self.cardinality, self.positions.min() if self.cardinality else -1))

    def __repr__(self) -> str:
        shown = ", ".join(str(p) for p in self.to_numpy()[:8])
        more = ", ..." if self.cardinality > 8 else ""
        return f"DeletionVector({self.cardinality} rows: [{shown}{more}])"

    def union(self, other: DeletionVector) -> DeletionVector:
        """Rows deleted by either vector."""
        a, b = self.positions, other.positions
        if isinstance(a, FrozenBitMap) and isinstance(b, FrozenBitMap):
            return DeletionVector(a | b)
        return DeletionVector(FrozenBitMap64(np.union1d(self.to_numpy(), other.to_numpy())))

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """The deleted positions, ascending (uint32, or uint64 for a 64-bit vector)."""
        dtype = np.uint64 if self.is_64bit else np.uint32
        if self.is_empty:
            return np.empty(0, dtype=dtype)
        return np.frombuffer(self.positions.to_array(), dtype=dtype)

    def to_numpy_mask(self, num_rows: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """A boolean array of ``num_rows`` that is True at deleted positions (keep rows with ``~mask``)."""
        mask = np.zeros(num_rows, dtype=np.bool_)
        if self.is_empty:
            return mask
        if self.positions.max() >= num_rows:
            raise CorruptFileError(
                f"deletion vector deletes position {self.positions.max()} of a file with {num_rows} rows"
            )
        mask[self.to_numpy()] = True
        return mask

    def keep_mask(self, num_rows: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """The inverse of :meth:`to_numpy_mask`: True for rows that survive."""
        return ~self.to_numpy_mask(num_rows)


# --------------------------------------------------------------------------- portable RoaringBitmap


def _portable_size(buf: bytes, pos: int, end: int) -> int:
    """Bytes used by the portable 32-bit RoaringBitmap at ``buf[pos:end]`` (ValueError if malformed)."""

    def u16(at: int) -> int:
        if at + 2 > end:
            raise ValueError("truncated roaring bitmap")
        return int(struct.unpack_from("<H", buf, at)[0])

    start = pos
    if pos + 4 > end:
        raise ValueError("truncated roaring bitmap")
    cookie = struct.unpack_from("<I", buf, pos)[0]
    pos += 4
    run_flags = b""
    if cookie & 0xFFFF == _COOKIE_RUN:
        n = (cookie >> 16) + 1
        run_flags = buf[pos : pos + (n + 7) // 8]
        pos += (n + 7) // 8
    elif cookie == _COOKIE_NO_RUN:
        if pos + 4 > end:
            raise ValueError("truncated roaring bitmap")
        n = struct.unpack_from("<I", buf, pos)[0]
        pos += 4
    else:
        raise ValueError(f"bad roaring cookie {cookie}")
    header = pos
    pos += 4 * n
    if not run_flags or n >= _NO_OFFSET_THRESHOLD:
        pos += 4 * n
    for i in range(n):
        if run_flags and run_flags[i // 8] & (1 << (i % 8)):
            pos += 2 + 4 * u16(pos)
        else:
            card = u16(header + 4 * i + 2) + 1
            pos += 8192 if card > 4096 else 2 * card
        if pos > end:
            raise ValueError("truncated roaring bitmap")
    return pos - start


def _read_bitmap32(buf: bytes, pos: int, end: int) -> tuple[BitMap, int]:
    size = _portable_size(buf, pos, end)
    return BitMap.deserialize(buf[pos : pos + size]), pos + size


def _serialize32(bitmap: AbstractBitMap) -> bytes:
    b = BitMap(bitmap)
    b.run_optimize()  # Java's RoaringBitmap32.serialize does runOptimize() first
    return bytes(b.serialize())


# --------------------------------------------------------------------------- blocks


def _block_body(dv: DeletionVector, bitmap64: bool) -> bytes:
    """Magic + bitmap (the CRC-covered part of a block)."""
    if not bitmap64:
        if dv.cardinality and dv.positions.max() > MAX_32BIT_POSITION:
            raise ValueError(
                f"position {dv.positions.max()} exceeds the 32-bit deletion vector limit "
                f"{MAX_32BIT_POSITION}; set deletion-vectors.bitmap64"
            )
        bitmap = (
            dv.positions
            if isinstance(dv.positions, FrozenBitMap)
            else FrozenBitMap(dv.to_numpy().astype(np.uint32))
        )
        return struct.pack(">i", BITMAP32_MAGIC) + _serialize32(bitmap)
    pos = dv.to_numpy().astype(np.uint64)
    keys = (pos >> np.uint64(32)).astype(np.int64)
    count = int(keys[-1]) + 1 if pos.size else 0
    parts = [struct.pack("<i", BITMAP64_MAGIC), struct.pack("<q", count)]
    bounds = np.searchsorted(keys, np.arange(count + 1))
    for key in range(count):  # Java writes every key up to the highest, empty bitmaps included
        low = (pos[bounds[key] : bounds[key + 1]] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        parts.append(struct.pack("<i", key) + _serialize32(FrozenBitMap(low)))
    return b"".join(parts)


def encode_deletion_vector(dv: DeletionVector, *, bitmap64: bool = False) -> tuple[bytes, int]:
    """One framed block (BE length, magic + bitmap, BE CRC32) and the `length` Java records for it (§7.2)."""
    body = _block_body(dv, bitmap64)
    block = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    return block, (len(block) if bitmap64 else len(body))


def write_deletion_index(
    vectors: Mapping[str, DeletionVector], *, bitmap64: bool = False
) -> tuple[bytes, list[DeletionVectorMeta]]:
    """A whole DV index file (version byte + one block per data file, in mapping order) and its ranges."""
    out = bytearray([DV_INDEX_VERSION])
    metas: list[DeletionVectorMeta] = []
    for data_file, dv in vectors.items():
        block, length = encode_deletion_vector(dv, bitmap64=bitmap64)
        metas.append(DeletionVectorMeta(data_file, len(out), length, dv.cardinality))
        out += block
    return bytes(out), metas


def read_deletion_vector(data: bytes, offset: int, length: int | None, *, name: str) -> DeletionVector:
    """Decode the DV block at ``offset`` of index file ``data``; CorruptFileError naming ``name`` if bad."""
    where = f"deletion vector at offset {offset} of {name}"
    if not data or data[0] != DV_INDEX_VERSION:
        got = data[0] if data else "nothing"
        raise CorruptFileError(f"deletion vector index {name} has version {got}, expected {DV_INDEX_VERSION}")
    if offset < 1 or offset + 8 > len(data):
        raise CorruptFileError(f"{where}: offset out of range (file has {len(data)} bytes)")
    bitmap_length, magic_be = struct.unpack_from(">ii", data, offset)
    magic_le = struct.unpack_from("<i", data, offset + 4)[0]
    if magic_be == BITMAP32_MAGIC:
        expected, is64 = length, False
    elif magic_le == BITMAP64_MAGIC:
        expected, is64 = None if length is None else length - 8, True
    else:
        raise CorruptFileError(f"{where}: bad magic number {magic_be} (file is not a deletion vector index?)")
    if expected is not None and bitmap_length != expected:
        raise CorruptFileError(
            f"{where}: size mismatch, block holds {bitmap_length} bytes, expected {expected}"
        )
    body_start, body_end = offset + 4, offset + 4 + bitmap_length
    if bitmap_length < 4 or body_end + 4 > len(data):
        raise CorruptFileError(f"{where}: truncated (needs {body_end + 4} bytes, file has {len(data)})")
    body = data[body_start:body_end]
    crc = struct.unpack_from(">I", data, body_end)[0]
    actual = zlib.crc32(body)
    if actual != crc:
        raise CorruptFileError(f"{where}: checksum mismatch (stored {crc:#010x}, computed {actual:#010x})")
    try:
        if not is64:
            bitmap, end = _read_bitmap32(body, 4, len(body))
            if end != len(body):
                raise ValueError(f"{len(body) - end} trailing bytes after the bitmap")
            return DeletionVector(FrozenBitMap(bitmap))
        return DeletionVector(_read_bitmap64_body(body))
    except ValueError as e:
        raise CorruptFileError(f"{where}: malformed bitmap: {e}") from e


def _read_bitmap64_body(body: bytes) -> Positions:
    if len(body) < 12:
        raise ValueError("truncated 64-bit bitmap header")
    count = struct.unpack_from("<q", body, 4)[0]
    if not 0 <= count <= 2**31 - 1:
        raise ValueError(f"invalid bitmap count {count}")
    pos, last_key = 12, -1
    parts: list[np.ndarray[Any, Any]] = []
    for _ in range(count):
        if pos + 4 > len(body):
            raise ValueError("truncated 64-bit bitmap")
        key = struct.unpack_from("<i", body, pos)[0]
        if key <= last_key:
            raise ValueError(f"64-bit bitmap keys out of order ({key} after {last_key})")
        bitmap, pos = _read_bitmap32(body, pos + 4, len(body))
        last_key = key
        if bitmap:
            low = np.frombuffer(bitmap.to_array(), dtype=np.uint32).astype(np.uint64)
            parts.append(low | (np.uint64(key) << np.uint64(32)))
    if pos != len(body):
        raise ValueError(f"{len(body) - pos} trailing bytes after the bitmap")
    return FrozenBitMap64(np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64))


def check_cardinality(dv: DeletionVector, expected: int | None, *, name: str, data_file: str = "") -> None:
    """Raise CorruptFileError when the index manifest's `_CARDINALITY` disagrees with the bitmap."""
    if expected is not None and dv.cardinality != expected:
        of = f" of {data_file}" if data_file else ""
        raise CorruptFileError(
            f"deletion vector{of} in {name} holds {dv.cardinality} positions, index manifest says {expected}"
        )


def read_deletion_vectors(
    data: bytes, ranges: Iterable[DeletionVectorMeta], *, name: str
) -> dict[str, DeletionVector]:
    """Every range of one DV index file, keyed by data file name, each checked against its cardinality."""
    out: dict[str, DeletionVector] = {}
    for meta in ranges:
        dv = read_deletion_vector(data, meta.offset, meta.length, name=name)
        check_cardinality(dv, meta.cardinality, name=name, data_file=meta.data_file_name)
        out[meta.data_file_name] = dv
    return out
