"""Every process-wide cache in one registry: thread-safe LRUs bounded by bytes, cleared by ``clear_caches``."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

V = TypeVar("V")
MB = 1024 * 1024


class Clearable(Protocol):
    """What the registry needs of a cache: a name, a way to empty it, and what it holds."""

    name: str

    def clear(self) -> None: ...

    def info(self) -> CacheInfo: ...


@dataclass(frozen=True)
class CacheInfo:
    """A cache's contents and traffic: entries, bytes held, its byte bound, hits and misses."""

    name: str
    entries: int
    nbytes: int
    max_bytes: int | None
    hits: int
    misses: int


_registry: dict[str, Clearable] = {}
_registry_lock = threading.Lock()


def register(cache: Clearable) -> None:
    """List ``cache`` so that ``clear_caches`` empties it; names are unique."""
    with _registry_lock:
        if cache.name in _registry and _registry[cache.name] is not cache:
            raise ValueError(f"a cache named {cache.name!r} is already registered")
        _registry[cache.name] = cache


def registered() -> list[CacheInfo]:
    """Every registered cache's contents, by name (a cache appears once its module is imported)."""
    with _registry_lock:
        caches = sorted(_registry.values(), key=lambda c: c.name)
    return [c.info() for c in caches]


def clear_caches() -> None:
    """Empty every process-wide cache (decoded manifests, Parquet footers, lookup keys, ...)."""
    with _registry_lock:
        caches = list(_registry.values())
    for cache in caches:
        cache.clear()


class ByteLRU(Generic[V]):
    """A thread-safe map evicting its least recently used entries once they weigh over ``max_bytes``.

    Keys of file contents are ``(io, path)``: a FileIO compares by identity, and the key holds it, so
    two FileIOs (two stores) never share an entry and an id is never reused while an entry lives.
    A value heavier than the whole bound is returned but not kept. Loads run outside the lock (two
    threads may load the same key once each; the second result is dropped)."""

    def __init__(self, name: str, max_bytes: int, *, register_it: bool = True) -> None:
        if max_bytes < 0:
            raise ValueError(f"cache {name}: max_bytes must be >= 0, got {max_bytes}")
        self.name = name
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        if register_it:
            register(self)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> V | None:
        """The cached value (now the most recently used), or None."""
        hit = self._lookup(key)
        return None if hit is None else hit[0]

    def _lookup(self, key: Hashable) -> tuple[V, int] | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return hit

    def peek(self, key: Hashable) -> bool:
        """Whether ``key`` is cached (no effect on recency or the hit counts)."""
        with self._lock:
            return key in self._items

    def put(self, key: Hashable, value: V, nbytes: int) -> None:
        """Keep ``value`` (weighing ``nbytes``), evicting the least recently used past the bound."""
        nbytes = max(int(nbytes), 1)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if nbytes > self.max_bytes:
                return
            self._items[key] = (value, nbytes)
            self._bytes += nbytes
            self._evict()

    def get_or_load(self, key: Hashable, load: Callable[[], V], weigh: Callable[[V], int]) -> V:
        """The cached value, else ``load()`` kept with weight ``weigh(value)`` (None values too)."""
        hit = self._lookup(key)
        if hit is not None:
            return hit[0]
        value = load()
        with self._lock:
            present = self._items.get(key)
        if present is None:
            self.put(key, value, weigh(value))
        return value

    def pop(self, key: Hashable) -> None:
        """Forget one entry (e.g. a file found changed)."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]

    def resize(self, max_bytes: int) -> None:
        """A new bound, evicting at once what no longer fits."""
        with self._lock:
            self.max_bytes = max(max_bytes, 0)
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self.name, len(self._items), self._bytes, self.max_bytes, self.hits, self.misses)

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._items:
            _, (_, dropped) = self._items.popitem(last=False)
            self._bytes -= dropped


class FunctionCache:
    """A registry entry for a ``functools.lru_cache`` over a pure function of small values (parsed
    filter text, parsed Avro schemas): bounded by count, holding no file contents and no FileIO."""

    def __init__(self, name: str, function: Any) -> None:
        self.name = name
        self._function = function
        register(self)

    def clear(self) -> None:
        self._function.cache_clear()

    def info(self) -> CacheInfo:
        i = self._function.cache_info()
        return CacheInfo(self.name, i.currsize, 0, None, i.hits, i.misses)
