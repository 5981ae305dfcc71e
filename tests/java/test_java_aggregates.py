"""Java Paimon and lsmlake on one aggregation table with the nested, keyed-map, sketch and bitmap
functions: each side writes layers the other merges on read and compacts, and both read the same rows
(HLL, theta and 32-bit bitmaps byte for byte; 64-bit bitmaps by value, Java's container slots following
its insertion history; nested elements as sets, Java's order being its HashMap's)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows
from pyroaring import BitMap

import lsmlake
from lsmlake.mergetree.engines import roaring64

ds = pytest.importorskip("datasketches")

pytestmark = pytest.mark.java

ELEMENT = pa.struct([pa.field("id", pa.int32()), pa.field("v", pa.string()), pa.field("n", pa.int32())])
ENTRY = pa.struct([pa.field("x", pa.string()), pa.field("ts", pa.string())])
SCHEMA = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        pa.field("nu", pa.list_(ELEMENT)),
        pa.field("nl", pa.list_(ELEMENT)),
        pa.field("npu", pa.list_(ELEMENT)),
        pa.field("mm", pa.map_(pa.string(), ENTRY)),
        pa.field("h", pa.binary()),
        pa.field("t", pa.binary()),
        pa.field("r", pa.binary()),
        pa.field("r64", pa.binary()),
    ]
)
OPTIONS = {
    "bucket": "2",
    "merge-engine": "aggregation",
    "fields.nu.aggregate-function": "nested_update",
    "fields.nu.nested-key": "id",
    "fields.nl.aggregate-function": "nested_update",
    "fields.nl.count-limit": "5",
    "fields.npu.aggregate-function": "nested_partial_update",
    "fields.npu.nested-key": "id",
    "fields.mm.aggregate-function": "merge_map_with_keytime",
    "fields.h.aggregate-function": "hll_sketch",
    "fields.t.aggregate-function": "theta_sketch",
    "fields.r.aggregate-function": "rbm32",
    "fields.r64.aggregate-function": "rbm64",
}
Row = dict[str, Any]


def _hll(values: Sequence[int]) -> bytes:
    sketch = ds.hll_sketch(12, ds.tgt_hll_type.HLL_4)
    for v in values:
        sketch.update(v)
    return bytes(sketch.serialize_compact())


def _theta(values: Sequence[int]) -> bytes:
    sketch = ds.update_theta_sketch()
    for v in values:
        sketch.update(v)
    return bytes(sketch.compact().serialize())


def _bitmap64(k: int, g: int) -> bytes:
    """64-bit values under 1 to ~300 distinct 48-bit high parts (every ART node kind), each high part's
    low 16 bits a run, a sparse array or a dense bitmap."""
    rng = np.random.default_rng(k * 31 + g)
    highs = rng.choice(
        np.array([0, 1, 2, 255, 256, 2**20, 2**40 + 7, 2**47 + 3, 2**48 - 1], dtype=np.uint64), 3
    )
    spread = (k % 4) * [1, 4, 20, 100][g % 4]
    highs = np.concatenate([highs, rng.integers(0, 2**48, spread, dtype=np.uint64) >> np.uint64(k % 40)])
    parts = []
    for i, h in enumerate(highs):
        lows = [np.arange(100, 900), rng.integers(0, 65536, 50), rng.integers(0, 65536, 6000)][(i + g) % 3]
        parts.append((h << np.uint64(16)) | lows.astype(np.uint64))
    return roaring64.encode(np.concatenate(parts))


def _batch(keys: Sequence[int], g: int) -> pa.Table:
    rows = []
    for k in keys:
        ids = [(k * g + j) % 4 for j in range(3)]
        # up to 2,700 distinct items, 6,000 (past theta's 4,096 and HLL's list/set modes) on every fifth key
        size = 6000 if k % 5 == 0 else (k % 4) * 900 + 3
        spread = range(k * 100 + g * 7, k * 100 + g * 7 + size)
        rows.append(
            {
                "k": k,
                "nu": None if (k + g) % 9 == 0 else [{"id": i, "v": f"{g}-{i}", "n": g} for i in ids],
                "nl": [{"id": i, "v": f"{g}", "n": None} for i in ids],
                "npu": [
                    {"id": i, "v": None if (i + g) % 2 else f"{g}", "n": g if i % 2 else None} for i in ids
                ],
                "mm": [(f"m{(k + g) % 3}", {"x": f"{g}", "ts": f"2024-0{g}"}), (f"z{g % 2}", None)],
                "h": None if (k + g) % 7 == 0 else _hll(spread),
                "t": _theta(spread if (k + g) % 11 else []),
                "r": bytes(BitMap(spread).serialize()),
                "r64": None if (k + g) % 5 == 0 else _bitmap64(k, g),
            }
        )
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _canonical(rows: Sequence[Mapping[str, Any]]) -> list[Row]:
    """Nested elements and map entries sorted (Java's order is its HashMap's), bytes as base64 text."""
    out = []
    for r in rows:
        row = dict(r)
        for name in ("nu", "npu"):
            if row[name] is not None:
                row[name] = sorted(row[name], key=lambda e: repr(sorted(e.items())))
        if row["mm"] is not None:
            row["mm"] = sorted(([list(p) for p in row["mm"]]), key=repr)
        for name in ("h", "t", "r"):
            if isinstance(row[name], bytes):
                row[name] = base64.b64encode(row[name]).decode()
        blob = row["r64"]
        if blob is not None:  # Java's container slots follow its insertion history: compared by value
            row["r64"] = roaring64.decode(
                blob if isinstance(blob, bytes) else base64.b64decode(blob)
            ).tolist()
        out.append(row)
    return sorted(out, key=lambda r: r["k"])


def test_new_aggregates_merge_alike_on_both_sides(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=OPTIONS)

    def check(step: str) -> list[Row]:
        ours = _canonical(arrow_rows(table.read()))
        assert len(ours) == 24
        theirs = _canonical(java_rows(java_paimon.read(warehouse, "db.t")))
        differ = sorted({f for a, b in zip(ours, theirs, strict=True) for f in a if a[f] != b[f]})
        assert theirs == ours, f"{step}: columns {differ} differ"
        return ours

    table.write(_batch(range(0, 16), 1))
    java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in arrow_rows(_batch(range(8, 24), 2))])
    table.write(_batch(range(4, 20), 3))
    merged = check("both merge lsmlake's and Java's layers on read")
    assert any(len(r["nu"] or []) > 1 for r in merged)
    java_paimon.compact(warehouse, "db.t")
    assert check("Java's compaction") == merged
    java_paimon.write(
        warehouse, "db.t", [{"_kind": "+I", **r} for r in arrow_rows(_batch(range(0, 24, 3), 4))]
    )
    table.write(_batch(range(1, 24, 2), 5))
    merged = check("layers on top of Java's compaction")
    table.compact(full=True)
    assert check("lsmlake's full compaction") == merged


RETRACT_SCHEMA = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        pa.field("nu", pa.list_(ELEMENT)),
        pa.field("h", pa.binary()),
        pa.field("r", pa.binary()),
    ]
)
RETRACT_OPTIONS = {
    "bucket": "1",
    "merge-engine": "aggregation",
    "fields.nu.aggregate-function": "nested_update",
    "fields.nu.nested-key": "id",
    "fields.h.aggregate-function": "hll_sketch",
    "fields.h.ignore-retract": "true",
    "fields.r.aggregate-function": "rbm32",
    "fields.r.ignore-retract": "true",
}


def _retract_rows(keys: Sequence[int], g: int, kind: str) -> list[Row]:
    return [
        {
            "_kind": kind,
            "k": k,
            "nu": [{"id": (k + g + j) % 5, "v": f"{g}", "n": g} for j in range(2)],
            "h": base64.b64encode(_hll(range(k, k + g + 2))).decode(),
            "r": base64.b64encode(bytes(BitMap(range(k, k + g + 2)).serialize())).decode(),
        }
        for k in keys
    ]


def test_retraction_merges_alike_on_both_sides(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """nested_update retracts by nested key; hll_sketch and rbm32 ignore retractions when told to."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=RETRACT_SCHEMA, primary_key=["k"], options=RETRACT_OPTIONS)

    def as_arrow(rows: list[Row]) -> pa.Table:
        plain = [{**r, "h": base64.b64decode(r["h"]), "r": base64.b64decode(r["r"])} for r in rows]
        return pa.Table.from_pylist(
            [{k: v for k, v in r.items() if k != "_kind"} for r in plain], schema=RETRACT_SCHEMA
        )

    def check(step: str) -> list[Row]:
        ours = _canonical_retract(arrow_rows(table.read()))
        assert _canonical_retract(java_rows(java_paimon.read(warehouse, "db.t"))) == ours, step
        return ours

    table.write(as_arrow(_retract_rows(range(10), 1, "+I")))
    # -U and +U in separate commits: in one, the write buffer would fold them before any earlier row
    java_paimon.write(warehouse, "db.t", _retract_rows(range(0, 10, 2), 1, "-U"))
    java_paimon.write(warehouse, "db.t", _retract_rows(range(0, 10, 2), 2, "+U"))
    with table.writer() as w:
        w.update(as_arrow(_retract_rows(range(1, 10, 3), 3, "+U")))
    merged = check("Java's -U/+U merged on read")
    for r in merged:  # the retraction took the first write's elements out; the sketches ignored it
        if r["k"] % 2 == 0 and r["k"] % 3 != 1:
            assert {e["v"] for e in r["nu"]} == {"2"}, r
    java_paimon.compact(warehouse, "db.t")
    assert check("Java's compaction") == merged
    table.compact(full=True)
    assert check("lsmlake's compaction") == merged


def _canonical_retract(rows: Sequence[Mapping[str, Any]]) -> list[Row]:
    out = []
    for r in rows:
        row = dict(r)
        if row["nu"] is not None:
            row["nu"] = sorted(row["nu"], key=lambda e: repr(sorted(e.items())))
        for name in ("h", "r"):
            if isinstance(row[name], bytes):
                row[name] = base64.b64encode(row[name]).decode()
        out.append(row)
    return sorted(out, key=lambda r: r["k"])
