"""pypaimon 2.1.0 merges lsmlake's layered nested_update, nested_partial_update and rbm32 columns as lsmlake
does, and fails on merge_map_with_keytime (its merged map of rows does not convert back to Arrow). Its venv
has no datasketches, so the sketch columns are left to the Java test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pypaimon_env import pypaimon_read
from pyroaring import BitMap

import lsmlake

pytestmark = pytest.mark.interop

ELEMENT = pa.struct([("id", pa.int32()), ("v", pa.string()), ("n", pa.int32())])
ENTRY = pa.struct([("x", pa.string()), ("ts", pa.string())])
SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("nu", pa.list_(ELEMENT)),
        ("nl", pa.list_(ELEMENT)),
        ("npu", pa.list_(ELEMENT)),
        ("mm", pa.map_(pa.string(), ENTRY)),
        ("r", pa.binary()),
    ]
)
OPTIONS = {
    "bucket": "2",
    "write-only": "true",  # keep every write a layer of its own: the reader merges them
    "merge-engine": "aggregation",
    "fields.nu.aggregate-function": "nested_update",
    "fields.nu.nested-key": "id",
    "fields.nl.aggregate-function": "nested_update",
    "fields.nl.count-limit": "4",
    "fields.npu.aggregate-function": "nested_partial_update",
    "fields.npu.nested-key": "id",
    "fields.mm.aggregate-function": "merge_map_with_keytime",
    "fields.r.aggregate-function": "rbm32",
}


def batch(keys: range, g: int) -> pa.Table:
    rows = []
    for k in keys:
        ids = [(k * g + j) % 4 for j in range(3)]
        rows.append(
            {
                "k": k,
                "nu": None if (k + g) % 5 == 0 else [{"id": i, "v": f"{g}-{i}", "n": g} for i in ids],
                "nl": [{"id": i, "v": f"{g}", "n": None} for i in ids],
                "npu": [
                    {"id": i, "v": None if (i + g) % 2 else f"{g}", "n": g if i % 2 else None} for i in ids
                ],
                "mm": [(f"m{(k + g) % 3}", {"x": f"{g}", "ts": f"2024-0{(g * 7) % 5}"}), (f"z{g % 2}", None)],
                "r": bytes(BitMap(range(k * 10 + g, k * 10 + g + (k % 3) * 3000 + 1)).serialize()),
            }
        )
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def canonical(table: pa.Table) -> list[dict[str, Any]]:
    out = []
    for r in table.to_pylist():
        for name in ("nu", "npu"):
            if r.get(name) is not None:
                r[name] = sorted(r[name], key=lambda e: repr(sorted(e.items())))
        if r.get("r") is not None:
            r["r"] = sorted(BitMap.deserialize(r["r"]))
        out.append(r)
    return sorted(out, key=lambda r: r["k"])


def layered(warehouse: Path, columns: list[str]) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([SCHEMA.field(c) for c in columns])
    options = {k: v for k, v in OPTIONS.items() if not k.startswith("fields.") or k.split(".")[1] in columns}
    table = catalog.create_table("db.t", schema=schema, primary_key=["k"], options=options)
    for g, keys in enumerate((range(0, 12), range(6, 18), range(3, 15)), start=1):
        table.write(batch(keys, g).select(columns))
    assert {f.level for s in table.scan().splits() for f in s.files} == {0}  # layers the reader merges
    return table


def test_pypaimon_merges_the_nested_and_bitmap_aggregates_alike(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    table = layered(warehouse, ["k", "nu", "nl", "npu", "r"])
    ours = canonical(table.read())
    assert any(r["nu"] is not None and len(r["nu"]) > 3 for r in ours)
    assert canonical(pypaimon_read(warehouse, "db.t")) == ours


def test_pypaimon_fails_on_merged_maps_of_rows(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    table = layered(warehouse, ["k", "mm"])
    assert any(len(r["mm"]) > 1 for r in table.read().to_pylist())
    with pytest.raises(RuntimeError, match="expecting a dict"):
        pypaimon_read(warehouse, "db.t")
