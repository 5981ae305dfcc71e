"""Local lookup files, as Paimon keeps them: a data file's columns decoded once into an uncompressed Arrow
file in a local temporary directory and memory-mapped, so a batch of lookups takes rows by position
without decoding the file again; `lookup.cache-max-disk-size` bounds their bytes (least recently used
files are deleted first)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable

import pyarrow as pa
import pyarrow.ipc as ipc

from lsmlake.core.caches import CacheInfo, register


class LookupFiles:
    """Memory-mapped local copies of decoded data files, by key, at most ``max_bytes`` on disk."""

    def __init__(self, name: str, max_bytes: int) -> None:
        self.name = name
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[str, pa.Table, int]] = OrderedDict()
        self._bytes = 0
        self._dir: str | None = None
        self._count = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        register(self)

    def _new_path(self) -> str:
        with self._lock:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="lsmlake-lookup-")
                weakref.finalize(self, shutil.rmtree, self._dir, True)  # removed at exit
            self._count += 1
            return os.path.join(self._dir, f"lookup-{self._count}.arrow")

    def get_or_build(self, key: Hashable, build: Callable[[], pa.Table]) -> pa.Table:
        """The memory-mapped table kept for ``key``, else ``build()`` written to a local file and mapped
        (returned as built, unmapped, when it alone exceeds the bound)."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return hit[1]
            self.misses += 1
        table = build()
        if table.nbytes > self.max_bytes:
            return table
        path = self._new_path()
        with pa.OSFile(path, "wb") as sink, ipc.new_file(sink, table.schema) as out:
            out.write_table(table)
        size = os.path.getsize(path)
        mapped = ipc.open_file(pa.memory_map(path)).read_all()  # zero-copy: pages load as rows are taken
        dropped: list[str] = []
        with self._lock:
            present = self._items.get(key)
            if present is not None:  # another thread built it meanwhile: keep theirs
                dropped.append(path)
                mapped = present[1]
                size = 0
            else:
                self._items[key] = (path, mapped, size)
            self._bytes += size
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, (old, _, old_size) = self._items.popitem(last=False)
                self._bytes -= old_size
                dropped.append(old)
        for old in dropped:  # a mapped table still in use keeps its pages: unlinking is safe on POSIX
            os.remove(old)
        return mapped

    def resize(self, max_bytes: int) -> None:
        self.max_bytes = max(max_bytes, 0)

    def clear(self) -> None:
        with self._lock:
            paths = [p for p, _, _ in self._items.values()]
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0
        for p in paths:
            if os.path.exists(p):
                os.remove(p)

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self.name, len(self._items), self._bytes, self.max_bytes, self.hits, self.misses)
