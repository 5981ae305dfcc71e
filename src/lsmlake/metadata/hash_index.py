"""HASH index files (`index/index-*`, type `HASH`): the key hashes one dynamic bucket holds (§7.4)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import PathGuard
from lsmlake.core.paths import TablePaths
from lsmlake.errors import CorruptFileError
from lsmlake.metadata.index_manifest import HASH_INDEX, IndexFileMeta

Hashes = npt.NDArray[np.int32]


def encode_hash_index(hashes: Hashes) -> bytes:
    """A plain sequence of big-endian int32 values (Java's ``IntFileUtils``)."""
    return np.ascontiguousarray(hashes, dtype=">i4").tobytes()


def decode_hash_index(data: bytes, *, name: str = "<hash index>") -> Hashes:
    """The int32 hashes of a HASH index file, in file order."""
    if len(data) % 4:
        raise CorruptFileError(f"HASH index {name} has {len(data)} bytes, not a multiple of 4")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


def read_hash_index(
    io: FileIO, paths: TablePaths, meta: IndexFileMeta, guard: PathGuard | None = None, where: str | None = None
) -> Hashes:
    """The hashes of one HASH index file (at ``where`` unless external; default: in `index/`), checked
    against the count its manifest entry records; an external path must lie under the table or the roots
    ``guard`` allows (none when not given)."""
    guard = guard or PathGuard.of(io, paths.root, {})
    path = guard.resolve(
        meta.external_path, where or paths.index_file(meta.file_name), source=f"HASH index {meta.file_name}"
    )
    hashes = decode_hash_index(io.read_bytes(path), name=path)
    if len(hashes) != meta.row_count:
        raise CorruptFileError(
            f"HASH index {path} holds {len(hashes)} hashes, its index manifest entry says {meta.row_count}"
        )
    return hashes


def write_hash_index(
    io: FileIO,
    paths: TablePaths,
    hashes: Hashes,
    location: Callable[[str], tuple[str, str | None]] | None = None,
) -> tuple[IndexFileMeta, str]:
    """Write a new HASH index file holding ``hashes`` (``location``: its path and external path from its
    name; default `index/`); returns its meta for the index manifest and its path."""
    data = encode_hash_index(hashes)
    name = paths.new_index_file_name()
    path, external = (paths.index_file(name), None) if location is None else location(name)
    io.write_bytes(path, data)
    return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes), external_path=external), path
