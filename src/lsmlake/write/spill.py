"""Sorted runs of a write buffer spilled to a local temporary directory (`write-buffer-spillable`)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.ipc as ipc

_IPC_OPTIONS = ipc.IpcWriteOptions(compression="lz4")  # fast; local disk is cheaper than the CPU


@dataclass(frozen=True)
class SpilledRun:
    """One run on local disk (sorted parts of a buffer): in-memory size (the cost of reading it back), file size."""

    path: str
    nbytes: int
    disk_bytes: int
    num_rows: int


class SpillDirectory:
    """A writer's spill files, in one temporary directory, at most ``max_disk`` bytes in all.

    ``spill`` returns None when a run would exceed ``max_disk`` (`write-buffer-spill.max-disk-size`):
    the caller then flushes to a data file instead, as Paimon does."""

    def __init__(self, max_disk: int) -> None:
        self.max_disk = max_disk
        self.disk_bytes = 0
        self._dir: str | None = None
        self._lock = threading.Lock()
        self._count = 0

    def _path(self) -> str:
        with self._lock:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="lsmlake-spill-")
                weakref.finalize(self, shutil.rmtree, self._dir, True)  # an abandoned writer's runs too
            self._count += 1
            return os.path.join(self._dir, f"run-{self._count}.arrow")

    def spill(self, rows: pa.Table) -> SpilledRun | None:
        """Write ``rows`` (one buffer's parts) to a local file; None when the disk budget is spent."""
        if self.disk_bytes >= self.max_disk:
            return None  # full: the caller writes a data file
        path = self._path()
        with pa.OSFile(path, "wb") as sink, ipc.new_file(sink, rows.schema, options=_IPC_OPTIONS) as out:
            out.write_table(rows)
        size = os.path.getsize(path)
        with self._lock:
            if self.disk_bytes + size > self.max_disk:
                os.remove(path)
                return None
            self.disk_bytes += size
        return SpilledRun(path, rows.nbytes, size, rows.num_rows)

    def read(self, run: SpilledRun) -> pa.Table:
        """A run read back into memory; its file is removed (each run is read once)."""
        with pa.OSFile(run.path, "rb") as source:
            table = ipc.open_file(source).read_all()
        self.forget(run)
        return table

    def forget(self, run: SpilledRun) -> None:
        with self._lock:
            if os.path.exists(run.path):
                os.remove(run.path)
                self.disk_bytes -= run.disk_bytes

    def close(self) -> None:
        """Remove the directory and every run still in it."""
        with self._lock:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
                self.disk_bytes = 0
