"""Write sorted Arrow rows as Paimon data files (Parquet, Avro or ORC), rolling at the target size."""

from __future__ import annotations

import contextlib
import datetime as dt
import posixpath
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from lsmlake.core import clock
from lsmlake.core.binary_row import EMPTY_ROW, serialize_row
from lsmlake.core.external_paths import ExternalPathChooser
from lsmlake.core.fileio import FileIO, OutputFile
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataField
from lsmlake.errors import UnsupportedError
from lsmlake.format.avro_schema import avro_codec, data_file_schema
from lsmlake.format.avro_write import AvroFileSink
from lsmlake.format.column_codecs import parquet_compression
from lsmlake.format.column_stats import StatsAccumulator
from lsmlake.format.file_index.writer import FileIndexBuilder, FileIndexSpec
from lsmlake.format.write_settings import FileSettings, file_settings
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, is_retract, key_fields, kv_fields
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.stats import EMPTY_STATS

# Formats written a chunk at a time (rolling to a new file at the target size); ORC is written whole.
STREAMED_FORMATS = ("parquet", "avro")
FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1
# Rows per Parquet row group. Readers prune by row group (pyarrow has no page-index filtering), so a
# key-range read of a sorted file decodes about one row group per file, each column costing about
# 0.08 ms + 0.01 ms per 1k rows. Measured on 1M rows (bench/) against 16k: a 0.1% key-range read is
# 1.4-1.9x faster, full reads take ~10% (merge-on-read) to ~20% (deletion vectors) more CPU, and a
# write ~13% more time (every row group starts its own column chunks and zstd frames).
ROW_GROUP_ROWS = 4 * 1024
# Rows handed to the Parquet writer (and to the statistics) at once; a file rolls over between them
# once it reaches the target size.
WRITE_PIECE_ROWS = 64 * 1024
_NESTED = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT"})
# pyarrow's ORC codec names of the file.compression values
_ORC_CODECS = {
    "zstd": "ZSTD",
    "snappy": "SNAPPY",
    "lz4": "LZ4",
    "gzip": "ZLIB",
    "zlib": "ZLIB",
    "none": "UNCOMPRESSED",
    "uncompressed": "UNCOMPRESSED",
}


# Rows sampled to decide whether a string column repeats enough for a dictionary to pay off.
_DICTIONARY_SAMPLE_ROWS = 4096
_DICTIONARY_MAX_DISTINCT_RATIO = 0.5


