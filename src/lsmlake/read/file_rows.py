"""A data file's rows by position, for key lookups: its key columns and row groups decoded once and kept
in the byte-bounded lookup caches (`lookup.cache-max-memory-size`)."""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lsmlake.core.caches import ByteLRU
from lsmlake.core.fileio import FileIO
from lsmlake.errors import CorruptFileError
from lsmlake.format.parquet_files import column_ranges, row_group_layout
from lsmlake.mergetree.lookup import KEY_CACHE, LOOKUP_CACHE_DEFAULT_BYTES, cached_keys, key_cache_key
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.read.context import ReadContext
from lsmlake.read.file_read import (
    data_file_path,
    deletion_mask,
    file_plan,
    file_sequence,
    in_layout,
    io_for,
    read_physical,
)
from lsmlake.read.lookup_files import LookupFiles
from lsmlake.scan.split import Split

ROW_GROUPS: ByteLRU[pa.Table] = ByteLRU("lookup row groups", LOOKUP_CACHE_DEFAULT_BYTES)
"""Decoded Parquet row groups of the columns a lookup read, by (FileIO, path, group, columns)."""

LOOKUP_FILES = LookupFiles("lookup local files", 2**63 - 1)
"""Whole data files decoded for lookups, as memory-mapped local files, by (FileIO, path, columns)."""

LOCAL_FILE_GROUPS = 8
"""A lookup needing rows of more row groups of one file than this decodes the file to a local file."""


def resize_lookup_caches(memory_bytes: int, disk_bytes: int, retention_ms: int) -> None:
    """Bound the key and row-group caches by `lookup.cache-max-memory-size` each, the local lookup files
    by `lookup.cache-max-disk-size` and `lookup.cache-file-retention`."""
    KEY_CACHE.resize(memory_bytes)
    ROW_GROUPS.resize(memory_bytes)
    LOOKUP_FILES.resize(disk_bytes, retention_ms)


def file_keys(ctx: ReadContext, split: Split, index: int) -> pa.Table:
    """The file's key columns (``ctx.key_names``, table layout) for every row in file order, deletion
    vector not applied (positions stay file positions), one chunk per column; cached."""
    f = split.files[index]

    def load() -> pa.Table:
        return read_all_rows(ctx, split, index, ctx.key_names, system=False).combine_chunks()

    return cached_keys(ctx.io, data_file_path(split, f), ctx.key_names, load)


@dataclass(frozen=True)
class KeyBlocks:
    """Where a Parquet file's integer key column lies: the row groups' smallest and largest keys (ascending
    and not overlapping) and first rows, to read only the key block of the group that may hold a key."""

    io: FileIO
    path: str
    meta: pq.FileMetaData
    file_size: int
    column: tuple[str]
    starts: np.ndarray[Any, Any]
    low: np.ndarray[Any, Any]
    high: np.ndarray[Any, Any]

    @cached_property
    def low_list(self) -> list[int]:
        return [int(x) for x in self.low]

    @cached_property
    def high_list(self) -> list[int]:
        return [int(x) for x in self.high]

    @cached_property
    def starts_list(self) -> list[int]:
        return [int(x) for x in self.starts]

    def block(self, group: int) -> np.ndarray[Any, Any]:
        """The key column of row group ``group``, decoded once (kept in :data:`ROW_GROUPS`)."""

        def load() -> pa.Table:
            return _row_group(self.io, self.path, self.meta, self.file_size, group, self.column)

        return np.asarray(
            ROW_GROUPS.get_or_load((self.io, self.path, group, self.column), load, _weight)
            .column(0)
            .to_numpy()
        )


