"""Paimon's bloom-filter file index: 64-bit hashes (Thomas Wang's for numbers, xxHash64 for bytes), BloomFilter64."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import xxhash

from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError, InvalidOptionError
from lsmlake.format.file_index.keys import FLOAT_ROOTS, INT_ROOTS, TIMESTAMP_ROOTS, is_bytes_type

BLOOM_FILTER = "bloom-filter"  # the identifier Paimon stores in the container head
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1


def bloom_supported(t: DataType) -> bool:
    return is_bytes_type(t) or t.root in INT_ROOTS or t.root in FLOAT_ROOTS or t.root in TIMESTAMP_ROOTS


def _wang_hash(key: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash with Java's wrapping signed arithmetic."""
    with np.errstate(over="ignore"):
        k = key.astype(np.int64)
        k = (~k) + (k << np.int64(21))
        k = k ^ (k >> np.int64(24))
        k = (k + (k << np.int64(3))) + (k << np.int64(8))
        k = k ^ (k >> np.int64(14))
        k = (k + (k << np.int64(2))) + (k << np.int64(4))
        k = k ^ (k >> np.int64(28))
        out: np.ndarray = k + (k << np.int64(31))
        return out


def hash_values(values: Any, t: DataType) -> np.ndarray:
    """The 64-bit hash of each (non-null) value, as Paimon's FastHash computes it for type ``t``."""
    if is_bytes_type(t):
        seq: Sequence[bytes] = values
        return np.fromiter((xxhash.xxh64_intdigest(v) for v in seq), dtype=np.uint64, count=len(seq)).view(
            np.int64
        )
    arr = np.asarray(values)
    if t.root == "FLOAT":
        bits = _canonical_nan(arr.astype(np.float32)).view(np.int32).astype(np.int64)
    elif t.root == "DOUBLE":
        bits = _canonical_nan(arr.astype(np.float64)).view(np.int64)
    else:
        bits = arr.astype(np.int64)
    return _wang_hash(bits)


def _canonical_nan(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    out[np.isnan(out)] = np.nan  # Java's floatToIntBits/doubleToLongBits fold every NaN into one
    return out


def _positions(hashes: np.ndarray, num_hashes: int, num_bits: int) -> np.ndarray:
    """Bit positions, shape (len(hashes), num_hashes): BloomFilter64's double hashing in int32."""
    h = hashes.astype(np.int64)
    hash1 = h.astype(np.int32)
    hash2 = (h.view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.int32)
    i = np.arange(1, num_hashes + 1, dtype=np.int32)
    with np.errstate(over="ignore"):
        combined = hash1[:, None] + i[None, :] * hash2[:, None]
    combined = np.where(combined < 0, ~combined, combined)
    return combined.astype(np.int64) % num_bits


class BloomFilter:
    """A parsed bloom-filter index: ``might_contain`` answers for hashed keys."""

    def __init__(self, data: bytes, *, source: str) -> None:
        if len(data) < 5:
            raise CorruptFileError(f"{source}: bloom filter index of {len(data)} bytes is too short")
        (self.num_hashes,) = struct.unpack_from(">i", data, 0)
        if self.num_hashes <= 0:
            raise CorruptFileError(f"{source}: bloom filter with {self.num_hashes} hash functions")
        self.bits = np.frombuffer(data, dtype=np.uint8, offset=4)
        self.num_bits = len(self.bits) * 8

    def might_contain(self, hashes: np.ndarray) -> np.ndarray:
        pos = _positions(hashes, self.num_hashes, self.num_bits)
        hit = (self.bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1
        return np.asarray(hit.all(axis=1), dtype=bool)


def bloom_size(items: int, fpp: float) -> tuple[int, int]:
    """(number of bits, number of hash functions) for ``items`` at ``fpp``, as BloomFilter64 sizes them."""
    if items <= 0 or not 0 < fpp < 1:
        raise InvalidOptionError(
            f"bloom filter needs items > 0 and 0 < fpp < 1, got items={items}, fpp={fpp}"
        )
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    num_bits = nb + (8 - nb % 8)
    num_hashes = max(1, math.floor(num_bits / items * math.log(2) + 0.5))
    return num_bits, num_hashes


def write_bloom(hashes: np.ndarray, items: int, fpp: float) -> bytes:
    """A bloom-filter index holding ``hashes``."""
    num_bits, num_hashes = bloom_size(items, fpp)
    flags = np.zeros(num_bits, dtype=bool)
    if len(hashes):
        flags[_positions(hashes, num_hashes, num_bits).ravel()] = True
    bits = np.packbits(
        flags, bitorder="little"
    )  # bit i of byte b is position 8b + i, as BloomFilter64 sets it
    return struct.pack(">i", num_hashes) + bits.tobytes()
