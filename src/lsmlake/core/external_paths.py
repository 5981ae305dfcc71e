"""Where new data files go under `data-file.external-paths`: the roots, the strategy's choice, each file's URI."""

from __future__ import annotations

import posixpath
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.options.external_path_options import external_roots, external_weights
from lsmlake.core.path_guard import split_location, storage_class
from lsmlake.errors import InvalidOptionError, UnsupportedError

_ENTROPY_BITS = 20  # Paimon's EntropyInjectExternalPathProvider: 20 hash bits as 4/4/4/8 directories
_ENTROPY_DIR_LENGTH = 4
_ENTROPY_DIR_DEPTH = 3


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` as a signed int (Guava's ``Hashing.murmur3_32()``)."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed & mask
    n = len(data) // 4 * 4
    for i in range(0, n, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[n:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def entropy_dirs(file_name: str) -> str:
    """The hash directories entropy-inject puts a file under (``1001/1001/1001/10011001``)."""
    bits = format((murmur3_32(file_name.encode("utf-8")) | -0x80000000) & 0xFFFFFFFF, "032b")[-_ENTROPY_BITS:]
    span = _ENTROPY_DIR_DEPTH * _ENTROPY_DIR_LENGTH
    dirs = [bits[i : i + _ENTROPY_DIR_LENGTH] for i in range(0, span, _ENTROPY_DIR_LENGTH)]
    return "/".join([*dirs, bits[span:]] if len(bits) > span else dirs)


@dataclass
class ExternalPathChooser:
    """One writer's choice of external root per new file (Paimon's ExternalPathProvider of one bucket)."""

    strategy: str
    roots: tuple[str, ...]
    fs_roots: tuple[str, ...]
    """Each root as a path of the table's FileIO."""
    weights: tuple[int, ...] | None = None
    position: int = field(default=-1)

    def __post_init__(self) -> None:
        if self.position < 0:  # Paimon starts a round-robin provider at random, an entropy one at 0
            self.position = 0 if self.strategy == "entropy-inject" else random.randrange(len(self.roots))
        if self.strategy == "weight-robin" and (len(self.roots) < 2 or self.weights is None):
            self.strategy = "round-robin"

    @staticmethod
    def of(io: FileIO, options: CoreOptions) -> ExternalPathChooser | None:
        """The chooser of a table's writers; None when files stay under the table. Roots must be on the
        table's own storage (lsmlake writes through one FileIO)."""
        roots = external_roots(options)
        if not roots:
            return None
        storage = storage_class(io.scheme, io.local)
        fs_roots = []
        for root in roots:
            found = split_location(root, local=io.local)
            if isinstance(found, str):
                raise InvalidOptionError(f"option 'data-file.external-paths': root {root!r} is refused: {found}")
            if found[0] != storage:
                raise UnsupportedError(
                    f"option 'data-file.external-paths': root {root!r} is on {found[0]} storage, not the table's "
                    f"({storage}); lsmlake writes external files only to the table's storage"
                )
            fs_roots.append(found[1])
        strategy = options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS_STRATEGY)
        weights = external_weights(options, len(roots)) if strategy == "weight-robin" else None
        return ExternalPathChooser(strategy, roots, tuple(fs_roots), weights)

    def _next_index(self) -> int:
        if self.strategy == "weight-robin":
            assert self.weights is not None
            return random.choices(range(len(self.roots)), weights=self.weights)[0]
        self.position = (self.position + 1) % len(self.roots)
        return self.position

    def choose(self, relative_dir: str, file_name: str) -> tuple[str, str]:
        """``(URI for _EXTERNAL_PATH, path on the table's FileIO)`` of a new file of ``relative_dir``
        (``<partition>/bucket-<n>`` below the table root)."""
        i = self._next_index()
        rel = posixpath.join(relative_dir, file_name)
        if self.strategy == "entropy-inject":
            rel = posixpath.join(relative_dir, entropy_dirs(file_name), file_name)
        root_uri, root_fs = self.roots[i], self.fs_roots[i]
        return f"{root_uri.rstrip('/')}/{rel}", posixpath.join(root_fs, rel)


def located_path(directory: str, file_name: str, external: str | None, *, local: bool = True) -> str:
    """A data file's path on the table's FileIO: its external path's (a URI; ``local``: whether a path
    without a scheme is a local one), else ``directory/file_name``."""
    if not external:
        return posixpath.join(directory, file_name)
    found = split_location(external, local=local)
    if isinstance(found, str):
        raise InvalidOptionError(f"external path {external!r} of {file_name} is refused: {found}")
    return found[1]


def index_file_path(
    index_dir_file: str, directory: str | None, name: str, external: str | None, options: CoreOptions
) -> str:
    """Where an index file is: its external path's, else with `index-file-in-data-file-dir` the bucket
    ``directory`` (Java's IndexInDataFileDirPathFactory), else ``index_dir_file`` (in `index/`)."""
    if external:
        return located_path("", name, external)
    if directory is not None and options.get(CoreOptions.INDEX_FILE_IN_DATA_FILE_DIR):
        return posixpath.join(directory, name)
    return index_dir_file


@dataclass
class IndexFileLocator:
    """Where a bucket's index files (HASH, deletion vectors) go and are found: `index/`, or with
    `index-file-in-data-file-dir` the bucket's directory, under an external root when a strategy picks one
    (Java's IndexInDataFileDirPathFactory)."""

    io: FileIO
    index_dir_file: Callable[[str], str]
    """The path of a file of `index/`."""
    bucket_dir: Callable[[bytes, int], str]
    """The directory of a (partition, bucket)."""
    options: CoreOptions
    relative_to: str
    """The table root bucket directories are relative to (for the external layout)."""
    _chooser: ExternalPathChooser | None = field(default=None, init=False, repr=False)

    def path(self, partition: bytes, bucket: int, name: str, external: str | None) -> str:
        """Where an index file of the bucket named by metadata is."""
        return index_file_path(self.index_dir_file(name), self.bucket_dir(partition, bucket), name, external, self.options)

    def new(self, partition: bytes, bucket: int, name: str) -> tuple[str, str | None]:
        """A new index file's path and its external path (None: not external)."""
        if not self.options.get(CoreOptions.INDEX_FILE_IN_DATA_FILE_DIR):
            return self.index_dir_file(name), None
        directory = self.bucket_dir(partition, bucket)
        if self._chooser is None:
            self._chooser = ExternalPathChooser.of(self.io, self.options)
        if self._chooser is None:
            return posixpath.join(directory, name), None
        uri, path = self._chooser.choose(posixpath.relpath(directory, self.relative_to), name)
        return path, uri
