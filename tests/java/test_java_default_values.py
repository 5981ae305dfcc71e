"""Column default values across Java Paimon and lsmlake: each side sets defaults the other honours on
write, and each keeps the other's defaults when it rewrites the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake
from lsmlake import schema_change as sc

pytestmark = pytest.mark.java

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("n", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("b", pa.bool_()),
        pa.field("d", pa.decimal128(6, 2)),
    ]
)


def _nulls(ids: range) -> list[dict[str, Any]]:
    return [{"id": i, "n": None, "s": None, "b": None, "d": None} for i in ids]


def _schema_defaults(warehouse: str) -> dict[str, str]:
    files = sorted(Path(warehouse, "db.db", "t", "schema").iterdir(), key=lambda p: int(p.name.split("-")[1]))
    fields = json.loads(files[-1].read_text())["fields"]
    return {f["name"]: f["defaultValue"] for f in fields if "defaultValue" in f}


def test_defaults_are_honoured_and_kept_by_both_sides(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table.alter(
        sc.update_column_default_value("n", 7),
        sc.update_column_default_value("s", "'hi'"),
        sc.update_column_default_value("b", "yes"),
        sc.update_column_default_value("d", "1.005"),
    )
    table = catalog.get_table("db.t")

    def check(step: str) -> list[dict[str, Any]]:
        ours = sort_rows(arrow_rows(table.read()), ["id"])
        assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"]) == ours, step
        return ours

    table.write(pa.Table.from_pylist(_nulls(range(0, 3)), schema=SCHEMA))
    java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in _nulls(range(3, 6))])
    rows = check("both sides fill lsmlake's defaults")
    # Java casts the text as lsmlake does: 7, 'hi' without its quotes, 'yes' is true, 1.005 rounds half-up
    assert {(r["n"], r["s"], r["b"], r["d"]) for r in rows} == {(7, "hi", True, "1.01")}

    # Java changes a default and renames a column; lsmlake writes with Java's default
    java_paimon.alter(warehouse, "db.t", [{"default": "n", "value": "42"}, {"rename": "s", "to": "label"}])
    table = catalog.get_table("db.t")
    table.write(
        pa.table({"id": pa.array([6], pa.int32()), "n": pa.array([None], pa.int64())})
        .append_column("label", pa.array([None], pa.string()))
        .append_column("b", pa.array([False]))
        .append_column("d", pa.array([None], pa.decimal128(6, 2)))
    )
    assert check("lsmlake fills Java's default")[6]["n"] == 42

    # lsmlake rewrites Java's schema (a new column): every default survives, and Java still fills them
    table = table.alter(sc.add_column("extra", pa.int32()))
    assert _schema_defaults(warehouse) == {"n": "42", "label": "'hi'", "b": "yes", "d": "1.005"}
    java_paimon.write(
        warehouse,
        "db.t",
        [{"_kind": "+I", "id": 7, "n": None, "label": None, "b": None, "d": None, "extra": 1}],
    )
    row = check("Java fills the defaults lsmlake kept")[7]
    assert (row["n"], row["label"], row["b"], row["d"]) == (42, "hi", True, "1.01")

    # lsmlake drops a default: nulls stay null on both sides
    table = table.alter(sc.update_column_default_value("n", None))
    assert "n" not in _schema_defaults(warehouse)
    java_paimon.write(
        warehouse,
        "db.t",
        [{"_kind": "+I", "id": 8, "n": None, "label": "x", "b": None, "d": None, "extra": None}],
    )
    assert check("no default for n")[8]["n"] is None