def _dictionary_columns(rows: pa.Table) -> list[str]:
    """String and binary columns whose values repeat (judged on an evenly spaced sample).

    A dictionary on near-unique values is abandoned by the Parquet writer after its first page
    anyway; building it costs write time, and the mixed encoding reads slower than plain pages.
    Numbers are never dictionary-encoded: on unique numbers it only costs time.
    """
    names = [f.name for f in rows.schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type)]
    if not names or rows.num_rows == 0:
        return names
    step = max(rows.num_rows // _DICTIONARY_SAMPLE_ROWS, 1)
    sample = rows.select(names).take(pa.array(np.arange(0, rows.num_rows, step)))
    limit = _DICTIONARY_MAX_DISTINCT_RATIO * sample.num_rows
    return [n for n in names if pc.count_distinct(sample.column(n), mode="all").as_py() <= limit]


def local_wall_clock_millis() -> int:
    """Paimon's _CREATION_TIME: the local wall-clock time encoded as if it were UTC (the clock of
    ``core.clock``, which partition expiry by update time compares it with)."""
    now = clock.local_now()
    return int(now.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


_HADOOP_EXTENSIONS = {
    "none": "",
    "gzip": "gz.",
    "bzip2": "bz2.",
    "deflate": "deflate.",
    "snappy": "snappy.",
    "lz4": "lz4.",
    "zstd": "zst.",
}


def compression_suffix(compression: str) -> str:
    """What ``file.suffix.include.compression`` puts before the format in a data file's name: Hadoop's file
    extension of the codec (``zst.`` for zstd; none for none), else the codec's name (Paimon's
    DataFilePathFactory); readers find the format after the last dot either way."""
    codec = compression.strip().lower()
    if not codec:
        return ""
    return _HADOOP_EXTENSIONS.get(codec, f"{compression}.")


@dataclass(frozen=True)
class DataFileWriter:
    """Writes the files of one (partition, bucket) directory for one table schema."""

    io: FileIO
    paths: TablePaths
    schema: TableSchema
    options: CoreOptions
    bucket_dir: str
    file_prefix: str | None = None  # None: `data-file.prefix`; changelog writers pass `changelog-file.prefix`
    external: ExternalPathChooser | None = field(default=None, init=False, compare=False, repr=False)
    """Chooses the `data-file.external-paths` root of each new file (None: files go in ``bucket_dir``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "external", ExternalPathChooser.of(self.io, self.options))

    @property
    def primary_key_table(self) -> bool:
        return bool(self.schema.primary_keys)

    def write(
        self,
        rows: pa.Table,
        *,
        level: int = 0,
        file_source: int = FILE_SOURCE_APPEND,
        first_sequence: int = 0,
    ) -> list[DataFileMeta]:
        """Write ``rows`` (sorted, in file layout) into one or more files; return their metadata.

        ``first_sequence`` numbers the rows of append tables, which carry no sequence column.
        """
        if rows.num_rows == 0:
            return []
        fmt = self.settings(level).format
        if fmt in STREAMED_FORMATS:
            writer = self.rolling(level=level, file_source=file_source, first_sequence=first_sequence)
            writer.write(rows)
            return writer.close()
        if fmt == "orc":
            return [self._write_orc(rows, level, file_source, first_sequence)]
        raise UnsupportedError(
            f"table format {fmt!r} for level {level} (file.format / file.format.per.level): lsmlake writes "
            "parquet, avro and orc data files"
        )

    def settings(self, level: int) -> FileSettings:
        """The format, compression and stats mode of a file written for ``level``."""
        return file_settings(self.options, level, primary_key_table=self.primary_key_table)

    def _new_path(self, extension: str) -> tuple[str, str, str | None]:
        """A new file's name, its path on the FileIO and its external path (None: in ``bucket_dir``)."""
        prefix = self.options.data_file_prefix if self.file_prefix is None else self.file_prefix
        if self.options.get(CoreOptions.FILE_SUFFIX_INCLUDE_COMPRESSION):
            extension = compression_suffix(self.options.file_compression) + extension
        name = self.paths.new_data_file_name(prefix=prefix, extension=extension)
        if self.external is None:
            return name, posixpath.join(self.bucket_dir, name), None
        relative = posixpath.relpath(self.bucket_dir, self.paths.data_root)
        uri, path = self.external.choose(relative, name)
        return name, path, uri

    def streams(self, level: int) -> bool:
        """Whether files written for ``level`` are written chunk by chunk (see ``rolling``): Parquet and Avro."""
        return self.settings(level).format in STREAMED_FORMATS

    @property
    def file_fields(self) -> list[DataField]:
        """The columns of the files written: the key-value layout for primary-key tables."""
        return kv_fields(self.schema) if self.primary_key_table else list(self.schema.fields)

    def rolling(
        self, *, level: int = 0, file_source: int = FILE_SOURCE_APPEND, first_sequence: int = 0
    ) -> RollingWriter:
        """A Parquet or Avro writer for a stream of sorted tables, rolling to a new file at ``target-file-size``."""
        if not self.streams(level):
            fmt = self.settings(level).format
            raise UnsupportedError(f"file.format={fmt!r} (level {level}): streaming writes need parquet or avro")
        return RollingWriter(self, level, file_source, first_sequence)

    def _compression_level(self, codec: str) -> int | None:
        return self.options.zstd_level if codec == "zstd" else None

    def _write_orc(self, rows: pa.Table, level: int, file_source: int, first_sequence: int) -> DataFileMeta:
        name, path, external = self._new_path("orc")
        compression = _ORC_CODECS.get(self.settings(level).compression, "ZSTD")
        with self.io.open_output(path) as sink:
            orc.write_table(rows, sink, compression=compression)
        builder = FileMetaBuilder(self, first_sequence, self.settings(level))
        builder.add(rows)
        return builder.finish(name, path, level, file_source, external=external)


class _FileSink(Protocol):
    """One open data file taking sorted chunks."""

    def write(self, rows: pa.Table) -> None: ...

    def close(self) -> None: ...


class _ParquetSink:
    def __init__(self, writer: pq.ParquetWriter) -> None:
        self.writer = writer

    def write(self, rows: pa.Table) -> None:
        self.writer.write_table(rows, row_group_size=ROW_GROUP_ROWS)

    def close(self) -> None:
        self.writer.close()


class FileMetaBuilder:
    """Accumulates a data file's manifest metadata chunk by chunk: counts, keys, sequence range, stats."""

    def __init__(self, writer: DataFileWriter, first_sequence: int, settings: FileSettings) -> None:
        schema = writer.schema
        self.writer = writer
        self.rows = 0
        self.first_sequence = first_sequence
        kfields = key_fields(schema) if writer.primary_key_table else []
        self.key_names = [f.name for f in kfields]
        self.key_types = [f.type for f in kfields]
        # one pass over the file's columns in Paimon's order (keys, sequence and kind, values): it counts
        # columns for metadata.stats-keep-first-n-columns
        system = [SEQUENCE_NUMBER, VALUE_KIND] if self.key_names else []
        modes = settings.column_modes(writer.options, [*self.key_names, *system, *schema.field_names])
        value_modes = modes[len(self.key_names) + len(system) :]
        if settings.format == "parquet":
            # Java takes Parquet stats from the footer, which has none for a nested column: it has no stats
            value_modes = ["none" if f.type.root in _NESTED else m for f, m in zip(schema.fields, value_modes, strict=True)]
        # Avro files have no footer: Paimon collects their stats record by record (Java's compareTo order)
        per_record = settings.format == "avro"
        self.keys = StatsAccumulator(
            self.key_names, self.key_types, mode=modes[: len(self.key_names)], per_record=per_record
        )
        self.values = StatsAccumulator(
            schema.field_names, [f.type for f in schema.fields], mode=value_modes, per_record=per_record
        )
        self.dense = writer.options.get(CoreOptions.METADATA_STATS_DENSE_STORE)
        self.first_key: list[object] | None = None
        self.last_key: list[object] = []
        self.min_seq: int | None = None
        self.max_seq: int | None = None
        self.deletes = 0
        spec = FileIndexSpec.of(writer.schema, writer.options) if writer.file_prefix is None else None
        self.index = None if spec is None else FileIndexBuilder(spec)

    def add(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        self.values.add(rows)
        if self.index is not None:
            self.index.add(rows)
        if self.key_names:
            self.keys.add(rows)
            if self.first_key is None:
                self.first_key = [rows.column(n)[0].as_py() for n in self.key_names]
            self.last_key = [rows.column(n)[rows.num_rows - 1].as_py() for n in self.key_names]
            mm = pc.min_max(rows.column(SEQUENCE_NUMBER))
            lo, hi = int(mm["min"].as_py()), int(mm["max"].as_py())
            self.min_seq = lo if self.min_seq is None else min(self.min_seq, lo)
            self.max_seq = hi if self.max_seq is None else max(self.max_seq, hi)
            self.deletes += int(np.count_nonzero(is_retract(rows.column(VALUE_KIND).to_numpy())))
        self.rows += rows.num_rows

    def finish(
        self,
        name: str,
        path: str,
        level: int,
        file_source: int,
        size: int | None = None,
        *,
        external: str | None = None,
    ) -> DataFileMeta:
        """The file's metadata; ``size``: its bytes when the writer knows them (else looked up);
        ``external``: its `_EXTERNAL_PATH` when it was written under an external root."""
        if self.key_names:
            assert self.first_key is not None and self.min_seq is not None and self.max_seq is not None
            min_key = serialize_row(self.first_key, self.key_types)
            max_key = serialize_row(self.last_key, self.key_types)
            key_stats = self.keys.result()
            min_seq, max_seq = self.min_seq, self.max_seq
        else:
            min_key = max_key = EMPTY_ROW
            key_stats = EMPTY_STATS
            min_seq, max_seq = self.first_sequence, self.first_sequence + self.rows - 1
        embedded, extra = (None, ()) if self.index is None else self.index.finish(self.writer.io, path)
        value_stats, value_stats_cols = self.values.dense_result() if self.dense else (self.values.result(), None)
        return DataFileMeta(
            file_name=name,
            file_size=self.writer.io.file_size(path) if size is None else size,
            row_count=self.rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=min_seq,
            max_sequence_number=max_seq,
            schema_id=self.writer.schema.id,
            level=level,
            extra_files=extra,
            creation_time_millis=local_wall_clock_millis(),
            delete_row_count=self.deletes,
            embedded_index=embedded,
            file_source=file_source,
            value_stats_cols=value_stats_cols,
            external_path=external,
        )


class RollingWriter:
    """Writes sorted chunks into Parquet or Avro files of about ``target-file-size``; ``close()`` lists them."""

    def __init__(self, writer: DataFileWriter, level: int, file_source: int, first_sequence: int) -> None:
        self.writer, self.level, self.file_source = writer, level, file_source
        self.next_sequence = first_sequence
        self.target = writer.options.target_file_size
        self.settings = writer.settings(level)
        FileIndexSpec.of(writer.schema, writer.options)  # a bad file-index option fails before any file
        self.avro: tuple[str, int | None] | None = None
        if self.settings.format == "avro":  # so do a codec or a column name Avro does not have
            data_file_schema(writer.file_fields)
            self.avro = avro_codec(
                compression=self.settings.compression,
                avro_codec_option=writer.options.get(CoreOptions.AVRO_CODEC),
                zstd_level=writer.options.zstd_level,
            )
        self.metas: list[DataFileMeta] = []
        self._open: tuple[str, str, OutputFile, _FileSink, FileMetaBuilder] | None = None
        self._external: dict[str, str] = {}  # external path of each file started outside the bucket directory
        self._paths: list[str] = []  # every file started, and each finished one's extra files

    def write(self, rows: pa.Table) -> None:
        for start in range(0, rows.num_rows, WRITE_PIECE_ROWS):
            chunk = rows.slice(start, WRITE_PIECE_ROWS)
            if self._open is None:
                self._open = self._start(chunk)
            _, _, out, sink, builder = self._open
            sink.write(chunk)
            builder.add(chunk)
            self.next_sequence += chunk.num_rows
            if out.stream.tell() >= self.target:
                self._finish()

    def _start(self, first: pa.Table) -> tuple[str, str, OutputFile, _FileSink, FileMetaBuilder]:
        """Open the next file; its encodings are chosen from its ``first`` rows."""
        w = self.writer
        name, path, external = w._new_path(self.settings.format)
        if external is not None:
            self._external[name] = external
        self._paths.append(path)
        out = w.io.create_output(path)
        if self.avro is not None:
            avro_name, avro_level = self.avro
            avro = AvroFileSink(out.stream, w.file_fields, codec=avro_name, level=avro_level)
            return name, path, out, avro, FileMetaBuilder(w, self.next_sequence, self.settings)
        codec = self.settings.compression
        compression, level = parquet_compression(first, codec, w._compression_level(codec))
        pw = pq.ParquetWriter(
            out.stream,
            first.schema,
            compression=compression,
            compression_level=level,
            store_decimal_as_integer=True,
            use_dictionary=_dictionary_columns(first),
            write_statistics=True,
            store_schema=False,
        )
        return name, path, out, _ParquetSink(pw), FileMetaBuilder(w, self.next_sequence, self.settings)

    def _finish(self) -> None:
        assert self._open is not None
        name, path, out, sink, builder = self._open
        self._open = None
        try:
            sink.close()
        except BaseException:
            out.abort()
            raise
        out.close()  # durable (fsynced) before its metadata goes to a commit message
        meta = builder.finish(name, path, self.level, self.file_source, out.size, external=self._external.get(name))
        self._paths += [posixpath.join(posixpath.dirname(path), x) for x in meta.extra_files]
        self.metas.append(meta)

    def close(self) -> list[DataFileMeta]:
        if self._open is not None:
            self._finish()
        return self.metas

    def abort(self) -> list[str]:
        """Close without metadata; the paths of every file started (for the caller to delete)."""
        if self._open is not None:
            _, _, out, sink, _ = self._open
            self._open = None
            with contextlib.suppress(OSError):
                sink.close()
            out.abort()
        return list(self._paths)
