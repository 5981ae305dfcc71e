"""Changelog files (`changelog-<uuid>-<n>.<fmt>`): key-value files holding row kinds, written per bucket."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.format.data_file_writer import FILE_SOURCE_APPEND, DataFileWriter
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, to_kv_table
from lsmlake.metadata.data_file import DataFileMeta

# `changelog-file.*` options override the data-file ones for changelog files
_OVERRIDES = {
    CoreOptions.CHANGELOG_FILE_FORMAT.key: CoreOptions.FILE_FORMAT.key,
    CoreOptions.CHANGELOG_FILE_COMPRESSION.key: CoreOptions.FILE_COMPRESSION.key,
    CoreOptions.CHANGELOG_FILE_STATS_MODE.key: CoreOptions.METADATA_STATS_MODE.key,
}


def changelog_file_prefix(options: CoreOptions) -> str:
    return options.get(CoreOptions.CHANGELOG_FILE_PREFIX)


# the per-level option a `changelog-file.*` override also wins over (Paimon: the changelog setting, when set,
# else the level's, else the table's)
_PER_LEVEL = {
    CoreOptions.FILE_FORMAT.key: CoreOptions.FILE_FORMAT_PER_LEVEL.key,
    CoreOptions.FILE_COMPRESSION.key: CoreOptions.FILE_COMPRESSION_PER_LEVEL.key,
    CoreOptions.METADATA_STATS_MODE.key: CoreOptions.METADATA_STATS_MODE_PER_LEVEL.key,
}


def changelog_options(options: CoreOptions) -> CoreOptions:
    """The options changelog files are written with (format, compression and stats mode may differ)."""
    overrides = {target: options.raw[key] for key, target in _OVERRIDES.items() if options.raw.get(key)}
    if not overrides:
        return options
    dropped = tuple(_PER_LEVEL[target] for target in overrides)
    kept = {k: v for k, v in options.raw.items() if not any(k == d or k.startswith(d + ".") for d in dropped)}
    return CoreOptions.of({**kept, **overrides}, primary_key_table=options.primary_key_table)


def changelog_file_writer(
    io: FileIO, paths: TablePaths, schema: TableSchema, options: CoreOptions, directory: str
) -> DataFileWriter:
    """A writer of changelog files into one bucket directory."""
    return DataFileWriter(
        io, paths, schema, changelog_options(options), directory, file_prefix=changelog_file_prefix(options)
    )


def write_changelog(
    io: FileIO,
    paths: TablePaths,
    schema: TableSchema,
    options: CoreOptions,
    directory: str,
    kv: pa.Table,
    *,
    level: int,
) -> list[DataFileMeta]:
    """Write key-sorted rows already in key-value layout as changelog files at ``level``.

    Paimon marks changelog files APPEND whatever produced them (compaction included)."""
    writer = changelog_file_writer(io, paths, schema, options, directory)
    return writer.write(kv, level=level, file_source=FILE_SOURCE_APPEND)


def to_changelog_kv(rows: pa.Table, kinds: np.ndarray, schema: TableSchema) -> pa.Table:
    """Changelog rows (table columns + ``_SEQUENCE_NUMBER``) and their kinds as a key-value table."""
    return to_kv_table(
        rows.select(schema.field_names), kinds, rows.column(SEQUENCE_NUMBER).to_numpy(), schema
    )
