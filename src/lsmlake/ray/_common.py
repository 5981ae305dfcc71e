"""What the Ray integration shares: the table a call is about, and how its storage reaches the workers.

A task on a Ray worker needs the table's files. The table's :class:`FileIO` travels with the task
when Ray can serialize it (local disk, pyarrow filesystems); an S3 FileIO whose conditional-put
client has already been used cannot, so a copy without it travels instead (workers only write data
and index files, never publish a snapshot, which is the one thing the conditional put is for). A
table given as ``(warehouse, identifier[, storage options])`` has each worker process build its own
FileIO from the warehouse URI, once.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Union

import ray
from ray import cloudpickle

from lsmlake.catalog import Catalog
from lsmlake.core.fileio import FileIO
from lsmlake.metadata.table_handle import H, TableHandle

TableSource = Union[TableHandle, tuple[str, str], tuple[str, str, Mapping[str, str]]]  # noqa: UP007 - a runtime alias
"""A table, or ``(warehouse, "db.table")``, or ``(warehouse, "db.table", storage options)``."""

_IO_CACHE: dict[tuple[str, tuple[tuple[str, str], ...]], FileIO] = {}
_IO_LOCK = threading.Lock()


@dataclass(frozen=True)
class Storage:
    """A serializable way to the table's storage: a FileIO that travels, or a warehouse to reopen."""

    io: FileIO | None = None
    warehouse: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    def get(self) -> FileIO:
        """The FileIO (rebuilt once per worker process from the warehouse URI when there is one)."""
        if self.io is not None:
            return self.io
        assert self.warehouse is not None
        key = (self.warehouse, self.options)
        with _IO_LOCK:
            io = _IO_CACHE.get(key)
            if io is None:
                io = FileIO.for_uri(self.warehouse, dict(self.options))[0]
                _IO_CACHE[key] = io
            return io


def _serializable(obj: object) -> bool:
    try:
        cloudpickle.dumps(obj)  # type: ignore[no-untyped-call]
    except Exception:
        return False
    return True


def portable_io(io: FileIO) -> FileIO:
    """``io`` if Ray can ship it, else the same filesystem without its conditional put."""
    if _serializable(io):
        return io
    stripped = FileIO(io.fs, local=io.local)
    if _serializable(stripped):
        return stripped
    raise TypeError(
        f"the table's filesystem ({type(io.fs).__name__}) cannot be sent to Ray workers; pass the table as "
        "(warehouse, 'db.table', storage_options) so that each worker opens the warehouse itself"
    )


def open_source(source: TableSource) -> tuple[TableHandle, Storage]:
    """The table (for the driver) and how workers reach its storage."""
    if isinstance(source, TableHandle):
        return source, Storage(io=portable_io(source.io))
    if isinstance(source, tuple) and len(source) in (2, 3) and all(isinstance(s, str) for s in source[:2]):
        warehouse, identifier = str(source[0]), str(source[1])
        options = dict(source[2]) if len(source) == 3 else {}
        table = Catalog(warehouse, options=options).open_table(identifier)
        pairs = tuple(sorted((str(k), str(v)) for k, v in options.items()))
        storage = Storage(warehouse=warehouse, options=pairs)
        return table, storage
    raise TypeError(
        "expected an lsmlake Table or (warehouse, 'db.table'[, storage options]), "
        f"got {type(source).__name__}"
    )


def worker_table(table: H, storage: Storage) -> H:
    """The table as workers see it: same root, schema and options, the portable FileIO."""
    return replace(table, io=storage.get())


def accepts(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` takes a parameter ``name`` (Ray's APIs gained parameters over versions)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def ensure_ray() -> None:
    """Start a local Ray (as Ray Data would) when the caller has not connected to one."""
    if not ray.is_initialized():
        ray.init(ignore_reinit_error=True)
