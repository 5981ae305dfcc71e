"""lsmlake: primary-key lakehouse tables in the Apache Paimon format, from Python."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from lsmlake import errors

if TYPE_CHECKING:
    from lsmlake.catalog import Catalog
    from lsmlake.commit.publish import CommitResult
    from lsmlake.core.caches import clear_caches
    from lsmlake.table import Table
    from lsmlake.table.writer import TableWriter

__all__ = ["Catalog", "CommitResult", "Table", "TableWriter", "clear_caches", "errors"]
__version__ = "0.1.0"

# The public classes load on first use, so that `import lsmlake.errors` or `lsmlake --help` does not pay
# for pyarrow, pandas and the table layer.
_LAZY = {
    "Catalog": "lsmlake.catalog",
    "CommitResult": "lsmlake.commit.publish",
    "Table": "lsmlake.table",
    "TableWriter": "lsmlake.table.writer",
    "clear_caches": "lsmlake.core.caches",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'lsmlake' has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
