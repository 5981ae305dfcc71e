"""``lsmlake.polars``: Polars lazy frames over lsmlake tables (see :mod:`lsmlake.integrations.polars`)."""

from __future__ import annotations

from lsmlake.integrations.polars import PolarsSource, scan_table, translate

__all__ = ["PolarsSource", "scan_table", "translate"]
