"""``lsmlake stream TABLE``: print a table's changes as they are committed (Ctrl-C stops)."""

from __future__ import annotations

import json

import click
import pyarrow as pa

from lsmlake.cli.commands import open_table
from lsmlake.cli.common import INTERRUPTED
from lsmlake.cli.values import cell_text, plain_value
from lsmlake.table.stream import STREAM_MODES

__all__ = ["STREAM_MODES", "echo_changes", "stream_command"]


def echo_changes(changes: pa.Table, snapshot_id: int | None, *, as_json: bool) -> None:
    """One line per change: ``+I id=1, name=x`` or, with ``as_json``, a JSON object with ``rowkind``
    and ``snapshot_id`` (JSON lines)."""
    for row in changes.to_pylist():
        if as_json:
            doc = {"snapshot_id": snapshot_id, **{k: plain_value(v) for k, v in row.items()}}
            click.echo(json.dumps(doc, ensure_ascii=False))
        else:
            kind = row.pop("rowkind")
            click.echo(f"{kind} " + ", ".join(f"{k}={cell_text(v)}" for k, v in row.items()))


@click.command("stream")
@click.argument("identifier")
@click.option(
    "--mode", type=click.Choice(STREAM_MODES), default=None, help="scan.mode (default latest-full)."
)
@click.option("--from-snapshot", "snapshot", type=int, default=None, help="Start at this snapshot's changes.")
@click.option(
    "--from-timestamp", "timestamp", type=int, default=None, help="Start after this time (epoch ms)."
)
@click.option("--consumer-id", default=None, help="Save progress under this id; a restart resumes there.")
@click.option(
    "--filter", "filter_", default=None, help='A SQL WHERE condition on the changed rows, e.g. "id = 3".'
)
@click.option("--columns", default=None, help="Comma-separated columns to print (default all).")
@click.option("--poll-interval", type=float, default=1.0, show_default=True, help="Seconds between polls.")
@click.option("--until-caught-up", is_flag=True, help="Stop once every committed snapshot has been printed.")
@click.option("--until-snapshot", type=int, default=None, help="Stop after this snapshot.")
@click.option("--binlog", is_flag=True, help="Binlog rows: columns as arrays, -U/+U packed into one row.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines (with rowkind and snapshot_id).")
@click.pass_context
def stream_command(
    ctx: click.Context,
    identifier: str,
    mode: str | None,
    snapshot: int | None,
    timestamp: int | None,
    consumer_id: str | None,
    filter_: str | None,
    columns: str | None,
    poll_interval: float,
    until_caught_up: bool,
    until_snapshot: int | None,
    binlog: bool,
    as_json: bool,
) -> None:
    """Print the changes of a table as they are committed, one row per line with its row kind
    (+I, -U, +U, -D); the first lines are the current contents unless --mode latest. Ctrl-C stops
    (exit code 130, like every interrupted command)."""
    table = open_table(ctx, identifier)
    if mode is None and snapshot is not None:
        mode = "from-snapshot"
    if mode is None and timestamp is not None:
        mode = "from-timestamp"
    stream = table.stream(
        filter=filter_,
        columns=[c.strip() for c in columns.split(",")] if columns else None,
        mode=mode,
        snapshot_id=snapshot,
        timestamp_millis=timestamp,
        consumer_id=consumer_id,
        poll_interval=poll_interval,
        stop_when_caught_up=until_caught_up,
        until_snapshot=until_snapshot,
        binlog=binlog,
    )
    try:
        for changes in stream:
            echo_changes(changes, stream.snapshot_id, as_json=as_json)
    except KeyboardInterrupt:
        click.echo("stopped", err=True)
        ctx.exit(INTERRUPTED)
