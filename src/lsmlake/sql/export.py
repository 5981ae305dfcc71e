"""Query results to files: ``COPY (query) TO 'file.parquet' | 'file.csv'``, streamed batch by batch with
Arrow's Parquet and CSV writers (the command line's ``-o csv`` / ``-o parquet`` use the same writers)."""

from __future__ import annotations

import csv
import io
import json
import os
import uuid
from collections.abc import Iterable
from typing import BinaryIO

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq

from lsmlake.core.sql_lexer import Cursor, Statement, Token, rewrite_for_sqlglot
from lsmlake.errors import SqlError
from lsmlake.sql.common import Result
from lsmlake.sql.context import SqlContext
from lsmlake.sql.query import QueryEngine, parse_query

FILE_FORMATS = {"parquet": (".parquet", ".pq"), "csv": (".csv",)}
_PARQUET_CODECS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")


# --------------------------------------------------------------------------- writers


def _text_cells(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Values CSV cannot hold as they are, as text: nested values as JSON, bytes as hex (NULL stays null)."""

    def text(value: object) -> str | None:
        if value is None:
            return None
        if isinstance(value, bytes):
            return value.hex()
        return json.dumps(value, ensure_ascii=False, default=str)

    return pa.array([text(v) for v in column.to_pylist()], pa.string())


def _needs_text(t: pa.DataType) -> bool:
    kinds = (pa.types.is_nested, pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary)
    return any(bool(kind(t)) for kind in kinds)


def csv_ready(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with the columns Arrow's CSV writer cannot write (nested, binary) turned into text."""
    if not any(_needs_text(f.type) for f in batch.schema):
        return batch
    columns = [_text_cells(c) if _needs_text(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def csv_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of :func:`csv_ready` batches."""
    return pa.schema([pa.field(f.name, pa.string()) if _needs_text(f.type) else f for f in schema])


def write_csv(batches: Iterable[pa.RecordBatch], schema: pa.Schema, sink: BinaryIO | pa.NativeFile) -> int:
    """Write batches as CSV: a header (names quoted only where needed), then the rows with strings
    quoted (so an empty string is ``""`` and NULL an empty cell); returns the rows."""
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(schema.names)
    sink.write(header.getvalue().encode())
    rows = 0
    options = pa_csv.WriteOptions(include_header=False)
    with pa_csv.CSVWriter(sink, csv_schema(schema), write_options=options) as writer:
        for batch in batches:
            writer.write_batch(csv_ready(batch))
            rows += batch.num_rows
    return rows


def write_parquet(
    batches: Iterable[pa.RecordBatch], schema: pa.Schema, sink: BinaryIO | pa.NativeFile, compression: str
) -> int:
    """Write batches as one Parquet file (a row group per about a million rows); returns the rows."""
    rows = 0
    with pq.ParquetWriter(sink, schema, compression=compression) as writer:
        for batch in batches:
            writer.write_batch(batch, row_group_size=1 << 20)
            rows += batch.num_rows
    return rows


def format_of(path: str, given: str | None = None) -> str:
    """The file format ``given`` (FORMAT option) or, without one, the one the file's extension names."""
    if given is not None:
        if given.lower() not in FILE_FORMATS:
            raise SqlError(f"COPY: unknown FORMAT {given!r}; expected one of {', '.join(FILE_FORMATS)}")
        return given.lower()
    lowered = path.lower()
    for name, extensions in FILE_FORMATS.items():
        if lowered.endswith(extensions):
            return name
    raise SqlError(
        f"COPY: cannot tell the format of {path!r}: name it .parquet or .csv, or give (FORMAT ...)"
    )


def write_file(reader: pa.RecordBatchReader, path: str, fmt: str, *, compression: str = "zstd") -> int:
    """Stream ``reader`` into the file ``path`` (a local path or a pyarrow filesystem URI); returns the
    rows. A local file appears complete or not at all: it is written under a temporary name first."""
    if "://" in path:
        fs, target = pa_fs.FileSystem.from_uri(path)
        with fs.open_output_stream(target) as sink:
            return _write(reader, sink, fmt, compression)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise SqlError(f"COPY: directory {directory!r} does not exist")
    temporary = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "wb") as sink:
            rows = _write(reader, sink, fmt, compression)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return rows


def _write(reader: pa.RecordBatchReader, sink: BinaryIO | pa.NativeFile, fmt: str, compression: str) -> int:
    if fmt == "parquet":
        return write_parquet(reader, reader.schema, sink, compression)
    return write_csv(reader, reader.schema, sink)


# --------------------------------------------------------------------------- COPY


def _options(tokens: list[Token]) -> dict[str, str]:
    """``FORMAT parquet, COMPRESSION 'zstd'`` (commas optional, values as words or strings)."""
    words = [t for t in tokens if not (t.kind == "op" and t.value in (",", "="))]
    if len(words) % 2 or any(not w.is_name for w in words[::2]):
        raise SqlError("COPY options are KEY value pairs, e.g. (FORMAT parquet, COMPRESSION zstd)")
    return {k.value.upper(): v.value for k, v in zip(words[::2], words[1::2], strict=True)}


def _query_text(stmt: Statement, cur: Cursor) -> tuple[str, dict[str, dict[str, str]]]:
    """The query COPY reads: ``(query)``, or a table name (all its rows)."""
    token = cur.peek()
    if token is not None and token.kind == "op" and token.value == "(":
        inner = tuple(cur.group())
        if not inner:
            raise cur.error("COPY needs a query in parentheses")
        rewritten = rewrite_for_sqlglot(stmt, inner)
        return rewritten.text, rewritten.hints
    parts = cur.qualified("a query in parentheses or a table name")
    name = ".".join("`" + p.replace("`", "``") + "`" for p in parts)
    return f"SELECT * FROM {name}", {}


def copy(ctx: SqlContext, stmt: Statement) -> Result:
    """``COPY (query) TO 'path' [(FORMAT parquet|csv [, COMPRESSION codec])]``: the rows into one file."""
    cur = Cursor(stmt, 1)
    text, hints = _query_text(stmt, cur)
    cur.expect("TO")
    path = cur.string("the file name as a string, e.g. 'out.parquet'")
    cur.accept("WITH")
    nxt = cur.peek()
    options = _options(cur.group()) if nxt is not None and nxt.kind == "op" and nxt.value == "(" else {}
    cur.end()
    unknown = set(options) - {"FORMAT", "COMPRESSION"}
    if unknown:
        raise SqlError(f"COPY: unknown option(s) {sorted(unknown)}; known: FORMAT, COMPRESSION")
    fmt = format_of(path, options.get("FORMAT"))
    compression = options.get("COMPRESSION", "zstd").lower()
    if fmt != "parquet" and "COMPRESSION" in options:
        raise SqlError("COPY: COMPRESSION applies to Parquet files only")
    if compression not in _PARQUET_CODECS:
        raise SqlError(f"COPY: unknown COMPRESSION {compression!r}; one of {', '.join(_PARQUET_CODECS)}")
    reader = QueryEngine(ctx, hints).stream(parse_query(text))
    try:
        rows = write_file(reader, path, fmt, compression=compression)
    finally:
        reader.close()
    return Result("copy", stmt.text, message=f"copied {rows} row(s) to {path}")
