"""``lsmlake.duckdb``: DuckDB scans of lsmlake tables with pushdown (see :mod:`lsmlake.integrations.duckdb`)."""

from __future__ import annotations

from lsmlake.integrations.duckdb import TableDataset, dataset, query, register

__all__ = ["TableDataset", "dataset", "query", "register"]
