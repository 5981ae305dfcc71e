"""The cache registry: byte-bounded thread-safe LRUs, keyed by FileIO identity, cleared in one call."""

from __future__ import annotations

import threading
from pathlib import Path

import lsmlake
import lsmlake.table  # loads the read and write paths, which register their caches
from lsmlake.core import caches
from lsmlake.core.caches import ByteLRU, clear_caches
from lsmlake.core.fileio import FileIO
from lsmlake.metadata.decoded_cache import DecodedFileCache


def test_the_byte_bound_holds_and_the_least_recently_used_go_first() -> None:
    lru: ByteLRU[str] = ByteLRU("test bound", 100, register_it=False)
    lru.put("a", "A", 40)
    lru.put("b", "B", 40)
    assert lru.get("a") == "A"  # a is now the most recent
    lru.put("c", "C", 40)  # 120 > 100: b goes
    assert lru.nbytes <= 100
    assert (lru.get("a"), lru.get("b"), lru.get("c")) == ("A", None, "C")
    lru.put("huge", "H", 101)  # heavier than the whole bound: not kept, nothing evicted
    assert lru.get("huge") is None and len(lru) == 2
    lru.resize(40)
    assert lru.nbytes <= 40 and lru.get("c") == "C"


def test_get_or_load_loads_once_and_keeps_none_values() -> None:
    lru: ByteLRU[int | None] = ByteLRU("test load", 100, register_it=False)
    loads: list[str] = []

    def load() -> int | None:
        loads.append("x")
        return None

    assert lru.get_or_load("k", load, lambda v: 8) is None
    assert lru.get_or_load("k", load, lambda v: 8) is None
    assert loads == ["x"]
    assert lru.info().hits == 1 and lru.info().misses == 1


def test_clear_caches_empties_every_registered_cache() -> None:
    lru: ByteLRU[str] = ByteLRU("test registered", 100)
    try:
        lru.put("a", "A", 10)
        assert "test registered" in [i.name for i in caches.registered()]
        lsmlake.clear_caches()
        assert len(lru) == 0 and lru.nbytes == 0
    finally:
        caches._registry.pop("test registered")


def test_the_package_caches_are_listed_in_one_place() -> None:
    names = {i.name for i in caches.registered()}
    expected = {
        "decoded manifests",
        "decoded manifest lists",
        "decoded index manifests",
        "parquet footers",
        "lookup keys",
        "decoded file statistics",
        "deletion vector index files",
        "deletion vector masks",
    }
    assert expected <= names
    assert all(i.max_bytes is not None for i in caches.registered() if i.name in expected)


def test_two_file_ios_with_the_same_path_never_share_an_entry(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("one")
    one, other = FileIO.for_uri(str(tmp_path))[0], FileIO.for_uri(str(tmp_path))[0]
    decoded: list[str] = []

    def decode(data: bytes, path: str) -> list[str]:
        decoded.append(path)
        return [data.decode()]

    cache = DecodedFileCache(decode, 1000)
    path = str(tmp_path / "f")
    assert cache.read(one, path) == cache.read(other, path) == ["one"]
    assert cache.read(one, path) == ["one"]
    assert len(decoded) == 2  # one decode per FileIO, then a hit


def test_a_registered_decoded_cache_is_cleared(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("v")
    io = FileIO.for_uri(str(tmp_path))[0]
    decoded: list[str] = []

    def decode(data: bytes, path: str) -> list[int]:
        decoded.append(path)
        return [1]

    cache = DecodedFileCache(decode, 1000, name="test decoded")
    try:
        cache.read(io, str(tmp_path / "f"))
        clear_caches()
        cache.read(io, str(tmp_path / "f"))
        assert len(decoded) == 2
    finally:
        caches._registry.pop("test decoded")


def test_concurrent_access_keeps_the_bound_and_the_byte_count_exact() -> None:
    lru: ByteLRU[int] = ByteLRU("test threads", 1000, register_it=False)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(2000):
                key = (seed * 7 + i) % 300
                value = lru.get_or_load(key, lambda: key, lambda v: 10 + v % 5)  # noqa: B023 - used at once
                assert value == key
                if i % 97 == 0:
                    lru.pop(key)
        except BaseException as e:  # reported to the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert lru.nbytes <= 1000
    assert lru.nbytes == sum(w for _, w in lru._items.values())
