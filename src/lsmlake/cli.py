"""The ``lsmlake`` command line: SQL (scripts, files, an interactive prompt), the demo, and table
inspection (explain, compact, snapshots, inspect), printed as rich tables, JSON or CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

import click
import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

from lsmlake.catalog import Catalog
from lsmlake.cli_stream import stream_command
from lsmlake.cli_values import cell_text, plain_value
from lsmlake.demo import run_demo
from lsmlake.errors import (
    AlreadyExistsError,
    CommitConflictError,
    CorruptFileError,
    InvalidIdentifierError,
    InvalidOptionError,
    LsmlakeError,
    NoSuchDatabaseError,
    NoSuchSnapshotError,
    NoSuchTableError,
    SchemaMismatchError,
    UnsupportedError,
)
from lsmlake.level_chart import render_levels_png
from lsmlake.sql import Result, Session, SqlError
from lsmlake.sql.context import open_data_table
from lsmlake.sql.ddl import describe_table
from lsmlake.sql.lexer import tokenize
from lsmlake.system_tables import read_system_table
from lsmlake.table import Table

# Exit codes by error class, in one place (the first matching class wins).
EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (NoSuchDatabaseError, 3),
    (NoSuchTableError, 3),
    (NoSuchSnapshotError, 3),
    (AlreadyExistsError, 4),
    (SchemaMismatchError, 5),
    (InvalidOptionError, 6),
    (InvalidIdentifierError, 6),
    (CommitConflictError, 7),
    (CorruptFileError, 8),
    (UnsupportedError, 9),
    (SqlError, 2),
    (LsmlakeError, 1),
    (ValueError, 2),
]
FORMATS = ("table", "json", "csv")


def exit_code(error: BaseException) -> int | None:
    """The exit code for an error lsmlake raises on purpose (None: a bug, let it surface)."""
    return next((code for cls, code in EXIT_CODES if isinstance(error, cls)), None)


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


def _format_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--format",
        "-o",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="Output format (default: the global --format).",
    )(f)


def _printer(ctx: click.Context, fmt: str | None) -> Printer:
    return Printer(fmt or ctx.obj["format"])


def _catalog(ctx: click.Context) -> Catalog:
    return Catalog(ctx.obj["warehouse"])


def _table(ctx: click.Context, identifier: str) -> Table:
    return open_data_table(_catalog(ctx), identifier)


class _Group(click.Group):
    """Maps lsmlake errors to one line on stderr and an exit code (under ``run()`` and CliRunner alike)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:
            code = exit_code(e)
            if code is None:
                raise
            click.echo(f"error: {e}", err=True)
            ctx.exit(code)


@click.group(cls=_Group)
@click.option("--warehouse", "-w", default="./warehouse", show_default=True, help="Warehouse path or URI.")
@click.option(
    "--format",
    "-o",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="Output format for rows.",
)
@click.pass_context
def main(ctx: click.Context, warehouse: str, fmt: str) -> None:
    """Primary-key lakehouse tables in the Apache Paimon format."""
    ctx.obj = {"warehouse": warehouse, "format": fmt}


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


def repl(session: Session, printer: Printer, read: Callable[[str], str] | None = None) -> None:
    """Read statements until ``exit``/EOF; each complete statement runs at once, errors do not stop it."""
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
            if exit_code(e) is None:
                raise
            click.echo(f"error: {e}", err=True)


@main.command()
@click.argument("statements", required=False)
@click.option("--file", "-f", "file", type=click.File("r"), help="Read statements from a file ('-' = stdin).")
@click.option(
    "--database", "-d", default="default", show_default=True, help="Database for unqualified names."
)
@click.option(
    "--interactive", "-i", is_flag=True, help="Prompt for statements even when stdin is not a terminal."
)
@_format_option
@click.pass_context
def sql(
    ctx: click.Context,
    statements: str | None,
    file: io.TextIOBase | None,
    database: str,
    interactive: bool,
    fmt: str | None,
) -> None:
    """Run SQL: ';'-separated STATEMENTS, a file, or (with neither) an interactive prompt.

    Flink/Spark syntax: CREATE TABLE ... WITH (...), INSERT, UPDATE, DELETE, MERGE INTO, SELECT
    (also from `t$files`-style system tables, with VERSION AS OF / FOR SYSTEM_TIME AS OF),
    EXPLAIN, SHOW, DESCRIBE, USE and CALL sys.compact / expire_snapshots / create_tag / ...
    """
    if statements is not None and file is not None:
        raise click.UsageError("give statements or --file, not both")
    session = Session(_catalog(ctx), database=database)
    printer = _printer(ctx, fmt)
    if statements is None and file is None:
        if interactive or sys.stdin.isatty():
            repl(session, printer)
            return
        statements = sys.stdin.read()
    text = statements if statements is not None else str(file.read() if file is not None else "")
    for result in session.run(text):
        printer.result(result)


# --------------------------------------------------------------------------- table commands


