"""A bounded, thread-safe cache of decoded immutable metadata files (manifests, manifest lists, index
manifests): their names are unique, so a decoded copy stays valid for the life of the process."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from lsmlake.core.fileio import FileIO

T = TypeVar("T")


class DecodedFileCache(Generic[T]):
    """Decoded items of files, keyed by (FileIO, path), evicted least recently used past ``max_items``."""

    def __init__(
        self, decode: Callable[[bytes, str], list[T]], max_items: int, *, kind: str = "file"
    ) -> None:
        """``kind`` names the files in errors (``manifest``, ``manifest list``, ...)."""
        self._decode, self._max_items, self._kind = decode, max_items, kind
        self._entries: OrderedDict[tuple[int, str], tuple[FileIO, tuple[T, ...]]] = OrderedDict()
        self._items = 0
        self._lock = threading.Lock()

    def read(self, io: FileIO, path: str) -> list[T]:
        """The file's decoded items (a fresh list: callers may change it)."""
        key = (id(io), path)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] is io:
                self._entries.move_to_end(key)
                return list(hit[1])
        try:
            data = io.read_bytes(path)
        except FileNotFoundError as e:
            raise io.missing(path, self._kind) from e
        items = tuple(self._decode(data, path))
        with self._lock:
            old = self._entries.pop(key, None)
            self._items -= len(old[1]) if old is not None else 0
            self._entries[key] = (io, items)
            self._items += max(len(items), 1)
            while self._items > self._max_items and len(self._entries) > 1:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._items -= max(len(dropped), 1)
        return list(items)
