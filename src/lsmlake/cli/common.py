"""What every ``lsmlake`` command shares and ``--help`` shows: exit codes by error class, the one-line
error report, the ``--format`` choice. It loads click and the error classes only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

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
FORMATS = ("table", "json", "csv", "parquet")


def exit_code(error: BaseException) -> int | None:
    """The exit code for an error lsmlake raises on purpose (None: a bug, let it surface)."""
    return next((code for cls, code in EXIT_CODES if isinstance(error, cls)), None)


def report(error: BaseException) -> bool:
    """Print an error lsmlake raises on purpose as one ``error:`` line; False for anything else (a bug)."""
    if exit_code(error) is None:
        return False
    click.echo(f"error: {error}", err=True)
    for note in getattr(error, "__notes__", ()):  # e.g. the snapshots a failed write had published
        click.echo(f"note: {note}", err=True)
    return True


def key_value(text: str, flag: str) -> tuple[str, str]:
    """``KEY=VALUE`` of a repeatable option, split at the first ``=``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"{text!r} is not KEY=VALUE", param_hint=flag)
    return key.strip(), value


def format_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """A command's own ``--format``/``-o`` (None: the global one)."""
    return click.option(
        "--format",
        "-o",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="Output format (default: the global --format).",
    )(f)
