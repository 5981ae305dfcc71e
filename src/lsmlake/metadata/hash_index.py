"""HASH index files (`index/index-*`, type `HASH`): the key hashes one dynamic bucket holds (§7.4)."""

from __future__ import annotations

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
    io: FileIO, paths: TablePaths, meta: IndexFileMeta, guard: PathGuard | None = None
) -> Hashes:
    """The hashes of one HASH index file, checked against the count its manifest entry records; an
    external path must lie under the table or the roots ``guard`` allows (none when not given)."""
    guard = guard or PathGuard.of(io, paths.root, {})
    path = guard.resolve(
        meta.external_path, paths.index_file(meta.file_name), source=f"HASH index {meta.file_name}"
    )
    hashes = decode_hash_index(io.read_bytes(path), name=path)
    if len(hashes) != meta.row_count:
        raise CorruptFileError(
            f"HASH index {path} holds {len(hashes)} hashes, its index manifest entry says {meta.row_count}"
        )
    return hashes


def write_hash_index(io: FileIO, paths: TablePaths, hashes: Hashes) -> IndexFileMeta:
    """Write a new HASH index file holding ``hashes``; returns its meta for the index manifest."""
    data = encode_hash_index(hashes)
    name = paths.new_index_file_name()
    io.write_bytes(paths.index_file(name), data)
    return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes))
