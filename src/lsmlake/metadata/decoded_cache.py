"""A bounded, thread-safe cache of decoded immutable metadata files (manifests, manifest lists, index
manifests): their names are unique, so a decoded copy stays valid for the life of the process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from lsmlake.core.caches import ByteLRU
from lsmlake.core.fileio import FileIO

T = TypeVar("T")

DECODED_BYTES_PER_FILE_BYTE = 4
"""Decoded entries weigh about this many times their (compressed Avro) file: the weight charged."""


class DecodedFileCache(Generic[T]):
    """Decoded items of files, keyed by (FileIO, path), the least recently used evicted once the
    files' estimated decoded size passes ``max_bytes``; registered as ``name`` in ``core.caches``."""

    def __init__(
        self,
        decode: Callable[[bytes, str], list[T]],
        max_bytes: int,
        *,
        kind: str = "file",
        name: str | None = None,
    ) -> None:
        """``kind`` names the files in errors (``manifest``, ``manifest list``, ...); a cache without
        ``name`` is not registered (tests)."""
        self._decode, self._kind = decode, kind
        self.lru: ByteLRU[tuple[T, ...]] = ByteLRU(name or kind, max_bytes, register_it=name is not None)
        self.written: ByteLRU[bytes] = ByteLRU(f"{name or kind} written", max_bytes // 4, register_it=False)
        """Bytes of files this process wrote, decoded when first read: no GET for them."""

    def remember(self, io: FileIO, path: str, data: bytes) -> None:
        """``data`` was just written to ``path`` (a new, immutable file): a later read decodes it."""
        self.written.put((io, path), data, len(data))

    def read(self, io: FileIO, path: str) -> list[T]:
        """The file's decoded items (a fresh list: callers may change it)."""
        key = (io, path)
        hit = self.lru.get(key)
        if hit is not None:
            return list(hit)
        data = self.written.get(key)
        if data is None:
            try:
                data = io.read_bytes(path)
            except FileNotFoundError as e:
                raise io.missing(path, self._kind) from e
        items = tuple(self._decode(data, path))
        self.lru.put(key, items, len(data) * DECODED_BYTES_PER_FILE_BYTE)
        self.written.pop(key)
        return list(items)
