"""lsmlake: primary-key lakehouse tables in the Apache Paimon format, from Python."""

from __future__ import annotations

from lsmlake import errors
from lsmlake.catalog import Catalog
from lsmlake.table import Table
from lsmlake.table_writer import TableWriter

__all__ = ["Catalog", "Table", "TableWriter", "errors"]
__version__ = "0.1.0"
