"""The demo: upserts and deletes into a partitioned primary-key table, then what a reader sees."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
from rich.console import Console

from lsmlake.catalog import Catalog

DEMO_TABLE = "demo.orders"
SCHEMA = pa.schema([
    ("id", pa.int64()), ("dt", pa.string()), ("customer", pa.string()), ("amount", pa.decimal128(10, 2)),
])


def _rows(ids: list[int], dt: str, customer: str, amount: str) -> pa.Table:
    return pa.table({
        "id": ids, "dt": [dt] * len(ids), "customer": [f"{customer}-{i}" for i in ids],
        "amount": [Decimal(amount) + i for i in ids],
    }, schema=SCHEMA)


def run_demo(warehouse: str, console: Console) -> None:
    """Write four commits into ``demo.orders`` (re-created each run) and print the result."""
    catalog = Catalog(warehouse)
    catalog.create_database("demo", exist_ok=True)
    catalog.drop_table(DEMO_TABLE, ignore_missing=True)
    table = catalog.create_table(
        DEMO_TABLE, schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"},
    )
    console.print(f"[bold]created[/] {DEMO_TABLE} in {warehouse}: primary key (dt, id), 2 buckets")
    steps = [
        ("insert 6 orders on 2024-01-01", lambda: table.write(_rows([1, 2, 3, 4, 5, 6], "2024-01-01", "alice", "10.00"))),
        ("insert 3 orders on 2024-01-02", lambda: table.write(_rows([1, 2, 3], "2024-01-02", "bob", "20.00"))),
        ("update orders 2 and 4 of 2024-01-01", lambda: table.write(_rows([2, 4], "2024-01-01", "carol", "99.00"))),
        ("delete order 5 of 2024-01-01 and 3 of 2024-01-02",
         lambda: table.delete(pa.table({"dt": ["2024-01-01", "2024-01-02"], "id": [5, 3]}))),
    ]
    for text, step in steps:
        sid = step()
        console.print(f"snapshot {sid}: {text}")
    latest = table.latest_snapshot()
    assert latest is not None
    console.print(f"latest snapshot {latest.id}: {latest.total_record_count} physical rows in live files")
    for path in sorted(s.path for s in table.io.walk_files(table.root) if s.name.endswith(".parquet")):
        console.print(f"  {path[len(table.root) + 1:]}")
    console.print(table.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pandas().to_string())
