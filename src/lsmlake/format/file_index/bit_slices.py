"""The bit-sliced codes inside Paimon's range-bitmap index: each row's dictionary code as one roaring
bitmap per bit, and code ranges answered with bitmap operations (O'Neil's comparison)."""

from __future__ import annotations

import array
import struct

import numpy as np
from pyroaring import BitMap

from lsmlake.errors import CorruptFileError

VERSION = 1


def roaring(rows: np.ndarray) -> BitMap:
    """A roaring bitmap of row positions (through array.array: pyroaring reads a numpy array value by value)."""
    return BitMap(array.array("I", np.ascontiguousarray(rows, dtype=np.uint32).tobytes()))


def bitmap_bytes(rows: np.ndarray) -> bytes:
    """A roaring bitmap of ``rows``, run-optimized as Paimon serializes every bitmap."""
    b = roaring(rows)
    b.run_optimize()
    return bytes(b.serialize())


def write_bit_slices(codes: np.ndarray, cardinality: int) -> bytes:
    """The BitSliceIndexBitmap of ``codes`` (-1: null): header (version, slices, ebm length, slice
    directory), then the bitmap of non-null rows and one bitmap per bit of the codes."""
    top = cardinality - 1
    n = 64 if top < 0 else max(top.bit_length(), 1)  # Java sizes by the long -1 when there is no key
    live = np.flatnonzero(codes >= 0)
    ebm = bitmap_bytes(live)
    live_codes = codes[live]
    slices = [bitmap_bytes(live[(live_codes >> i) & 1 == 1]) for i in range(n)]
    directory = []
    offset = 0
    for s in slices:
        directory.append(struct.pack(">ii", offset, len(s)))
        offset += len(s)
    header = struct.pack(">bbii", VERSION, n, len(ebm), 8 * n) + b"".join(directory)
    return struct.pack(">i", len(header)) + header + ebm + b"".join(slices)


class BitSlices:
    """A parsed BitSliceIndexBitmap; bitmaps are deserialized when first needed."""

    def __init__(self, data: bytes, pos: int, row_count: int, *, source: str) -> None:
        (header_length,) = struct.unpack_from(">i", data, pos)
        start = pos + 4
        version, n, ebm_length, _ = struct.unpack_from(">bbii", data, start)
        if version > VERSION:
            raise CorruptFileError(f"{source}: bit-slice version {version} is not supported")
        self._data, self.source, self.row_count = data, source, row_count
        self._directory = np.frombuffer(data, dtype=">i4", count=2 * (n & 0xFF), offset=start + 10)
        self._ebm = (start + header_length, ebm_length)
        self._slices_base = start + header_length + ebm_length
        if self._slices_base > len(data):
            raise CorruptFileError(f"{source}: bit slices run past the index")
        self._cache: dict[int, BitMap] = {}

    def _load(self, start: int, length: int) -> BitMap:
        if start + length > len(self._data):
            raise CorruptFileError(f"{self.source}: bit slice runs past the index")
        return BitMap.deserialize(self._data[start : start + length])

    @property
    def slice_count(self) -> int:
        return len(self._directory) // 2

    def live(self) -> BitMap:
        """The non-null rows (a copy)."""
        if -1 not in self._cache:
            live = self._cache[-1] = self._load(*self._ebm)
            if live and live.max() >= self.row_count:
                raise CorruptFileError(f"{self.source}: row {live.max()} of {self.row_count}")
        return BitMap(self._cache[-1])

    def slice(self, i: int) -> BitMap:
        if i not in self._cache:
            offset, length = int(self._directory[2 * i]), int(self._directory[2 * i + 1])
            self._cache[i] = self._load(self._slices_base + offset, length)
        return self._cache[i]

    def greater(self, code: int) -> BitMap:
        """Rows whose code is greater than ``code``: above the run of low one bits, each higher bit of the
        code narrows (1) or widens (0) the rows greater so far."""
        if code < 0:
            return self.live()
        if code >> self.slice_count:  # above every code the slices can hold
            return BitMap()
        start = (~code & -~code).bit_length() - 1  # trailing one bits of the code
        state: BitMap | None = None
        for i in range(start, self.slice_count):
            if state is None:
                state = BitMap(self.slice(i))
            elif (code >> i) & 1:
                state &= self.slice(i)
            else:
                state |= self.slice(i)
        return BitMap() if state is None else state & self.live()

    def in_range(self, low: int, high: int, cardinality: int) -> BitMap:
        """Rows whose code is in ``[low, high)``."""
        rows = self.greater(low - 1)
        return rows - self.greater(high - 1) if high < cardinality else rows

    def codes(self) -> np.ndarray:
        """Every row's code, -1 for null (decodes every slice)."""
        acc = np.zeros(self.row_count, dtype=np.int64)
        for i in range(self.slice_count):
            acc[np.asarray(self.slice(i).to_array(), dtype=np.int64)] |= np.int64(1) << np.int64(i)
        codes = np.full(self.row_count, -1, dtype=np.int64)
        live = np.asarray(self.live().to_array(), dtype=np.int64)
        codes[live] = acc[live]
        return codes
