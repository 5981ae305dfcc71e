"""The ``lsmlake`` command line: a demo on a local warehouse, and table inspection."""

from __future__ import annotations

import sys

import click
import pyarrow as pa
from rich.console import Console
from rich.table import Table as RichTable

from lsmlake.catalog import Catalog
from lsmlake.demo import run_demo
from lsmlake.errors import (
    AlreadyExistsError, CommitConflictError, CorruptFileError, InvalidIdentifierError, InvalidOptionError,
    LsmlakeError, NoSuchDatabaseError, NoSuchSnapshotError, NoSuchTableError, SchemaMismatchError,
)

# Exit codes by error class, in one place.
EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (NoSuchDatabaseError, 3), (NoSuchTableError, 3), (NoSuchSnapshotError, 3),
    (AlreadyExistsError, 4), (SchemaMismatchError, 5), (InvalidOptionError, 6), (InvalidIdentifierError, 6),
    (CommitConflictError, 7), (CorruptFileError, 8), (LsmlakeError, 1), (ValueError, 2),
]


def print_arrow(console: Console, table: pa.Table, title: str | None = None) -> None:
    """Render an Arrow table as a rich table."""
    out = RichTable(title=title)
    for name in table.column_names:
        out.add_column(name)
    for row in table.to_pylist():
        out.add_row(*("NULL" if v is None else str(v) for v in row.values()))
    console.print(out)


@click.group()
@click.option("--warehouse", "-w", default="./warehouse", show_default=True, help="Warehouse path or URI.")
@click.pass_context
def main(ctx: click.Context, warehouse: str) -> None:
    """Primary-key lakehouse tables in the Apache Paimon format."""
    ctx.obj = warehouse


@main.command()
@click.pass_obj
def demo(warehouse: str) -> None:
    """Create a primary-key table, upsert and delete over several commits, show what is on disk."""
    run_demo(warehouse, Console())


@main.command()
@click.argument("identifier")
@click.pass_obj
def snapshots(warehouse: str, identifier: str) -> None:
    """List the snapshots of a table."""
    table = Catalog(warehouse).get_table(identifier)
    sm = table.snapshot_manager
    rows = []
    for sid in sm.snapshot_ids():
        s = sm.snapshot(sid)
        rows.append({"id": s.id, "kind": s.commit_kind, "records": s.total_record_count,
                     "delta": s.delta_record_count, "time_millis": s.time_millis})
    print_arrow(Console(), pa.Table.from_pylist(rows), f"snapshots of {identifier}")


def run() -> None:
    """Entry point that maps lsmlake errors to exit codes and one clear line on stderr."""
    try:
        main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except Exception as e:
        for cls, code in EXIT_CODES:
            if isinstance(e, cls):
                click.echo(f"error: {e}", err=True)
                sys.exit(code)
        raise
