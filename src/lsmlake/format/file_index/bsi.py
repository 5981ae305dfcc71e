"""Paimon's bit-slice index (BSI): positive and negative values as bit slices of roaring bitmaps, decoded to rows."""

from __future__ import annotations

import struct

import numpy as np
from pyroaring import BitMap

from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError
from lsmlake.format.file_index.bit_slices import roaring
from lsmlake.format.file_index.keys import INT_ROOTS, TIMESTAMP_ROOTS

BSI = "bsi"


def bsi_supported(t: DataType) -> bool:
    return (
        t.root in INT_ROOTS
        or t.root in TIMESTAMP_ROOTS
        or (t.root == "DECIMAL" and (t.precision or 10) <= 18)
    )


def _bitmap(data: bytes, pos: int) -> tuple[BitMap, int]:
    b = BitMap.deserialize(data[pos:])
    return b, pos + len(b.serialize())


def _slices(data: bytes, pos: int, sign: int, values: np.ndarray, present: np.ndarray) -> int:
    if data[pos] != 1:
        raise CorruptFileError(f"bit-slice bitmap version {data[pos]} is not supported")
    base, _max = struct.unpack_from(">qq", data, pos + 1)
    ebm, pos = _bitmap(data, pos + 17)
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    rows = np.asarray(ebm.to_array(), dtype=np.int64)
    acc = np.zeros(len(values), dtype=np.uint64)
    for i in range(n):
        s, pos = _bitmap(data, pos)
        acc[np.asarray(s.to_array(), dtype=np.int64)] |= np.uint64(1) << np.uint64(i)
    with np.errstate(over="ignore"):
        values[rows] = sign * (acc[rows].view(np.int64) + np.int64(base))
    present[rows] = True
    return pos


class BsiIndex:
    """A parsed BSI: ``values`` (int64 per row, in index units) and ``present`` (the non-null rows)."""

    def __init__(self, data: bytes, *, source: str) -> None:
        try:
            if data[0] != 1:
                raise CorruptFileError(f"{source}: BSI index version {data[0]} is not supported")
            (self.row_count,) = struct.unpack_from(">i", data, 1)
            self.values = np.zeros(self.row_count, dtype=np.int64)
            self.present = np.zeros(self.row_count, dtype=bool)
            pos = 5
            for sign in (1, -1):
                has = data[pos] != 0
                pos += 1
                if has:
                    pos = _slices(data, pos, sign, self.values, self.present)
        except (struct.error, IndexError, ValueError) as e:
            raise CorruptFileError(f"{source}: malformed BSI index ({e})") from e


def _write_slices(values: np.ndarray, rows: np.ndarray) -> bytes:
    """One sign's BitSliceIndexRoaringBitmap: version, min (Paimon's writer always starts at 0), max, slices."""
    top = int(values.max()) if len(values) else 0
    out = [struct.pack(">bqq", 1, 0, top), roaring(rows).serialize()]
    n = top.bit_length()
    out.append(struct.pack(">i", n))
    as_unsigned = values.astype(np.uint64)
    for i in range(n):
        bit = (as_unsigned >> np.uint64(i)) & np.uint64(1)
        out.append(roaring(rows[bit.astype(bool)]).serialize())
    return b"".join(out)


def write_bsi(values: np.ndarray, nulls: np.ndarray) -> bytes:
    """A BSI of int64 ``values`` (index units) with their null mask."""
    v = np.asarray(values, dtype=np.int64)
    rows = np.arange(len(v), dtype=np.int64)
    pos = ~nulls & (v >= 0)
    neg = ~nulls & (v < 0) & (v != np.iinfo(np.int64).min)
    out = [struct.pack(">bi", 1, len(v))]
    for mask, part in ((pos, v), (neg, -v)):
        out.append(struct.pack(">?", bool(mask.any())))
        if mask.any():
            out.append(_write_slices(part[mask], rows[mask]))
    return b"".join(out)
