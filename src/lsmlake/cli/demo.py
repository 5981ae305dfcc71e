"""The demo: the seeds' experiment, in SQL, on a merge-on-read table and a deletion-vector table."""

from __future__ import annotations

import pyarrow as pa
from rich.console import Console

from lsmlake.catalog import Catalog
from lsmlake.cli.render import render
from lsmlake.sql import execute

SETUP = """
CREATE DATABASE IF NOT EXISTS demo;
USE demo;
DROP TABLE IF EXISTS test_mor;
DROP TABLE IF EXISTS test_dv;
CREATE TABLE test_mor (user_id INT, age INT, PRIMARY KEY (user_id) NOT ENFORCED) WITH ('bucket' = '1');
CREATE TABLE test_dv (user_id INT, age INT, PRIMARY KEY (user_id) NOT ENFORCED)
    WITH ('bucket' = '1', 'deletion-vectors.enabled' = 'true');
"""
WRITES = """
insert into {t} values(1,1);
insert into {t} values(2,2);
insert into {t} values(3,33);
CALL sys.compact(table => 'demo.{t}');
update {t} set age = 2 where (user_id=1 or user_id = 2);
"""
SHOW = [
    ("the rows", "SELECT * FROM {t} ORDER BY user_id"),
    (
        "$files",
        "SELECT bucket, regexp_replace(file_path, '^.*/', '') AS file, level, record_count, "
        "deleteRowCount, min_sequence_number, max_sequence_number FROM `{t}$files` ORDER BY level",
    ),
    (
        "$table_indexes",
        "SELECT bucket, index_type, file_name, file_size, row_count, dv_ranges FROM `{t}$table_indexes`",
    ),
]


def _print_table(console: Console, title: str, table: pa.Table) -> None:
    """A result as wide as the console: side by side when it fits, one block per row when not."""
    text = render(table, title=title, width=console.width)
    console.print(text, end="", markup=False, highlight=False, soft_wrap=True)


def run_demo(catalog: Catalog, console: Console) -> None:
    """Two primary-key tables, one with deletion vectors; the same inserts, a compaction and an update."""
    warehouse = catalog.warehouse
    execute(catalog, SETUP)
    console.print(
        f"[bold]warehouse[/] {warehouse}: demo.test_mor (merge-on-read) and demo.test_dv "
        "(deletion vectors), the same writes:"
    )
    console.print(WRITES.format(t="<table>").strip())
    for name in ("test_mor", "test_dv"):
        for result in execute(catalog, WRITES.format(t=name), database="demo"):
            if result.message:
                console.print(f"  {name}: {result.message}")
    for name in ("test_mor", "test_dv"):
        console.rule(f"demo.{name}")
        for title, query in SHOW:
            (result,) = execute(catalog, query.format(t=name), database="demo")
            assert result.table is not None
            _print_table(console, f"{name}: {title}", result.table)
        console.print(catalog.open_table(f"demo.{name}").explain())
