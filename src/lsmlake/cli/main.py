"""The ``lsmlake`` command line: its commands and options, and the one map from errors to exit codes.

Only click and the error classes load at start, so ``--help`` and ``--version`` answer at once; a command
imports ``lsmlake.cli.commands`` (pyarrow, DuckDB, the SQL layer) when it runs."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from lsmlake import __version__
from lsmlake.cli.stream import stream_command
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

if TYPE_CHECKING:
    from lsmlake.cli.commands import Printer

# Exit codes by error class, in one place (the first matching class wins). Errors that are also a
# ValueError (SQL and filter text, unknown columns, bad arguments) are bad input: 2, as for usage errors.
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
    (ValueError, 2),
    (LsmlakeError, 1),
]
INTERRUPTED = 130
EXIT_CODES_HELP = """Exit codes:

\b
  0    success
  1    any other lsmlake error
  2    bad input: SQL or filter text, an unknown column, a bad argument or usage
  3    no such database, table, snapshot or tag
  4    the database or table already exists
  5    the data or schema change does not fit the table's schema
  6    an invalid table option or identifier
  7    a commit conflict (nothing was published)
  8    a corrupt or missing table file
  9    a feature lsmlake does not support yet
  130  interrupted (Ctrl-C)
"""
FORMATS = ("table", "json", "csv")


def exit_code(error: BaseException) -> int | None:
    """The exit code for an error lsmlake raises on purpose (None: a bug, let it surface)."""
    return next((code for cls, code in EXIT_CODES if isinstance(error, cls)), None)


def report(error: BaseException) -> bool:
    """Print an error lsmlake raises on purpose as one ``error:`` line; False for anything else (a bug)."""
    if exit_code(error) is None:
        return False
    click.echo(f"error: {error}", err=True)
    return True


class _Group(click.Group):
    """Maps lsmlake errors to one line on stderr and an exit code (under ``run()`` and CliRunner alike)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:
            if not report(e):
                raise
            ctx.exit(exit_code(e) or 1)


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
    from lsmlake.cli.commands import Printer

    return Printer(fmt or ctx.obj["format"])


@click.group(cls=_Group, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, "--version", "-V", prog_name="lsmlake")
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
    from lsmlake.cli.commands import run_sql

    if statements is not None and file is not None:
        raise click.UsageError("give statements or --file, not both")
    prompt = statements is None and file is None and (interactive or sys.stdin.isatty())
    if statements is None and file is None and not prompt:
        statements = sys.stdin.read()
    text = statements if statements is not None else str(file.read() if file is not None else "")
    printer = _printer(ctx, fmt)
    run_sql(ctx.obj["warehouse"], database, text, printer, prompt=prompt, report=report)


@main.command()
@click.pass_context
def demo(ctx: click.Context) -> None:
    """Create a primary-key table, upsert and delete over several commits, show what is on disk."""
    from lsmlake.cli.commands import demo as run_demo

    run_demo(ctx.obj["warehouse"])


@main.command()
@click.argument("identifier")
@click.option("--filter", "filter_", default=None, help='A SQL WHERE condition, e.g. "id = 3".')
@click.option("--snapshot", type=int, default=None, help="Plan this snapshot instead of the latest.")
@click.pass_context
def explain(ctx: click.Context, identifier: str, filter_: str | None, snapshot: int | None) -> None:
    """How a read of a table is planned: per bucket raw or merge, and why."""
    from lsmlake.cli.commands import explain as run_explain

    run_explain(ctx.obj["warehouse"], identifier, filter_, snapshot, ctx.obj["format"])


@main.command()
@click.argument("identifier")
@click.option("--full", is_flag=True, help="Rewrite everything into the highest level.")
@click.pass_context
def compact(ctx: click.Context, identifier: str, full: bool) -> None:
    """Compact a table (the compaction strategy, or a full compaction) in one COMPACT snapshot."""
    from lsmlake.cli.commands import compact as run_compact

    run_compact(ctx.obj["warehouse"], identifier, full, ctx.obj["format"])


@main.command()
@click.argument("identifier")
@_format_option
@click.pass_context
def snapshots(ctx: click.Context, identifier: str, fmt: str | None) -> None:
    """List the snapshots of a table."""
    from lsmlake.cli.commands import snapshots as run_snapshots

    run_snapshots(ctx.obj["warehouse"], identifier, _printer(ctx, fmt))


@main.command()
@click.argument("identifier")
@click.option(
    "--png",
    "png",
    type=click.Path(dir_okay=False),
    help="Also draw the LSM levels per bucket (needs matplotlib: pip install '.[png]').",
)
@_format_option
@click.pass_context
def inspect(ctx: click.Context, identifier: str, fmt: str | None, png: str | None = None) -> None:
    """A table's schema, options, latest snapshot, and data files per bucket and level."""
    from lsmlake.cli.commands import inspect as run_inspect

    run_inspect(ctx.obj["warehouse"], identifier, _printer(ctx, fmt), png)


main.add_command(stream_command)


def run() -> None:
    """Entry point: exit codes by error class (see ``EXIT_CODES``), 130 on Ctrl-C."""
    try:
        code = main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(INTERRUPTED)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