@main.command()
@click.pass_context
def demo(ctx: click.Context) -> None:
    """Create a primary-key table, upsert and delete over several commits, show what is on disk."""
    run_demo(ctx.obj["warehouse"], Console())


@main.command()
@click.argument("identifier")
@click.option("--filter", "filter_", default=None, help='A SQL WHERE condition, e.g. "id = 3".')
@click.option("--snapshot", type=int, default=None, help="Plan this snapshot instead of the latest.")
@click.pass_context
def explain(ctx: click.Context, identifier: str, filter_: str | None, snapshot: int | None) -> None:
    """How a read of a table is planned: per bucket raw or merge, and why."""
    text = _table(ctx, identifier).explain(filter=filter_, snapshot_id=snapshot)
    if ctx.obj["format"] == "json":
        click.echo(json.dumps({"table": identifier, "plan": text}))
    else:
        click.echo(text)


@main.command()
@click.argument("identifier")
@click.option("--full", is_flag=True, help="Rewrite everything into the highest level.")
@click.pass_context
def compact(ctx: click.Context, identifier: str, full: bool) -> None:
    """Compact a table (the compaction strategy, or a full compaction) in one COMPACT snapshot."""
    sid = _table(ctx, identifier).compact(full=full)
    if ctx.obj["format"] == "json":
        click.echo(json.dumps({"table": identifier, "full": full, "snapshot_id": sid}))
    else:
        click.echo(
            f"compacted {identifier}: snapshot {sid}"
            if sid is not None
            else f"{identifier}: nothing to compact"
        )


def _snapshot_rows(table: Table, ids: Iterable[int]) -> pa.Table:
    rows = []
    for sid in ids:
        s = table.snapshot_manager.snapshot(sid)
        rows.append(
            {
                "id": s.id,
                "schema_id": s.schema_id,
                "kind": s.commit_kind,
                "records": s.total_record_count,
                "delta": s.delta_record_count,
                "time": dt.datetime.fromtimestamp(s.time_millis / 1000).isoformat(
                    sep=" ", timespec="milliseconds"
                ),
            }
        )
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("schema_id", pa.int64()),
            ("kind", pa.string()),
            ("records", pa.int64()),
            ("delta", pa.int64()),
            ("time", pa.string()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


@main.command()
@click.argument("identifier")
@_format_option
@click.pass_context
def snapshots(ctx: click.Context, identifier: str, fmt: str | None) -> None:
    """List the snapshots of a table."""
    table = _table(ctx, identifier)
    rows = _snapshot_rows(table, table.snapshot_manager.snapshot_ids())
    _printer(ctx, fmt).table(rows, f"snapshots of {identifier}")


def files_per_level(table: Table) -> pa.Table:
    """Live data files of the latest snapshot, counted per partition, bucket and level."""
    files = read_system_table(table, "files")
    if files.num_rows == 0:
        return pa.table(
            {
                "partition": pa.array([], pa.string()),
                "bucket": pa.array([], pa.int32()),
                "level": pa.array([], pa.int32()),
                "files": pa.array([], pa.int64()),
                "records": pa.array([], pa.int64()),
                "bytes": pa.array([], pa.int64()),
            }
        )
    grouped = files.group_by(["partition", "bucket", "level"]).aggregate(
        [("file_path", "count"), ("record_count", "sum"), ("file_size_in_bytes", "sum")]
    )
    grouped = grouped.select(
        ["partition", "bucket", "level", "file_path_count", "record_count_sum", "file_size_in_bytes_sum"]
    )
    grouped = grouped.rename_columns(["partition", "bucket", "level", "files", "records", "bytes"])
    return grouped.sort_by([("partition", "ascending"), ("bucket", "ascending"), ("level", "ascending")])


@main.command()
@click.argument("identifier")
@click.option("--png", "png", type=click.Path(dir_okay=False), help="Also draw the LSM levels per bucket.")
@_format_option
@click.pass_context
def inspect(ctx: click.Context, identifier: str, fmt: str | None, png: str | None = None) -> None:
    """A table's schema, options, latest snapshot, and data files per bucket and level."""
    table = _table(ctx, identifier)
    if png:
        render_levels_png(files_per_level(table), png, title=f"{table.name}: data per level and bucket")
    printer = _printer(ctx, fmt)
    latest = table.snapshot_manager.latest_id()
    sections = {
        "schema": describe_table(table),
        "options": pa.table(
            {"key": list(table.schema.options), "value": list(table.schema.options.values())},
            schema=pa.schema([("key", pa.string()), ("value", pa.string())]),
        ),
        "snapshot": _snapshot_rows(table, [] if latest is None else [latest]),
        "files": files_per_level(table),
    }
    if printer.fmt == "json":
        doc = {
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


main.add_command(stream_command)


def run() -> None:
    """Entry point: exit codes by error class (see ``EXIT_CODES``), 130 on Ctrl-C."""
    try:
        code = main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
