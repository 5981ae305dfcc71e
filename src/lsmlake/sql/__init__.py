"""SQL on lsmlake tables: Flink/Spark-style DDL, DML, queries (run by DuckDB over Arrow) and procedures."""

from __future__ import annotations

from lsmlake.errors import SqlError
from lsmlake.sql.common import Result
from lsmlake.sql.session import Session, execute

__all__ = ["Result", "Session", "SqlError", "execute"]
