"""The decoded-metadata cache: one decode per immutable file, fresh lists, bounded by bytes, per FileIO."""

from __future__ import annotations

from pathlib import Path

from lsmlake.core.fileio import FileIO
from lsmlake.metadata.decoded_cache import DECODED_BYTES_PER_FILE_BYTE, DecodedFileCache


def _counting_cache(max_bytes: int) -> tuple[DecodedFileCache[str], list[str]]:
    decoded: list[str] = []

    def decode(data: bytes, path: str) -> list[str]:
        decoded.append(path)
        return data.decode().split(",")

    return DecodedFileCache(decode, max_bytes), decoded


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_each_file_is_decoded_once_and_callers_get_their_own_list(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))[0]
    cache, decoded = _counting_cache(1000)
    path = _file(tmp_path, "a", "x,y")
    first = cache.read(io, path)
    first.append("changed by the caller")
    assert cache.read(io, path) == ["x", "y"]
    assert decoded == [path]


def test_least_recently_used_files_are_evicted_past_the_bound(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))[0]
    cache, decoded = _counting_cache(2 * 3 * DECODED_BYTES_PER_FILE_BYTE)  # two 3-byte files
    a, b, c = (_file(tmp_path, n, "1,2") for n in "abc")
    cache.read(io, a)
    cache.read(io, b)
    cache.read(io, a)  # a is now the most recent
    cache.read(io, c)  # three files > the bound: b goes
    cache.read(io, a)
    cache.read(io, b)
    assert decoded == [a, b, c, b]


def test_another_file_io_never_sees_a_cached_copy(tmp_path: Path) -> None:
    cache, decoded = _counting_cache(1000)
    path = _file(tmp_path, "a", "x")
    one, other = FileIO.for_uri(str(tmp_path))[0], FileIO.for_uri(str(tmp_path))[0]
    cache.read(one, path)
    cache.read(other, path)
    assert decoded == [path, path]
