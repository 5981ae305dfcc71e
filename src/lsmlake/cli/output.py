"""How the commands print rows - streamed batch by batch: a table (the first ``--max-rows``, then a
note of how many there were), CSV or JSON (every row), or a Parquet file - and messages (stderr in
csv/json/parquet, so stdout holds only rows)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import click
import pyarrow as pa

from lsmlake.cli.render import render
from lsmlake.cli.values import plain_value
from lsmlake.sql import Result
from lsmlake.sql.export import write_csv, write_file

DEFAULT_MAX_ROWS = 40
"""Rows the table format shows of a query by default (as DuckDB's shell); ``--max-rows 0`` shows all."""
UNLIMITED_CHUNK = 1000
"""With no row limit, the table format renders (and pages) this many rows at a time."""


def batches_of(data: pa.Table | pa.RecordBatchReader) -> pa.RecordBatchReader:
    """Rows as a stream, whether they came as a table or a stream."""
    return (
        data
        if isinstance(data, pa.RecordBatchReader)
        else pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    )


class Rows:
    """A stream of rows taken a number at a time (the rest of a batch is kept for the next take)."""

    def __init__(self, reader: pa.RecordBatchReader) -> None:
        self.reader = reader
        self.schema = reader.schema
        self._left: list[pa.RecordBatch] = []

    def take(self, count: int) -> tuple[pa.Table, bool]:
        """The next ``count`` rows and whether any row is left after them."""
        got, have = self._left, sum(b.num_rows for b in self._left)
        for batch in self.reader if have <= count else ():
            got.append(batch)
            have += batch.num_rows
            if have > count:
                break
        table = pa.Table.from_batches(got, self.schema)
        rest = table.slice(count)
        self._left = rest.combine_chunks().to_batches() if rest.num_rows else []
        return table.slice(0, count), have > count

    def count_rest(self) -> int:
        """Rows left (read through, batch by batch, and dropped)."""
        left: int = sum(b.num_rows for b in self._left)
        self._left = []
        for batch in self.reader:
            left += batch.num_rows
        return left


@dataclass
class Printer:
    """Writes rows and messages in one format.

    ``max_rows`` limits what the table format shows (0: all; csv/json/parquet write every row unless it
    is given), ``vertical`` prints one block per record (None: when the columns do not fit the width),
    ``output`` writes rows to that file instead of stdout, ``pager`` pages long output on a terminal."""

    fmt: str
    max_rows: int | None = None
    vertical: bool | None = None
    output: str | None = None
    width: int | None = None
    pager: bool = True
    _outputs: int = 0

    def _limit(self) -> int:
        if self.max_rows is not None:
            return self.max_rows
        return 0

    def table(self, data: pa.Table | pa.RecordBatchReader, title: str | None = None) -> None:
        """Print rows (a table or a stream of batches) in this printer's format."""
        reader = batches_of(data)
        try:
            if self.output is not None or self.fmt == "parquet":
                self._to_file(reader)
            elif self.fmt == "json":
                self._json(reader, sys_out())
            elif self.fmt == "csv":
                self._csv(reader)
            else:
                self._table(reader, title)
        finally:
            reader.close()

    # -- formats
    def _limited(self, reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
        limit = self._limit()
        if not limit:
            return reader
        rows = Rows(reader)
        shown, _ = rows.take(limit)
        rest = rows.count_rest()
        if rest:
            self.message(f"{shown.num_rows + rest} rows, the first {shown.num_rows} written (--max-rows)")
        return batches_of(shown)

    def _json(self, reader: pa.RecordBatchReader, out: IO[str]) -> int:
        """One JSON array per result, written a batch at a time; returns the rows."""
        out.write("[")
        rows = 0
        for batch in self._limited(reader):
            if batch.num_rows == 0:
                continue
            text = json.dumps([plain_value(r) for r in batch.to_pylist()], ensure_ascii=False)
            out.write(("" if rows == 0 else ", ") + text[1:-1])
            out.flush()
            rows += batch.num_rows
        out.write("]\n")
        out.flush()
        return rows

    def _csv(self, reader: pa.RecordBatchReader) -> None:
        sys.stdout.flush()
        limited = self._limited(reader)
        write_csv(limited, limited.schema, _Flushed(sys.stdout.buffer))

    def _to_file(self, reader: pa.RecordBatchReader) -> None:
        if self.output is None:
            raise click.UsageError("-o parquet writes a file: give it with --output FILE")
        self._outputs += 1
        if self._outputs > 1:
            raise click.UsageError(f"--output {self.output} holds the rows of one query; this is another")
        limited = self._limited(reader)
        if self.fmt == "json":
            with open(self.output, "w", encoding="utf-8") as out:
                rows = self._json(limited, out)
        else:
            rows = write_file(limited, self.output, "csv" if self.fmt == "csv" else "parquet")
        self.message(f"wrote {rows} row(s) to {self.output}")

    def _table(self, reader: pa.RecordBatchReader, title: str | None) -> None:
        limit = self._limit()
        chunks = self._table_chunks(reader, title, limit)
        first = next(chunks, "")
        on_terminal = self.pager and self.width is None and _stdout_is_terminal()
        height = shutil.get_terminal_size().lines
        rest: list[str] = []
        if on_terminal and first.count("\n") < height:
            rest.append(next(chunks, ""))  # one more chunk tells whether the output is long
        if on_terminal and (first + "".join(rest)).count("\n") >= height:
            click.echo_via_pager(_chain(first, rest, chunks))
            return
        for text in _chain(first, rest, chunks):
            click.echo(text, nl=False)

    def _table_chunks(self, reader: pa.RecordBatchReader, title: str | None, limit: int) -> Iterator[str]:
        color = self.width is None and _stdout_is_terminal()
        rows = Rows(reader)
        shown, more = rows.take(limit or UNLIMITED_CHUNK)
        yield render(shown, title=title, width=self.width, vertical_mode=self.vertical, color=color)
        done = shown.num_rows
        if limit and more:
            total = done + rows.count_rest()
            yield f"{total} rows, {done} shown (--max-rows N to show more, 0 for all)\n"
            return
        while more:
            shown, more = rows.take(UNLIMITED_CHUNK)
            text = render(shown, width=self.width, vertical_mode=self.vertical, color=color, first=done + 1)
            done += shown.num_rows
            yield text

    # -- messages and results
    def message(self, text: str) -> None:
        if text:
            click.echo(text, err=self.fmt != "table" or self.output is not None)

    def result(self, result: Result) -> None:
        rows = result.batches if result.batches is not None else result.table
        if rows is not None and result.kind not in ("explain", "show create table"):
            self.table(rows)
            if result.kind == "call":
                self.message(result.message)
        elif rows is not None and self.fmt != "table":
            self.table(rows)
        else:
            self.message(result.message)


def sys_out() -> IO[str]:
    """The text stdout of the moment (click's test runner swaps it)."""
    return sys.stdout


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _chain(first: str, rest: list[str], chunks: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest
    yield from chunks


class _Flushed:
    """A binary stream that flushes after each write, so streamed CSV rows show as they are written."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.closed = False

    def write(self, data: bytes) -> int:
        written = self.raw.write(data)
        self.raw.flush()
        return written

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        self.raw.flush()
