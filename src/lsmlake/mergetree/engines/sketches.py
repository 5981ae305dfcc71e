"""Sketch and bitmap aggregators over VARBINARY columns: hll_sketch, theta_sketch, rbm32, rbm64.

Each step is Paimon's: the first non-null value is kept as written, every later one is unioned into
it and the union re-serialized (HLL as a compact HLL_4 sketch, theta as a compact ordered sketch,
a 32-bit roaring bitmap run-optimized in the portable format, a 64-bit one in Java's Roaring64Bitmap
layout). ``datasketches`` is imported when a
sketch column is first merged, so tables without one never need it.
"""

from __future__ import annotations

import importlib
import struct
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lsmlake.errors import LsmlakeError, UnsupportedError
from lsmlake.mergetree.engines import roaring64
from lsmlake.mergetree.engines.aggregator import Ops
from lsmlake.mergetree.engines.recordwise import RecordFold, group_steps

THETA_LG_K = 12  # Paimon's union: datasketches' default nominal entries, 4096
THETA_SEED = 9001  # datasketches' default update seed


def _datasketches() -> ModuleType:
    try:
        return importlib.import_module("datasketches")
    except ImportError:  # pragma: no cover - it is a declared dependency
        raise UnsupportedError(
            "hll_sketch/theta_sketch aggregation needs the 'datasketches' package"
        ) from None


class Blob(RecordFold):
    """A union over serialized values: null is the identity, a lone value is kept byte for byte."""

    types = frozenset({"VARBINARY"})
    type_noun = "VARBINARY/BYTES"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        try:
            return self.union([acc, value])
        except (ValueError, RuntimeError, OSError) as e:
            raise LsmlakeError(f"aggregate function '{self.name}' of field '{self.field}': {e}") from None

    def union(self, blobs: list[bytes]) -> bytes:
        raise NotImplementedError


class HllSketch(Blob):
    name = "hll_sketch"

    def union(self, blobs: list[bytes]) -> bytes:
        ds = _datasketches()
        acc, value = (ds.hll_sketch.deserialize(b) for b in blobs)
        union = ds.hll_union(value.lg_config_k)  # Paimon: Union.heapify(input), then update(accumulator)
        union.update(value)
        union.update(acc)
        return bytes(union.get_result(ds.tgt_hll_type.HLL_4).serialize_compact())


class ThetaSketch(Blob):
    name = "theta_sketch"

    def union(self, blobs: list[bytes]) -> bytes:
        ds = _datasketches()
        union = ds.theta_union(THETA_LG_K, 1.0, THETA_SEED)
        for b in blobs:
            union.update(ds.compact_theta_sketch.deserialize(b, THETA_SEED))
        return _java_compact_preamble(bytes(union.get_result(True).serialize()))


def _java_compact_preamble(blob: bytes) -> bytes:
    """datasketches-java stores p = 1.0f in bytes 12..15 of a compact sketch with two or more preamble longs
    (the C++ library leaves them zero; neither reads them): Java's bytes exactly."""
    if len(blob) >= 16 and blob[0] & 0x3F > 1:
        return blob[:12] + struct.pack("<f", 1.0) + blob[16:]
    return blob


class RoaringBitmap32(Blob):
    """Set union, so a key group's values are unioned at once (the same bitmap as one by one)."""

    name = "rbm32"

    def union(self, blobs: list[bytes]) -> bytes:
        merged = BitMap.union(*(BitMap.deserialize(b) for b in blobs))
        merged.run_optimize()
        return bytes(merged.serialize())

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        py = values.to_pylist()
        out: list[bytes | None] = []
        for base, steps in group_steps(ops):
            rows = ([base] if base >= 0 else []) + [i for i, retract in steps if not retract]
            blobs = [py[i] for i in rows if py[i] is not None]
            if len(blobs) <= 1:
                out.append(blobs[0] if blobs else None)
                continue
            try:
                out.append(self.union(blobs))
            except (ValueError, RuntimeError, OSError) as e:
                raise LsmlakeError(f"aggregate function '{self.name}' of field '{self.field}': {e}") from None
        return pa.array(out, values.type)


class RoaringBitmap64(RoaringBitmap32):
    """64-bit values in Java's Roaring64Bitmap serialization (see ``roaring64``)."""

    name = "rbm64"

    def union(self, blobs: list[bytes]) -> bytes:
        return roaring64.encode(np.concatenate([roaring64.decode(b) for b in blobs]))
