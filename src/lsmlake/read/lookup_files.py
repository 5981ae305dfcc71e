"""Local lookup files, as Paimon keeps them: a data file's columns decoded once into an uncompressed Arrow
file in a local temporary directory and memory-mapped, so a batch of lookups takes rows by position
without decoding the file again; `lookup.cache-max-disk-size` bounds their bytes (least recently used
files are deleted first) and `lookup.cache-file-retention` their idle time."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable

import pyarrow as pa
import pyarrow.ipc as ipc

from lsmlake.core.caches import CacheInfo, register


class LookupFiles:
    """Memory-mapped local copies of decoded data files, by key, at most ``max_bytes`` on disk, each
    deleted once unused for ``retention_ms``. The directory belongs to the process that made it: a forked
    child makes its own and leaves its parent's files alone."""

    def __init__(self, name: str, max_bytes: int, retention_ms: int = 2**62) -> None:
        self.name = name
        self.max_bytes = max_bytes
        self.retention_ms = retention_ms
        self._items: OrderedDict[Hashable, tuple[str, pa.Table, int, float]] = OrderedDict()
        """key -> (path, mapped table, bytes on disk, last use as time.monotonic()), least recent first."""
        self._bytes = 0
        self._dir: str | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        register(self)

    def _own(self) -> None:
        """Under the lock: forget what a parent process kept (its files are its own to delete)."""
        if self._pid != os.getpid():
            self._pid, self._dir = os.getpid(), None
            self._items.clear()
            self._bytes = 0

    def _new_path(self) -> str:
        with self._lock:
            self._own()
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="lsmlake-lookup-")
                weakref.finalize(self, shutil.rmtree, self._dir, True)  # removed at exit
            directory = self._dir
        handle, path = tempfile.mkstemp(prefix="lookup-", suffix=".arrow", dir=directory)
        os.close(handle)
        return path

    def get_or_build(self, key: Hashable, build: Callable[[], pa.Table]) -> pa.Table:
        """The memory-mapped table kept for ``key``, else ``build()`` written to a local file and mapped
        (returned as built, unmapped, when it alone exceeds the bound)."""
        now = time.monotonic()
        with self._lock:
            self._own()
            dropped = self._expire(now)
            hit = self._items.get(key)
            if hit is not None:
                self._items[key] = (*hit[:3], now)
                self._items.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
        _remove(dropped)
        if hit is not None:
            return hit[1]
        table = build()
        if table.nbytes > self.max_bytes:
            return table
        path = self._new_path()
        with pa.OSFile(path, "wb") as sink, ipc.new_file(sink, table.schema) as out:
            out.write_table(table)
        size = os.path.getsize(path)
        mapped = ipc.open_file(pa.memory_map(path)).read_all()  # zero-copy: pages load as rows are taken
        with self._lock:
            present = self._items.get(key)
            if present is not None:  # another thread built it meanwhile: keep theirs
                dropped = [path]
                mapped = present[1]
            else:
                self._items[key] = (path, mapped, size, now)
                self._bytes += size
                dropped = self._evict()
        _remove(dropped)
        return mapped

    def _expire(self, now: float) -> list[str]:
        """Under the lock: drop the entries unused for longer than the retention; their paths."""
        dropped = []
        while self._items:
            key, (path, _, size, used) = next(iter(self._items.items()))
            if (now - used) * 1000 <= self.retention_ms:
                break
            del self._items[key]
            self._bytes -= size
            dropped.append(path)
        return dropped

    def _evict(self) -> list[str]:
        """Under the lock: drop least recently used entries past the bound (the newest always stays)."""
        dropped = []
        while self._bytes > self.max_bytes and len(self._items) > 1:
            _, (old, _, old_size, _) = self._items.popitem(last=False)
            self._bytes -= old_size
            dropped.append(old)
        return dropped

    def resize(self, max_bytes: int, retention_ms: int | None = None) -> None:
        """A new bound (and retention), deleting at once the files that no longer fit."""
        with self._lock:
            self._own()
            self.max_bytes = max(max_bytes, 0)
            if retention_ms is not None:
                self.retention_ms = max(retention_ms, 0)
            dropped = self._evict() + self._expire(time.monotonic())
            if self._bytes > self.max_bytes:  # the newest alone is over the new bound: it goes too
                dropped += [p for p, _, _, _ in self._items.values()]
                self._items.clear()
                self._bytes = 0
        _remove(dropped)

    def clear(self) -> None:
        with self._lock:
            self._own()
            paths = [p for p, _, _, _ in self._items.values()]
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0
        _remove(paths)

    def info(self) -> CacheInfo:
        with self._lock:
            self._own()
            return CacheInfo(self.name, len(self._items), self._bytes, self.max_bytes, self.hits, self.misses)


def _remove(paths: list[str]) -> None:
    """Delete local files (a mapped table still in use keeps its pages: unlinking is safe on POSIX)."""
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            os.remove(p)
