"""What a data file written for a level uses: its format, compression and stats modes (Paimon's per-level options)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsmlake.core.options import CoreOptions
from lsmlake.format.column_stats import column_stats_modes


@dataclass(frozen=True)
class FileSettings:
    """The format, compression and table-wide stats mode of one file."""

    format: str
    compression: str
    stats_mode: str

    def column_modes(self, options: CoreOptions, names: Sequence[str]) -> list[str]:
        """The stats mode of each of ``names`` (``fields.<name>.stats-mode`` first, key columns truncate(128))."""
        return column_stats_modes(
            names,
            self.stats_mode,
            options.field_stats_mode,
            options.get(CoreOptions.METADATA_STATS_KEEP_FIRST_N_COLUMNS),
            avro=self.format == "avro",
        )


def file_settings(options: CoreOptions, level: int, *, primary_key_table: bool) -> FileSettings:
    """The settings of a file written for ``level``: a primary-key table's ``*.per.level`` entry for the
    level, else the table's ``file.format`` / ``file.compression`` / ``metadata.stats-mode`` (append tables,
    as in Paimon, ignore the per-level options). Changelog writers pass options whose ``changelog-file.*``
    overrides have replaced both (see ``changelog_options``)."""
    fmt, codec, mode = options.file_format, options.file_compression, options.get(CoreOptions.METADATA_STATS_MODE)
    if primary_key_table:
        fmt = options.per_level(CoreOptions.FILE_FORMAT_PER_LEVEL).get(level, fmt)
        codec = options.per_level(CoreOptions.FILE_COMPRESSION_PER_LEVEL).get(level, codec)
        mode = options.per_level(CoreOptions.METADATA_STATS_MODE_PER_LEVEL).get(level, mode)
    codec = codec.strip().lower()
    return FileSettings(fmt.strip().lower(), "none" if codec == "uncompressed" else codec, mode.strip().lower())
