"""Write sorted Arrow rows as Paimon data files (Parquet or ORC), rolling at the target size."""

from __future__ import annotations

import datetime as dt
import posixpath
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from lsmlake.core.binary_row import EMPTY_ROW, serialize_row
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.errors import UnsupportedError
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, is_retract, key_fields
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.stats import EMPTY_STATS
from lsmlake.operations.stats import collect_stats

FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1
# Rows per Parquet row group; a file rolls over between row groups once it reaches the target size.
ROW_GROUP_ROWS = 64 * 1024


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Dictionary-encode only string and binary columns: on unique numbers it only costs time."""
    return [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type)]


def local_wall_clock_millis() -> int:
    """Paimon's _CREATION_TIME: the local wall-clock time encoded as if it were UTC."""
    now = dt.datetime.now()
    return int(now.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


@dataclass(frozen=True)
class DataFileWriter:
    """Writes the files of one (partition, bucket) directory for one table schema."""

    io: FileIO
    paths: TablePaths
    schema: TableSchema
    options: CoreOptions
    bucket_dir: str

    @property
    def primary_key_table(self) -> bool:
        return bool(self.schema.primary_keys)

    def write(
        self, rows: pa.Table, *, level: int = 0, file_source: int = FILE_SOURCE_APPEND, first_sequence: int = 0
    ) -> list[DataFileMeta]:
        """Write ``rows`` (sorted, in file layout) into one or more files; return their metadata.

        ``first_sequence`` numbers the rows of append tables, which carry no sequence column.
        """
        if rows.num_rows == 0:
            return []
        fmt = self.options.file_format
        if fmt == "parquet":
            return self._write_parquet(rows, level, file_source, first_sequence)
        if fmt == "orc":
            return [self._write_orc(rows, level, file_source, first_sequence)]
        raise UnsupportedError(f"file.format={fmt!r}: lsmlake writes parquet and orc data files")

    def _new_path(self, extension: str) -> tuple[str, str]:
        name = self.paths.new_data_file_name(prefix=self.options.data_file_prefix, extension=extension)
        return name, posixpath.join(self.bucket_dir, name)

    def _write_parquet(
        self, rows: pa.Table, level: int, file_source: int, first_sequence: int
    ) -> list[DataFileMeta]:
        target = self.options.target_file_size
        metas: list[DataFileMeta] = []
        start = 0
        while start < rows.num_rows:
            name, path = self._new_path("parquet")
            with self.io.open_output(path) as sink:
                writer = pq.ParquetWriter(
                    sink, rows.schema, compression=self.options.file_compression,
                    compression_level=self._compression_level(), store_decimal_as_integer=True,
                    use_dictionary=_dictionary_columns(rows.schema), write_statistics=True, store_schema=False,
                )
                end = start
                while end < rows.num_rows:
                    chunk = rows.slice(end, ROW_GROUP_ROWS)
                    writer.write_table(chunk, row_group_size=ROW_GROUP_ROWS)
                    end += chunk.num_rows
                    if sink.tell() >= target:
                        break
                writer.close()
            metas.append(
                self._meta(name, path, rows.slice(start, end - start), level, file_source, first_sequence + start)
            )
            start = end
        return metas

    def _compression_level(self) -> int | None:
        return self.options.zstd_level if self.options.file_compression == "zstd" else None

    def _write_orc(self, rows: pa.Table, level: int, file_source: int, first_sequence: int) -> DataFileMeta:
        name, path = self._new_path("orc")
        compression = {"zstd": "ZSTD", "snappy": "SNAPPY", "lz4": "LZ4", "none": "UNCOMPRESSED"}.get(
            self.options.file_compression, "ZSTD"
        )
        with self.io.open_output(path) as sink:
            orc.write_table(rows, sink, compression=compression)
        return self._meta(name, path, rows, level, file_source, first_sequence)

    def _meta(
        self, name: str, path: str, rows: pa.Table, level: int, file_source: int, first_sequence: int
    ) -> DataFileMeta:
        schema = self.schema
        value_types = [f.type for f in schema.fields]
        value_stats = collect_stats(
            rows, schema.field_names, value_types, mode=self.options.get("metadata.stats-mode") or "truncate(16)"
        )
        if self.primary_key_table:
            kfields = key_fields(schema)
            knames = [f.name for f in kfields]
            ktypes = [f.type for f in kfields]
            first = [rows.column(n)[0].as_py() for n in knames]
            last = [rows.column(n)[rows.num_rows - 1].as_py() for n in knames]
            min_key, max_key = serialize_row(first, ktypes), serialize_row(last, ktypes)
            key_stats = collect_stats(rows, knames, ktypes, mode="full")
            seq = rows.column(SEQUENCE_NUMBER)
            mm = pc.min_max(seq)
            min_seq, max_seq = int(mm["min"].as_py()), int(mm["max"].as_py())
            kinds = rows.column(VALUE_KIND).to_numpy()
            delete_rows = int(np.count_nonzero(is_retract(kinds)))
        else:
            min_key = max_key = EMPTY_ROW
            key_stats = EMPTY_STATS
            min_seq, max_seq = first_sequence, first_sequence + rows.num_rows - 1
            delete_rows = 0
        return DataFileMeta(
            file_name=name,
            file_size=self.io.file_size(path),
            row_count=rows.num_rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=min_seq,
            max_sequence_number=max_seq,
            schema_id=schema.id,
            level=level,
            extra_files=(),
            creation_time_millis=local_wall_clock_millis(),
            delete_row_count=delete_rows,
            embedded_index=None,
            file_source=file_source,
            value_stats_cols=None,
            external_path=None,
        )
