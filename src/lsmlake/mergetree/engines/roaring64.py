"""Java RoaringBitmap's ``Roaring64Bitmap`` serialization (1.x, as Paimon's rbm64 stores it), read and written.

The layout has no portable specification; it is the library's own: a tag byte (0 empty, 1 not), then
an adaptive radix tree over the 48-bit high parts of the values (little-endian key count, then the
nodes depth-first: a header of node type, child count and compressed prefix, the node's key bytes,
its children; a leaf holds the 6 high bytes and the index of its container), then the containers of
the 16-bit low parts (two levels of slots; run, bitmap or array containers, all little-endian) and the
container store's counters. Reading accepts any tree Java wrote; writing builds the tree Java's
inserts build for the same keys, with every container run-optimized as ``runOptimize`` leaves it.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

NODE4, NODE16, NODE48, NODE256, LEAF = range(5)
_BODY = {NODE4: 4, NODE16: 16, NODE48: 256, NODE256: 32}
RUN, BITMAP, ARRAY = 0, 1, 2
ARRAY_MAX = 4096
U64 = np.dtype("<u8")


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"truncated Roaring64Bitmap: {n} bytes needed at offset {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]


def _leaves(r: Reader, out: list[tuple[int, int]]) -> None:
    kind = r.unpack("<b")
    count = r.unpack("<h")
    prefix = r.unpack("<b")
    if prefix < 0 or prefix > 6:
        raise ValueError(f"corrupt Roaring64Bitmap: node prefix of {prefix} bytes")
    r.take(prefix)
    if kind == LEAF:
        high = int.from_bytes(r.take(6), "big")
        out.append((high, r.unpack("<q")))
        return
    if kind not in _BODY:
        raise ValueError(f"corrupt Roaring64Bitmap: node type {kind}")
    r.take(_BODY[kind])
    for _ in range(count):
        _leaves(r, out)


def _container(r: Reader) -> np.ndarray:
    kind = r.unpack("<b")
    cardinality = r.unpack("<i")
    if kind == RUN:
        runs = r.unpack("<H")
        pairs = np.frombuffer(r.take(4 * runs), dtype="<u2").astype(np.int64).reshape(-1, 2)
        if not len(pairs):
            return np.zeros(0, dtype=np.uint64)
        starts = np.repeat(pairs[:, 0], pairs[:, 1] + 1)
        steps = np.arange(len(starts)) - np.repeat(
            np.cumsum(pairs[:, 1] + 1) - (pairs[:, 1] + 1), pairs[:, 1] + 1
        )
        return (starts + steps).astype(np.uint64)
    if kind == BITMAP:
        bits = np.unpackbits(np.frombuffer(r.take(8192), dtype=np.uint8), bitorder="little")
        return np.flatnonzero(bits).astype(np.uint64)
    if kind == ARRAY:
        return np.frombuffer(r.take(2 * cardinality), dtype="<u2").astype(np.uint64)
    raise ValueError(f"corrupt Roaring64Bitmap: container type {kind}")


def decode(data: bytes) -> np.ndarray:
    """The sorted uint64 values of a serialized Roaring64Bitmap; ValueError when the bytes are not one."""
    r = Reader(bytes(data))
    if r.unpack("<b") == 0:
        return np.zeros(0, dtype=np.uint64)
    r.unpack("<q")  # key count
    leaves: list[tuple[int, int]] = []
    _leaves(r, leaves)
    levels: list[list[np.ndarray | None]] = []
    for _ in range(r.unpack("<i")):
        r.take(1)  # trimmed mark
        slots: list[np.ndarray | None] = []
        for _ in range(r.unpack("<i")):
            slots.append(_container(r) if r.unpack("<b") == 1 else None)
        levels.append(slots)
    r.take(16)  # container count, next first- and second-level index
    parts = []
    for high, index in leaves:
        try:
            low = levels[index >> 32][index & 0xFFFFFFFF]
        except IndexError:
            low = None
        if low is None:
            raise ValueError(f"corrupt Roaring64Bitmap: leaf points at missing container {index}")
        parts.append((np.uint64(high << 16)) | low)
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.uint64)


# --------------------------------------------------------------------------- writing


def _runs(low: np.ndarray) -> np.ndarray:
    """(start, length - 1) of each run of consecutive values."""
    breaks = np.flatnonzero(np.diff(low) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(low)]])
    return np.stack([low[starts], low[ends - 1] - low[starts]], axis=1)


def _encode_container(low: np.ndarray) -> bytes:
    card = len(low)
    runs = _runs(low.astype(np.int64))
    run_size = 2 + 4 * len(runs)
    plain_size = 2 * card if card <= ARRAY_MAX else 8192
    if plain_size > run_size:  # runOptimize: a run container only when it is strictly smaller
        body = struct.pack("<H", len(runs)) + runs.astype("<u2").tobytes()
        return struct.pack("<bi", RUN, card) + body
    if card <= ARRAY_MAX:
        return struct.pack("<bi", ARRAY, card) + low.astype("<u2").tobytes()
    bits = np.zeros(65536, dtype=np.uint8)
    bits[low.astype(np.int64)] = 1
    return struct.pack("<bi", BITMAP, card) + np.packbits(bits, bitorder="little").tobytes()


def _node(keys: list[bytes], slots: list[int], depth: int, out: bytearray) -> None:
    """The ART over ``keys`` (sorted, distinct, 6 bytes) below ``depth``, depth-first, as Java inserts build it."""
    if len(keys) == 1:
        out += struct.pack("<bhb", LEAF, 0, 0) + keys[0] + struct.pack("<q", slots[0])
        return
    first, last = keys[0], keys[-1]
    prefix = 0
    while first[depth + prefix] == last[depth + prefix]:
        prefix += 1
    at = depth + prefix
    groups: list[tuple[int, list[bytes], list[int]]] = []
    for key, slot in zip(keys, slots, strict=True):
        if not groups or groups[-1][0] != key[at]:
            groups.append((key[at], [], []))
        groups[-1][1].append(key)
        groups[-1][2].append(slot)
    n = len(groups)
    kind = NODE4 if n <= 4 else NODE16 if n <= 16 else NODE48 if n <= 48 else NODE256
    out += struct.pack("<bhb", kind, n, prefix) + first[depth:at]
    child_keys = [g[0] for g in groups]
    if kind in (NODE4, NODE16):
        width = 4 if kind == NODE4 else 8
        packed = bytes(child_keys) + bytes(_BODY[kind] - n)
        for i in range(0, len(packed), width):  # each int/long is written little-endian
            out += packed[i : i + width][::-1]
    elif kind == NODE48:
        index = bytearray(b"\xff" * 256)
        for slot, k in enumerate(child_keys):
            index[k] = slot
        for i in range(0, 256, 8):
            out += index[i : i + 8][::-1]
    else:
        mask = np.zeros(256, dtype=np.uint8)
        mask[child_keys] = 1
        out += np.packbits(mask, bitorder="little").tobytes()
    for _, group_keys, group_slots in groups:
        _node(group_keys, group_slots, at + 1, out)


def encode(values: np.ndarray) -> bytes:
    """``values`` (any order, repeats allowed) as Java's run-optimized Roaring64Bitmap serialization."""
    v = np.unique(np.asarray(values, dtype=np.uint64))
    if not len(v):
        return b"\x00"
    high = v >> np.uint64(16)
    low = (v & np.uint64(0xFFFF)).astype(np.uint16)
    starts = np.flatnonzero(np.concatenate([[True], high[1:] != high[:-1]]))
    ends = np.concatenate([starts[1:], [len(v)]])
    keys = [int(h).to_bytes(8, "big")[2:] for h in high[starts]]
    out = bytearray(b"\x01") + struct.pack("<q", len(keys))
    _node(keys, list(range(len(keys))), 0, out)
    out += struct.pack("<ibi", 1, -2, len(keys))  # one slot level, not trimmed, its size
    for s, e in zip(starts, ends, strict=True):
        out += b"\x01" + _encode_container(low[s:e])
    out += struct.pack("<qii", len(keys), 0, len(keys) - 1)
    return bytes(out)
