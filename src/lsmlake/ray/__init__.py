"""lsmlake on Ray: distributed reads, writes and compaction through Ray Data (the ``ray`` extra).

- :func:`read_table`: a Ray Dataset whose read tasks are lsmlake splits (filters and projection
  pushed down, Ray's own ``filter``/``select_columns`` too where they translate exactly).
- :func:`write_table`: a dataset written with one writer per (partition, bucket), committed once.
- :func:`compact_table` (also ``table.compact(executor="ray")``): buckets compacted as Ray tasks,
  one COMPACT commit.

A table is given as an :class:`lsmlake.Table`, or as ``(warehouse, "db.table"[, storage options])``
so that each worker opens the warehouse itself. Only this package imports ray.
"""

from __future__ import annotations

try:
    import ray
    import ray.data  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "lsmlake.ray needs Ray Data, which the 'ray' extra installs: pip install '.[ray]' in an lsmlake "
        "checkout (or pip install 'ray[data]>=2.9')"
    ) from e

from lsmlake.errors import RayWriteError
from lsmlake.ray._common import TableSource
from lsmlake.ray.compact import compact_table_ray as compact_table
from lsmlake.ray.read import LsmlakeDatasource, read_table
from lsmlake.ray.write import write_table

__all__ = ["LsmlakeDatasource", "RayWriteError", "TableSource", "compact_table", "read_table", "write_table"]