def key_blocks(ctx: ReadContext, split: Split, index: int) -> KeyBlocks | None:
    """The file's :class:`KeyBlocks`; None when the file is not Parquet, its key is not one integer column
    of the table's name and type, or its row groups lack integer statistics in key order."""
    f = split.files[index]
    if len(ctx.key_names) != 1:
        return None
    target = file_plan(ctx, f, ctx.key_names, None, False, True).targets[0]
    io, path = io_for(ctx, data_file_path(split, f), bool(f.external_path), f"data file {f.file_name}")
    if not target.same or target.source is None or posixpath.splitext(path)[1].lower() != ".parquet":
        return None
    meta, starts = row_group_layout(io, path, f.file_size)
    bounds = column_ranges(io, path, target.source, f.file_size).typed_bounds
    if bounds is None or bounds[0] is not int or not bool((np.diff(bounds[2]) >= 0).all()):
        return None
    return KeyBlocks(io, path, meta, f.file_size, (target.source,), starts, bounds[1], bounds[2])


def search_key_blocks(
    ctx: ReadContext, split: Split, index: int, values: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """(indices into ``values``, file positions) of the integer key ``values`` found in the file, reading
    only the key column of the row groups whose statistics may hold them (each such block kept in
    :data:`ROW_GROUPS`). None when that does not apply: the whole file's keys are cached already, there
    are no :func:`key_blocks`, or a key may run across two row groups."""
    f = split.files[index]
    if (
        KEY_CACHE.peek(key_cache_key(ctx.io, data_file_path(split, f), ctx.key_names))
        or len(ctx.key_names) != 1
    ):
        return None
    blocks = key_blocks(ctx, split, index)
    if blocks is None:
        return None
    low, high = blocks.low, blocks.high
    groups = np.searchsorted(high, values, side="left")  # the first group whose largest key is >= value
    inside = groups < len(high)
    inside[inside] &= low[groups[inside]] <= values[inside]
    after = groups + 1
    spill = inside & (after < len(low))
    if (values[spill] == low[after[spill]]).any():
        return None  # a key whose rows continue into the next group: the whole-file search handles it
    which, positions = [], []
    for g in np.unique(groups[inside]).tolist():
        block = blocks.block(g)
        asked = np.flatnonzero(inside & (groups == g))
        left = np.searchsorted(block, values[asked], side="left")
        hit = (left < len(block)) & (block[np.minimum(left, len(block) - 1)] == values[asked])
        which.append(asked[hit])
        positions.append(left[hit] + blocks.starts[g])
    if not which:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(which), np.concatenate(positions)


def deleted_mask(ctx: ReadContext, split: Split, index: int) -> Any:
    """The file's deletion vector as a read-only boolean mask over its rows (None: no row deleted)."""
    return deletion_mask(ctx, split.deletion_files[index], split.files[index])


def rows_at(
    ctx: ReadContext, split: Split, index: int, names: Sequence[str], positions: np.ndarray[Any, Any]
) -> pa.Table:
    """The file's rows at ascending ``positions`` as ``names`` plus ``_VALUE_KIND`` and
    ``_SEQUENCE_NUMBER`` (table layout; no deletion vector: the caller chose live positions). Parquet
    files decode only the row groups holding them, each kept in :data:`ROW_GROUPS`."""
    f = split.files[index]
    plan = file_plan(ctx, f, names, None, True, True)
    io, path = io_for(ctx, data_file_path(split, f), bool(f.external_path), f"data file {f.file_name}")
    if posixpath.splitext(path)[1].lower() != ".parquet":
        whole = read_all_rows(ctx, split, index, names, system=True)
        return whole.take(pa.array(positions))
    meta, starts = row_group_layout(io, path, f.file_size)
    if starts[-1] != f.row_count:
        raise CorruptFileError(f"data file {path} has {starts[-1]} rows, its manifest says {f.row_count}")
    groups = np.searchsorted(starts, positions, side="right") - 1
    columns = tuple(plan.file_columns)
    wanted = np.unique(groups).tolist()
    if len(wanted) > LOCAL_FILE_GROUPS:  # a batch over much of the file: decode it once, to a local file
        whole = LOOKUP_FILES.get_or_build((io, path, columns), lambda: _physical(io, path, f, list(columns)))
        return in_layout(plan, whole.take(pa.array(positions)), None, file_sequence(ctx, f))
    parts = []
    for g in wanted:

        def load(group: int = g) -> pa.Table:
            return _row_group(io, path, meta, f.file_size, group, columns)

        decoded = ROW_GROUPS.get_or_load((io, path, g, columns), load, _weight)
        local = positions[groups == g] - starts[g]
        if int(local[-1]) - int(local[0]) == len(local) - 1:  # consecutive rows (one, say): a slice, no copy
            parts.append(decoded.slice(int(local[0]), len(local)))
        else:
            parts.append(decoded.take(pa.array(local)))
    raw = pa.concat_tables(parts) if len(parts) != 1 else parts[0]
    return in_layout(plan, raw, None, file_sequence(ctx, f))


@dataclass(frozen=True)
class RowSource:
    """Where one Parquet file's rows of some columns are read from, by position, one row group at a time."""

    plan: Any
    io: FileIO
    path: str
    meta: pq.FileMetaData
    file_size: int
    starts: list[int]
    columns: tuple[str, ...]

    def row(self, position: int) -> pa.Table:
        """The row at file ``position`` as :func:`rows_at` returns it (its row group kept in :data:`ROW_GROUPS`)."""
        group = bisect.bisect_right(self.starts, position) - 1

        def load() -> pa.Table:
            return _row_group(self.io, self.path, self.meta, self.file_size, group, self.columns)

        decoded = ROW_GROUPS.get_or_load((self.io, self.path, group, self.columns), load, _weight)
        return in_layout(self.plan, decoded.slice(position - self.starts[group], 1), None)


def row_source(ctx: ReadContext, split: Split, index: int, names: Sequence[str]) -> RowSource | None:
    """The file's :class:`RowSource` for ``names`` (with the system columns); None unless it is Parquet."""
    f = split.files[index]
    plan = file_plan(ctx, f, names, None, True, True)
    io, path = io_for(ctx, data_file_path(split, f), bool(f.external_path), f"data file {f.file_name}")
    if posixpath.splitext(path)[1].lower() != ".parquet":
        return None
    meta, starts = row_group_layout(io, path, f.file_size)
    if starts[-1] != f.row_count:
        raise CorruptFileError(f"data file {path} has {starts[-1]} rows, its manifest says {f.row_count}")
    return RowSource(plan, io, path, meta, f.file_size, starts.tolist(), tuple(plan.file_columns))


def _weight(table: pa.Table) -> int:
    return int(table.nbytes)


def _row_group(
    io: FileIO, path: str, meta: pq.FileMetaData, size: int, group: int, columns: tuple[str, ...]
) -> pa.Table:
    try:
        with io.open_input_file(path, size) as f:
            reader = pq.ParquetFile(f, metadata=meta)
            return reader.read_row_group(group, columns=list(columns), use_threads=False)
    except FileNotFoundError as e:
        raise io.missing(path, "data file") from e
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(f"cannot read data file {path}: {e}") from e


def read_all_rows(
    ctx: ReadContext, split: Split, index: int, names: Sequence[str], *, system: bool
) -> pa.Table:
    """Every row of the file (deletion vector not applied) as ``names`` in table layout."""
    f = split.files[index]
    plan = file_plan(ctx, f, names, None, system, True)
    io, path = io_for(ctx, data_file_path(split, f), bool(f.external_path), f"data file {f.file_name}")
    sequence = file_sequence(ctx, f) if system else None
    return in_layout(plan, _physical(io, path, f, plan.file_columns), None, sequence)


def _physical(io: FileIO, path: str, f: DataFileMeta, columns: list[str]) -> pa.Table:
    """Every row of ``columns`` of the file as stored."""
    try:
        return next(read_physical(io, path, columns, None, None, f, False, None))
    except FileNotFoundError as e:
        raise io.missing(path, "data file") from e
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(f"cannot read data file {path}: {e}") from e
