"""pypaimon 2.1.0 (its own venv) reads lsmlake tables after each kind of ALTER, writes more rows with the
new schema, and lsmlake reads those back: both see the same rows."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from pypaimon_env import PypaimonBatch

pytestmark = pytest.mark.interop

BASE = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        ("v", pa.int32()),
        ("s", pa.string()),
        ("f", pa.float32()),
        ("d", pa.decimal128(6, 2)),
        ("n", pa.int16()),
        pa.field("req", pa.int64(), nullable=False),
    ]
)


def base_rows(keys: range) -> list[dict[str, Any]]:
    return [
        {"k": i, "v": i * 10, "s": f"s{i}", "f": i / 2, "d": Decimal(i) / 4, "n": i, "req": i * 100}
        for i in keys
    ]


@dataclass(frozen=True)
class Case:
    id: str
    changes: tuple[sc.SchemaChange, ...]
    rename: Callable[[dict[str, Any]], dict[str, Any]]
    """How a row written before the ALTER reads after it."""
    pk: bool = True


def _drop(row: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in names}


CASES = [
    Case(
        "add",
        (sc.add_column("a", "BIGINT", after="k"), sc.add_column("b", "STRING")),
        lambda r: {**r, "a": None, "b": None},
    ),
    Case("drop", (sc.drop_column("s"), sc.drop_column("n")), lambda r: _drop(r, "s", "n")),
    Case(
        "rename",
        (sc.rename_column("v", "value"), sc.rename_column("s", "v")),
        lambda r: {**_drop(r, "v", "s"), "value": r["v"], "v": r["s"]},
    ),
    Case("rename-key", (sc.rename_column("k", "key"),), lambda r: {**_drop(r, "k"), "key": r["k"]}),
    Case(
        "widen",
        (
            sc.update_column_type("v", "BIGINT"),
            sc.update_column_type("f", "DOUBLE"),
            sc.update_column_type("d", "DECIMAL(8, 3)"),
            sc.update_column_type("n", "INT"),
            sc.update_column_type("s", "STRING"),
        ),
        lambda r: r,
    ),
    Case("nullability", (sc.update_column_nullability("req", True),), lambda r: r),
    Case(
        "position-options-comments",
        (
            sc.update_column_position("s", first=True),
            sc.update_column_position("k", after="d"),
            sc.update_column_comment("v", "a value"),
            sc.update_comment("evolved"),
            sc.set_option("snapshot.num-retained.min", "5"),
        ),
        lambda r: r,
    ),
    Case(
        "append-mixed",
        (
            sc.add_column("a", "INT", first=True),
            sc.rename_column("v", "w"),
            sc.update_column_type("w", "BIGINT"),
            sc.drop_column("n"),
        ),
        lambda r: {**_drop(r, "v", "n"), "a": None, "w": r["v"]},
        pk=False,
    ),
]


def arrow_schema(t: Table) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in t.schema.logical_arrow_schema()])


def canonical(rows: list[dict[str, Any]]) -> list[tuple[tuple[str, Any], ...]]:
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def new_row(t: Table, key: int, seed: int) -> dict[str, Any]:
    """A row for the altered schema with a value in every column."""
    values: dict[str, Any] = {}
    for f in t.schema.fields:
        root = f.type.root
        if f.name in t.schema.primary_keys or f.name == "k":
            values[f.name] = key
        elif root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
            values[f.name] = seed
        elif root in ("FLOAT", "DOUBLE"):
            values[f.name] = seed / 4
        elif root == "DECIMAL":
            values[f.name] = Decimal(seed) / 4
        else:
            values[f.name] = f"x{seed}"
    return values


def test_pypaimon_reads_and_writes_after_each_kind_of_alter(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    cat = lsmlake.Catalog(str(warehouse))
    cat.create_database("db")
    expected: dict[str, list[dict[str, Any]]] = {}
    tables: dict[str, Table] = {}
    batch = PypaimonBatch()
    for case in CASES:
        ident = f"db.{case.id.replace('-', '_')}"
        options = {"bucket": "2"} if case.pk else {"bucket": "-1"}
        t = cat.create_table(ident, schema=BASE, primary_key=["k"] if case.pk else None, options=options)
        t.write(pa.Table.from_pylist(base_rows(range(6)), schema=BASE))
        t = t.alter(*case.changes)
        rows = [case.rename(r) for r in base_rows(range(6))]
        later = [new_row(t, 3, 7), new_row(t, 10, 8)]  # key 3 updates a row written before the ALTER
        t.write(pa.Table.from_pylist(later, schema=arrow_schema(t)))
        key = "key" if case.id == "rename-key" else "k"
        if case.pk:
            rows = [r for r in rows if r[key] != 3]
        rows += later
        theirs = new_row(t, 20, 9)
        batch.write(warehouse, ident, pa.Table.from_pylist([theirs], schema=arrow_schema(t)))
        batch.read(warehouse, ident)
        expected[ident] = [*rows, theirs]
        tables[ident] = t
    results = batch.run()
    reads = results[1::2]
    for (ident, want), got in zip(expected.items(), reads, strict=True):
        t = tables[ident]
        assert got.column_names == t.schema.field_names, ident
        assert canonical(got.to_pylist()) == canonical(want), f"pypaimon read of {ident}"
        mine = cat.get_table(ident)
        assert isinstance(mine, Table)
        assert canonical(mine.read().to_pylist()) == canonical(want), f"lsmlake read of {ident}"
        assert {f.schema_id for s in mine.scan().splits() for f in s.files} >= {0, 1}, ident
