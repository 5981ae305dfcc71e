"""How the commands print: rows as a rich table, JSON or CSV, and messages (to stderr in json/csv)."""

from __future__ import annotations

import csv
import io
import json

import click
import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

from lsmlake.cli.values import cell_text, plain_value
from lsmlake.sql import Result


class Printer:
    """Writes tables and messages in one format; in json/csv, messages go to stderr."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    def table(self, table: pa.Table, title: str | None = None) -> None:
        rows = table.to_pylist()
        if self.fmt == "json":
            click.echo(json.dumps([plain_value(r) for r in rows], ensure_ascii=False))
        elif self.fmt == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(table.column_names)
            writer.writerows([["" if v is None else cell_text(v) for v in r.values()] for r in rows])
            click.echo(buf.getvalue(), nl=False)
        else:
            out = RichTable(title=title)
            for name in table.column_names:
                out.add_column(name)
            for r in rows:
                out.add_row(*(cell_text(v) for v in r.values()))
            Console(soft_wrap=True).print(out)

    def message(self, text: str) -> None:
        if text:
            click.echo(text, err=self.fmt != "table")

    def result(self, result: Result) -> None:
        if result.table is not None and result.kind not in ("explain", "show create table"):
            self.table(result.table)
            if result.kind == "call":
                self.message(result.message)
        elif result.table is not None and self.fmt != "table":
            self.table(result.table)
        else:
            self.message(result.message)
