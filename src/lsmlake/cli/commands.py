"""What the ``lsmlake`` commands do: SQL scripts and the prompt, table inspection, and printing rows as rich
tables, JSON or CSV (``lsmlake.cli.main`` declares the commands and imports this module when one runs)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Callable, Iterable
from typing import Any

import click
import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

from lsmlake.catalog import Catalog
from lsmlake.cli.demo import run_demo
from lsmlake.cli.level_chart import render_levels_png
from lsmlake.cli.values import cell_text, plain_value
from lsmlake.core.sql_lexer import tokenize
from lsmlake.sql import Result, Session, SqlError
from lsmlake.sql.context import open_data_table
from lsmlake.sql.ddl import describe_table
from lsmlake.system.registry import read_system_table
from lsmlake.table import Table

# --------------------------------------------------------------------------- output


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


def open_table(warehouse: str, identifier: str) -> Table:
    """A data table of the warehouse (system tables such as ``t$files`` are refused by name)."""
    return open_data_table(Catalog(warehouse), identifier)


# --------------------------------------------------------------------------- sql


def statement_complete(text: str) -> bool:
    """Whether ``text`` ends with a ``;`` outside strings and comments (the prompt then runs it)."""
    try:
        tokens = tokenize(text)
    except SqlError:
        return False
    return bool(tokens) and tokens[-1].kind == "op" and tokens[-1].value == ";"


def _reader() -> Callable[[str], str]:
    try:
        from prompt_toolkit import PromptSession  # optional: nicer line editing when installed
    except ImportError:
        return input
    return PromptSession().prompt  # type: ignore[no-any-return]


def repl(
    session: Session,
    printer: Printer,
    report: Callable[[BaseException], bool],
    read: Callable[[str], str] | None = None,
) -> None:
    """Read statements until ``exit``/EOF; each complete statement runs at once. An error that
    ``report`` prints (it returns False for a bug, which is raised) does not stop the prompt."""
    read = read or _reader()
    buffer: list[str] = []
    while True:
        try:
            line = read(f"{session.database}> " if not buffer else "... ")
        except EOFError:
            break
        except KeyboardInterrupt:
            buffer = []
            continue
        if not buffer and line.strip().rstrip(";").lower() in ("exit", "quit", "\\q"):
            break
        buffer.append(line)
        text = "\n".join(buffer)
        if not statement_complete(text):
            continue
        buffer = []
        try:
            for result in session.run(text):
                printer.result(result)
        except Exception as e:
            if not report(e):
                raise


def run_sql(
    warehouse: str,
    database: str,
    text: str | None,
    printer: Printer,
    *,
    prompt: bool,
    report: Callable[[BaseException], bool],
) -> None:
    """Run ``text`` (all statements, printing each result), or the interactive prompt if ``prompt``."""
    session = Session(Catalog(warehouse), database=database)
    if prompt:
        repl(session, printer, report)
        return
    for result in session.run(text or ""):
        printer.result(result)


# --------------------------------------------------------------------------- table commands


def demo(warehouse: str) -> None:
    run_demo(warehouse, Console())


def explain(warehouse: str, identifier: str, filter_: str | None, snapshot: int | None, fmt: str) -> None:
    text = open_table(warehouse, identifier).explain(filter=filter_, snapshot_id=snapshot)
    click.echo(json.dumps({"table": identifier, "plan": text}) if fmt == "json" else text)


def compact(warehouse: str, identifier: str, full: bool, fmt: str) -> None:
    sid = open_table(warehouse, identifier).compact(full=full)
    if fmt == "json":
        click.echo(json.dumps({"table": identifier, "full": full, "snapshot_id": sid}))
    elif sid is not None:
        click.echo(f"compacted {identifier}: snapshot {sid}")
    else:
        click.echo(f"{identifier}: nothing to compact")


_SNAPSHOT_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("schema_id", pa.int64()),
        ("kind", pa.string()),
        ("records", pa.int64()),
        ("delta", pa.int64()),
        ("time", pa.string()),
    ]
)


def snapshot_rows(table: Table, ids: Iterable[int]) -> pa.Table:
    """One row per snapshot: id, schema, commit kind, record counts and local commit time."""
    rows = []
    for sid in ids:
        s = table.snapshot_manager.snapshot(sid)
        time = dt.datetime.fromtimestamp(s.time_millis / 1000)
        rows.append(
            {
                "id": s.id,
                "schema_id": s.schema_id,
                "kind": s.commit_kind,
                "records": s.total_record_count,
                "delta": s.delta_record_count,
                "time": time.isoformat(sep=" ", timespec="milliseconds"),
            }
        )
    return pa.Table.from_pylist(rows, schema=_SNAPSHOT_SCHEMA)


def snapshots(warehouse: str, identifier: str, printer: Printer) -> None:
    table = open_table(warehouse, identifier)
    printer.table(snapshot_rows(table, table.snapshot_manager.snapshot_ids()), f"snapshots of {identifier}")


_LEVEL_COLUMNS = ["partition", "bucket", "level", "files", "records", "bytes"]


def files_per_level(table: Table) -> pa.Table:
    """Live data files of the latest snapshot, counted per partition, bucket and level."""
    files = read_system_table(table, "files")
    if files.num_rows == 0:
        types = [pa.string(), pa.int32(), pa.int32(), pa.int64(), pa.int64(), pa.int64()]
        return pa.schema(list(zip(_LEVEL_COLUMNS, types, strict=True))).empty_table()
    grouped = files.group_by(["partition", "bucket", "level"]).aggregate(
        [("file_path", "count"), ("record_count", "sum"), ("file_size_in_bytes", "sum")]
    )
    grouped = grouped.select(
        ["partition", "bucket", "level", "file_path_count", "record_count_sum", "file_size_in_bytes_sum"]
    )
    grouped = grouped.rename_columns(_LEVEL_COLUMNS)
    return grouped.sort_by([("partition", "ascending"), ("bucket", "ascending"), ("level", "ascending")])


def _inspect_sections(table: Table) -> dict[str, pa.Table]:
    latest = table.snapshot_manager.latest_id()
    options = table.schema.options
    return {
        "schema": describe_table(table),
        "options": pa.table(
            {"key": list(options), "value": list(options.values())},
            schema=pa.schema([("key", pa.string()), ("value", pa.string())]),
        ),
        "snapshot": snapshot_rows(table, [] if latest is None else [latest]),
        "files": files_per_level(table),
    }


def inspect(warehouse: str, identifier: str, printer: Printer, png: str | None) -> None:
    table = open_table(warehouse, identifier)
    if png:
        render_levels_png(files_per_level(table), png, title=f"{table.name}: data per level and bucket")
    sections = _inspect_sections(table)
    if printer.fmt == "json":
        doc: dict[str, Any] = {
            "table": table.name,
            "path": table.root,
            "primary_keys": table.primary_keys,
            "partition_keys": table.partition_keys,
        }
        doc.update({name: [plain_value(r) for r in t.to_pylist()] for name, t in sections.items()})
        click.echo(json.dumps(doc, ensure_ascii=False))
        return
    if printer.fmt == "table":
        click.echo(f"{table.name} at {table.root}")
    for name, t in sections.items():
        if printer.fmt == "csv":
            click.echo(f"# {name}")
        printer.table(t, name)
