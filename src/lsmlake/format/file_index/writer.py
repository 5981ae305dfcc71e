"""Building one data file's file indexes as it is written: embedded in its manifest entry or a ``.index`` file."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.options.config_option import parse_memory_size
from lsmlake.core.options.file_index_options import file_index_columns
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError
from lsmlake.format.file_index.bitmap import BITMAP, bitmap_supported, write_bitmap
from lsmlake.format.file_index.bloom import (
    BLOOM_FILTER,
    DEFAULT_FPP,
    DEFAULT_ITEMS,
    bloom_size,
    bloom_supported,
    hash_values,
    write_bloom,
)
from lsmlake.format.file_index.bsi import BSI, bsi_supported, write_bsi
from lsmlake.format.file_index.container import INDEX_SUFFIX, write_container
from lsmlake.format.file_index.keys import array_keys, distinct_live
from lsmlake.format.file_index.range_bitmap import (
    CHUNK_SIZE,
    RANGE_BITMAP,
    default_chunk_size,
    range_bitmap_supported,
    write_range_bitmap,
)

_SUPPORTED = {
    "bloom-filter": bloom_supported,
    "bitmap": bitmap_supported,
    "bsi": bsi_supported,
    RANGE_BITMAP: range_bitmap_supported,
}


@dataclass(frozen=True)
class FileIndexSpec:
    """The indexes to write per column (``{column: {option type: settings}}``) and the embedding threshold."""

    columns: Mapping[str, Mapping[str, Mapping[str, str]]]
    types: Mapping[str, DataType]
    threshold: int
    table_names: Mapping[str, str] = field(default_factory=dict)
    """For a file of an older schema: the current name of each indexed column named otherwise there."""

    @staticmethod
    def of(schema: TableSchema, options: CoreOptions) -> FileIndexSpec | None:
        """The table's spec, or None when it asks for no index; InvalidOptionError for a bad column."""
        columns = file_index_columns(options.raw)
        if not columns:
            return None
        types = {f.name: f.type for f in schema.fields}
        for column, kinds in columns.items():
            t = types.get(column)
            if t is None:
                raise InvalidOptionError(f"file index column {column!r} is not a column of the table")
            for kind, settings in kinds.items():
                if not _SUPPORTED[kind](t):
                    raise InvalidOptionError(
                        f"file index {kind!r} does not support column {column!r} of type {t}"
                    )
                if kind == "bloom-filter":
                    bloom_size(_items(settings, column), _fpp(settings, column))  # validates both
                if kind == "bitmap" and settings.get("version", "2").strip() != "2":
                    raise InvalidOptionError(
                        f"file index bitmap of {column!r}: lsmlake writes version 2 only"
                    )
                if kind == RANGE_BITMAP:
                    _chunk_size(settings, column, t)  # validates it
        return FileIndexSpec(columns, types, options.get(CoreOptions.FILE_INDEX_IN_MANIFEST_THRESHOLD))


def _items(settings: Mapping[str, str], column: str) -> int:
    try:
        return int(settings.get("items", DEFAULT_ITEMS))
    except ValueError:
        raise InvalidOptionError(f"file index bloom-filter of {column!r}: items must be an integer") from None


def _fpp(settings: Mapping[str, str], column: str) -> float:
    try:
        return float(settings.get("fpp", DEFAULT_FPP))
    except ValueError:
        raise InvalidOptionError(f"file index bloom-filter of {column!r}: fpp must be a number") from None


def _chunk_size(settings: Mapping[str, str], column: str, t: DataType) -> int:
    key = f"file-index.{RANGE_BITMAP}.{column}.{CHUNK_SIZE}"
    size = parse_memory_size(key, settings.get(CHUNK_SIZE, default_chunk_size(t)))
    if size > 2**31 - 1:
        raise InvalidOptionError(f"option {key!r}: a chunk of {size} bytes is larger than Paimon allows")
    return size


class FileIndexBuilder:
    """Collects the indexed columns of one data file's rows; ``finish`` writes the index."""

    def __init__(self, spec: FileIndexSpec) -> None:
        self.spec = spec
        self._chunks: dict[str, list[pa.ChunkedArray]] = {c: [] for c in spec.columns}

    def add(self, rows: pa.Table) -> None:
        for column, chunks in self._chunks.items():
            chunks.append(rows.column(column))

    def encode(self) -> bytes:
        """The serialized indexes (a file-index container) of the rows added so far."""
        indexes: dict[str, dict[str, bytes | None]] = {}
        for column, kinds in self.spec.columns.items():
            t = self.spec.types[column]
            parts = [c for ch in self._chunks[column] for c in ch.chunks]
            arr = pa.chunked_array(parts, type=parts[0].type) if parts else pa.chunked_array([], pa.null())
            keys, nulls = array_keys(arr, t)
            out = indexes.setdefault(column, {})
            for kind, settings in kinds.items():
                if kind == "bloom-filter":
                    live = distinct_live(keys, nulls)
                    hashes = hash_values(live, t)
                    out[BLOOM_FILTER] = write_bloom(hashes, _items(settings, column), _fpp(settings, column))
                elif kind == "bitmap":
                    out[BITMAP] = write_bitmap(keys, nulls, t)
                elif kind == RANGE_BITMAP:
                    out[RANGE_BITMAP] = write_range_bitmap(keys, nulls, t, _chunk_size(settings, column, t))
                elif not (~nulls & (np.asarray(keys) == np.iinfo(np.int64).min)).any():  # |MIN| overflows
                    out[BSI] = write_bsi(np.asarray(keys), nulls)
        return write_container(indexes)

    def finish(self, io: FileIO, data_path: str) -> tuple[bytes | None, tuple[str, ...]]:
        """(embedded index bytes, extra files): a ``<data file>.index`` beside the file above the threshold."""
        data = self.encode()
        if len(data) <= self.spec.threshold:
            return data, ()
        path = data_path + INDEX_SUFFIX
        io.write_bytes(path, data)
        return None, (posixpath.basename(path),)
