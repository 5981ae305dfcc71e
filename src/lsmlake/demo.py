"""The demo: the same upserts and deletes into a merge-on-read and a deletion-vector table, then reads."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
from rich.console import Console

from lsmlake.catalog import Catalog
from lsmlake.table import Table

SCHEMA = pa.schema([
    ("id", pa.int64()), ("dt", pa.string()), ("customer", pa.string()), ("amount", pa.decimal128(10, 2)),
])


def _rows(ids: list[int], dt: str, customer: str, amount: str) -> pa.Table:
    return pa.table({
        "id": ids, "dt": [dt] * len(ids), "customer": [f"{customer}-{i}" for i in ids],
        "amount": [Decimal(amount) + i for i in ids],
    }, schema=SCHEMA)


def _apply_commits(table: Table, console: Console) -> None:
    commits: list[tuple[str, pa.Table, bool]] = [
        ("insert 6 orders on 2024-01-01", _rows([1, 2, 3, 4, 5, 6], "2024-01-01", "alice", "10.00"), False),
        ("insert 3 orders on 2024-01-02", _rows([1, 2, 3], "2024-01-02", "bob", "20.00"), False),
        ("update orders 2 and 4 of 2024-01-01", _rows([2, 4], "2024-01-01", "carol", "99.00"), False),
        ("delete order 5 of 2024-01-01 and 3 of 2024-01-02",
         pa.table({"dt": ["2024-01-01", "2024-01-02"], "id": [5, 3]}), True),
    ]
    for text, data, is_delete in commits:
        sid = table.delete(data) if is_delete else table.write(data)
        console.print(f"  {table.name}: {text} -> snapshot {sid}")


def run_demo(warehouse: str, console: Console) -> None:
    """Create ``demo.orders_mor`` and ``demo.orders_dv`` (re-created each run), write, compact, read."""
    catalog = Catalog(warehouse)
    catalog.create_database("demo", exist_ok=True)
    tables = []
    for name, dv in (("demo.orders_mor", "false"), ("demo.orders_dv", "true")):
        catalog.drop_table(name, ignore_missing=True)
        tables.append(catalog.create_table(
            name, schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
            options={"bucket": "2", "deletion-vectors.enabled": dv},
        ))
    console.print(f"[bold]warehouse[/] {warehouse}: two tables, primary key (dt, id), partitioned by dt, 2 buckets")
    for table in tables:
        _apply_commits(table, console)
    for table in tables:
        console.rule(table.name)
        console.print(table.explain())
        console.print(table.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pandas().to_string())
    mor = tables[0]
    mor.compact(full=True)
    console.rule(f"{mor.name} after a full compaction")
    console.print(mor.explain())
