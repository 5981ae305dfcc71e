"""The ``lsmlake`` commands (sql, demo, explain, compact, snapshots, inspect) and what they do.

``lsmlake.cli.main`` loads this module by name when one of them runs, so ``--help`` stays light."""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

import click
import pyarrow as pa
from rich.console import Console

from lsmlake.catalog import Catalog
from lsmlake.cli.common import format_option, report
from lsmlake.cli.demo import run_demo
from lsmlake.cli.level_chart import render_levels_png
from lsmlake.cli.output import DEFAULT_MAX_ROWS, Printer
from lsmlake.cli.progress import working
from lsmlake.cli.prompt import completion_words, repl, run_statements, terminal_reader
from lsmlake.cli.values import plain_value
from lsmlake.sql import Session
from lsmlake.sql.context import open_data_table
from lsmlake.sql.ddl import describe_table
from lsmlake.system.registry import read_system_table
from lsmlake.table import Table


def _printer(ctx: click.Context, fmt: str | None) -> Printer:
    return Printer(fmt or ctx.obj["format"])


def open_catalog(ctx: click.Context) -> Catalog:
    """The catalog the command line names: ``--warehouse`` with its ``--catalog-option`` values."""
    return Catalog(ctx.obj["warehouse"], options=ctx.obj.get("catalog_options"))


def open_table(ctx: click.Context, identifier: str) -> Table:
    """A data table of the command line's catalog (system tables such as ``t$files`` are refused by name)."""
    return open_data_table(open_catalog(ctx), identifier)


# --------------------------------------------------------------------------- sql


def _reader(catalog: Catalog) -> Callable[[str], str]:
    """Line editing, history and completion on a terminal; plain ``input`` otherwise (pipes, tests)."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return terminal_reader(completion_words(catalog))
    return input


def run_sql(
    catalog: Catalog,
    database: str,
    text: str | None,
    printer: Printer,
    *,
    prompt: bool,
    report: Callable[[BaseException], bool],
) -> None:
    """Run ``text`` (all statements, printing each result as it streams), or the interactive prompt."""
    session = Session(catalog, database=database, stream=True)
    if prompt:
        repl(session, printer, report, _reader(catalog), click.echo)
        return
    run_statements(session, text or "", printer)


def _output_format(fmt: str, output: str | None) -> str:
    """``--output FILE`` with the table format: the format the file's extension names."""
    if output is None or fmt != "table":
        return fmt
    for name, extensions in {"parquet": (".parquet", ".pq"), "csv": (".csv",), "json": (".json",)}.items():
        if output.lower().endswith(extensions):
            return name
    raise click.UsageError(f"--output {output}: name a .parquet, .csv or .json file, or give -o")


@click.command("sql")
@click.argument("statements", required=False)
@click.option("--file", "-f", "file", type=click.File("r"), help="Read statements from a file ('-' = stdin).")
@click.option(
    "--database", "-d", default="default", show_default=True, help="Database for unqualified names."
)
@click.option(
    "--interactive", "-i", is_flag=True, help="Prompt for statements even when stdin is not a terminal."
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=0),
    default=None,
    help=f"Rows a query shows (table format, default {DEFAULT_MAX_ROWS}; 0 = all) or writes (csv/json/"
    "parquet, default all); the rest are counted.",
)
@click.option("--vertical", "-x", is_flag=True, default=None, help="One block per row (name | value lines).")
@click.option("--output", "output", type=click.Path(dir_okay=False), help="Write the rows to this file.")
@click.option("--no-pager", is_flag=True, help="Never page long output (it is paged only on a terminal).")
@format_option
@click.pass_context
def sql_command(
    ctx: click.Context,
    statements: str | None,
    file: io.TextIOBase | None,
    database: str,
    interactive: bool,
    max_rows: int | None,
    vertical: bool | None,
    output: str | None,
    no_pager: bool,
    fmt: str | None,
) -> None:
    """Run SQL: ';'-separated STATEMENTS, a file, or (with neither) an interactive prompt.

    Flink/Spark syntax: CREATE TABLE ... WITH (...), INSERT, UPDATE, DELETE, MERGE INTO, SELECT
    (also from `t$files`-style system tables, with VERSION AS OF / FOR SYSTEM_TIME AS OF),
    EXPLAIN, SHOW, DESCRIBE, USE, COPY (query) TO 'file.parquet' and CALL sys.compact /
    expire_snapshots / create_tag / ... Results stream: the first rows print at once.
    """
    if statements is not None and file is not None:
        raise click.UsageError("give statements or --file, not both")
    prompt = statements is None and file is None and (interactive or sys.stdin.isatty())
    if statements is None and file is None and not prompt:
        statements = sys.stdin.read()
    text = statements if statements is not None else str(file.read() if file is not None else "")
    fmt = _output_format(fmt or ctx.obj["format"], output)
    if max_rows is None and fmt == "table":
        max_rows = DEFAULT_MAX_ROWS
    printer = Printer(fmt, max_rows=max_rows, vertical=vertical or None, output=output, pager=not no_pager)
    run_sql(open_catalog(ctx), database, text, printer, prompt=prompt, report=report)


# --------------------------------------------------------------------------- table commands


@click.command("demo")
@click.pass_context
def demo_command(ctx: click.Context) -> None:
    """Create a primary-key table, upsert and delete over several commits, show what is on disk."""
    run_demo(open_catalog(ctx), Console())


@click.command("explain")
@click.argument("identifier")
@click.option("--filter", "filter_", default=None, help='A SQL WHERE condition, e.g. "id = 3".')
@click.option("--snapshot", type=int, default=None, help="Plan this snapshot instead of the latest.")
@click.pass_context
def explain_command(ctx: click.Context, identifier: str, filter_: str | None, snapshot: int | None) -> None:
    """How a read of a table is planned: per bucket raw or merge, and why."""
    text = open_table(ctx, identifier).explain(filter=filter_, snapshot_id=snapshot)
    click.echo(json.dumps({"table": identifier, "plan": text}) if ctx.obj["format"] == "json" else text)


@click.command("compact")
@click.argument("identifier")
@click.option("--full", is_flag=True, help="Rewrite everything into the highest level.")
@click.pass_context
def compact_command(ctx: click.Context, identifier: str, full: bool) -> None:
    """Compact a table (the compaction strategy, or a full compaction) in one COMPACT snapshot."""
    table = open_table(ctx, identifier)
    with working(f"compacting {identifier}" + (" (full)" if full else "")):
        sid = table.compact(full=full)
    if ctx.obj["format"] == "json":
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


@click.command("snapshots")
@click.argument("identifier")
@format_option
@click.pass_context
def snapshots_command(ctx: click.Context, identifier: str, fmt: str | None) -> None:
    """List the snapshots of a table."""
    table = open_table(ctx, identifier)
    _printer(ctx, fmt).table(
        snapshot_rows(table, table.snapshot_manager.snapshot_ids()), f"snapshots of {identifier}"
    )


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


@click.command("inspect")
@click.argument("identifier")
@click.option(
    "--png",
    "png",
    type=click.Path(dir_okay=False),
    help="Also draw the LSM levels per bucket (needs matplotlib: pip install '.[png]').",
)
@format_option
@click.pass_context
def inspect_command(ctx: click.Context, identifier: str, fmt: str | None, png: str | None = None) -> None:
    """A table's schema, options, latest snapshot, and data files per bucket and level."""
    printer = _printer(ctx, fmt)
    table = open_table(ctx, identifier)
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
