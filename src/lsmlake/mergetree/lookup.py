"""Vectorized lookup of keys in higher levels: find each key's live older row (to mark it deleted, merge
with its value, or -- for first-row -- just know it exists)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lsmlake.core.binary_row import serialize_row
from lsmlake.core.caches import MB, ByteLRU
from lsmlake.core.fileio import FileIO
from lsmlake.core.types import DataType
from lsmlake.mergetree.dv_maintainer import BucketDeletionVectors
from lsmlake.mergetree.interval_partition import KeyBounds
from lsmlake.mergetree.kv_layout import sort_by_key
from lsmlake.metadata.data_file import DataFileMeta

POSITION = "__position"


LOOKUP_CACHE_DEFAULT_BYTES = 256 * MB
"""Paimon's default `lookup.cache-max-memory-size`."""

KEY_CACHE: ByteLRU[pa.Table] = ByteLRU("lookup keys", LOOKUP_CACHE_DEFAULT_BYTES)
"""Data files' key columns by (FileIO, path), so repeated lookups skip re-reading files: one cache per
process shared by every table's compactions, sized by the `lookup.cache-max-memory-size` of the
compaction that last used it."""


def cached_keys(io: FileIO, path: str, names: Sequence[str], load: Callable[[], pa.Table]) -> pa.Table:
    """A data file's key columns ``names`` from :data:`KEY_CACHE`, read by ``load`` on a miss (keyed by
    the names too: a renamed key column is the same file's column under another name)."""
    return KEY_CACHE.get_or_load(key_cache_key(io, path, names), load, lambda t: t.nbytes)


def key_cache_key(io: FileIO, path: str, names: Sequence[str]) -> tuple[object, ...]:
    """The :data:`KEY_CACHE` key of a data file's key columns."""
    return (io, path, tuple(names))


def _key_range(keys: pa.Table, types: Sequence[DataType], bounds: KeyBounds) -> tuple[object, object]:
    ordered = sort_by_key(keys, keys.column_names, seq_column=None)
    first = [ordered.column(n)[0].as_py() for n in keys.column_names]
    last = [ordered.column(n)[ordered.num_rows - 1].as_py() for n in keys.column_names]
    return bounds.key(serialize_row(first, list(types))), bounds.key(serialize_row(last, list(types)))


@dataclass(frozen=True)
class Hit:
    """Keys found live in one data file: their row positions in the file and the keys themselves."""

    file: DataFileMeta
    positions: np.ndarray
    keys: pa.Table


def find_keys(
    keys: pa.Table,
    runs_above: Sequence[Sequence[DataFileMeta]],
    deletion_vectors: BucketDeletionVectors,
    *,
    key_types: Sequence[DataType],
    read_keys: Callable[[DataFileMeta], pa.Table],
) -> list[Hit]:
    """For each key, walk the runs upward (lowest level first) and report its first live occurrence.

    ``keys`` holds only key columns; ``read_keys(f)`` returns a file's key columns for every row in
    file order (deletion vectors not applied: positions must stay file positions). Nothing is marked.
    """
    names = keys.column_names
    remaining = keys.group_by(names, use_threads=False).aggregate([]) if keys.num_rows else keys
    bounds = KeyBounds(key_types)
    hits: list[Hit] = []
    for run in runs_above:
        if remaining.num_rows == 0:
            break
        lo, hi = _key_range(remaining, key_types, bounds)
        found = []
        for f in run:
            if bounds.key(f.max_key) < lo or hi < bounds.key(f.min_key):  # type: ignore[operator]
                continue
            file_keys = read_keys(f)
            n = file_keys.num_rows
            file_keys = file_keys.append_column(POSITION, pa.array(np.arange(n, dtype=np.int64)))
            keep = deletion_vectors.keep_mask(f.file_name, n)
            if not keep.all():
                file_keys = file_keys.filter(pa.array(keep))
            matched = file_keys.join(remaining, keys=names, join_type="left semi")
            if matched.num_rows:
                matched = matched.sort_by(POSITION)
                hits.append(Hit(f, matched.column(POSITION).to_numpy(), matched.select(names)))
                found.append(matched.select(names))
        if found:
            remaining = remaining.join(pa.concat_tables(found), keys=names, join_type="left anti")
    return hits


def lookup_and_mark(
    keys: pa.Table,
    runs_above: Sequence[Sequence[DataFileMeta]],
    deletion_vectors: BucketDeletionVectors,
    *,
    key_types: Sequence[DataType],
    read_keys: Callable[[DataFileMeta], pa.Table],
) -> int:
    """For each key, walk the runs upward and mark its first live hit deleted; returns rows marked."""
    marked = 0
    for hit in find_keys(keys, runs_above, deletion_vectors, key_types=key_types, read_keys=read_keys):
        deletion_vectors.add(hit.file.file_name, hit.positions)
        marked += len(hit.positions)
    return marked
