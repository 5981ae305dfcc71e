"""DuckDB: tables DuckDB scans with projection and filter pushdown into lsmlake's planning.

DuckDB pushes a query's columns and WHERE conjuncts into scans of ``pyarrow.dataset.Dataset`` objects
as ``scanner(columns=..., filter=<pyarrow expression>)``; :class:`TableDataset` answers that call with
an lsmlake scan (planning prunes with the filter, the read applies it exactly). A plain ``Table`` is an
Arrow PyCapsule stream, which ``duckdb.sql("SELECT ... FROM table")`` reads whole, without pushdown."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.options import ReadOptions
from lsmlake.table.arrow_dataset import TableDataset, TableScanner

__all__ = ["TableDataset", "TableScanner", "dataset", "query", "register"]


def dataset(table: TableHandle, **read: Any) -> TableDataset:
    """The table as a DuckDB-scannable dataset (``read``: ``snapshot_id``, ``tag``, ``as_of_millis``):
    ``d = dataset(table); duckdb.sql("SELECT count(*) FROM d WHERE id < 10")`` pushes the filter."""
    return TableDataset(table, ReadOptions(**read))


def register(connection: Any, name: str, table: TableHandle, **read: Any) -> TableDataset:
    """Register ``table`` on ``connection`` as view ``name`` (what ``Table.to_duckdb`` does)."""
    d = dataset(table, **read)
    connection.register(name, d)
    return d


def query(connection: Any, table: TableHandle, sql: str, *, name: str = "t", **read: Any) -> pa.Table:
    """Run ``sql`` (which reads the table as ``name``) on ``connection`` with pushdown; the result as Arrow.
    The view is registered for the query only."""
    register(connection, name, table, **read)
    try:
        result = connection.sql(sql).to_arrow_table()
    finally:
        connection.unregister(name)
    assert isinstance(result, pa.Table)
    return result
