"""The ``lsmlake`` command line: the group, its global options, and a lazy table of its commands.

Only click and the error classes load at start, so ``--help`` and ``--version`` answer at once. The
commands (pyarrow, DuckDB, the SQL layer) load by name when one runs, click's lazy-group pattern."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from lsmlake import __version__
from lsmlake.cli.common import EXIT_CODES, EXIT_CODES_HELP, FORMATS, INTERRUPTED, exit_code, key_value, report

__all__ = ["COMMANDS", "EXIT_CODES", "EXIT_CODES_HELP", "INTERRUPTED", "LazyGroup", "main", "run"]

# name -> ("module:command object", the short help `lsmlake --help` shows without loading the module;
# tests/cli/test_cli.py checks that it is the command's own).
COMMANDS: dict[str, tuple[str, str]] = {
    "compact": (
        "lsmlake.cli.commands:compact_command",
        "Compact a table (the compaction strategy, or a full compaction) in one COMPACT snapshot.",
    ),
    "demo": (
        "lsmlake.cli.commands:demo_command",
        "Create a primary-key table, upsert and delete over several commits, show what is on disk.",
    ),
    "explain": (
        "lsmlake.cli.commands:explain_command",
        "How a read of a table is planned: per bucket raw or merge, and why.",
    ),
    "inspect": (
        "lsmlake.cli.commands:inspect_command",
        "A table's schema, options, latest snapshot, and data files per bucket and level.",
    ),
    "snapshots": ("lsmlake.cli.commands:snapshots_command", "List the snapshots of a table."),
    "sql": (
        "lsmlake.cli.commands:sql_command",
        "Run SQL: ';'-separated STATEMENTS, a file, or (with neither) an interactive prompt.",
    ),
    "stream": (
        "lsmlake.cli.stream:stream_command",
        "Print the changes of a table as they are committed, one row per line with its row kind (+I, -U, +U, -D);"
        " the first lines are the current contents unless --mode latest.",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands load on first use (``COMMANDS``); its help lists them without loading any.
    Maps lsmlake errors to one line on stderr and an exit code (under ``run()`` and CliRunner alike)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        module_name, _, attr = COMMANDS[cmd_name][0].partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{COMMANDS[cmd_name][0]} is not a click command")
        self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            # a command not loaded yet is shortened as click shortens a loaded one's help
            command = self.commands.get(name) or click.Command(name, help=COMMANDS[name][1])
            rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:
            if not report(e):
                raise
            ctx.exit(exit_code(e) or 1)


@click.group(cls=LazyGroup, epilog=EXIT_CODES_HELP)
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
@click.option(
    "--catalog-option",
    "-C",
    "catalog_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="A catalog option (s3.endpoint=..., table-default.bucket=4, ...); repeatable.",
)
@click.pass_context
def main(ctx: click.Context, warehouse: str, fmt: str, catalog_options: tuple[str, ...]) -> None:
    """Primary-key lakehouse tables in the Apache Paimon format."""
    options = dict(key_value(text, "--catalog-option") for text in catalog_options)
    ctx.obj = {"warehouse": warehouse, "format": fmt, "catalog_options": options}


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
