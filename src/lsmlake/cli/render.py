"""Rows as text for a terminal: a rich table that fits the width (long cells fold), or one record per
block (``--vertical``, ``\\x``) - chosen by itself when the columns would not fit side by side."""

from __future__ import annotations

import io

import pyarrow as pa
from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from lsmlake.cli.values import cell_text

FOLDED_CELL = 24
"""A column is given up to this many characters (more folds onto further lines) when judging the fit."""


def cells(table: pa.Table) -> list[list[str]]:
    """The table's values as cell text, column by column."""
    return [[cell_text(v) for v in column.to_pylist()] for column in table.columns]


def fits(names: list[str], columns: list[list[str]], width: int) -> bool:
    """Whether the columns fit side by side in ``width`` with whole headers and cells folded at
    ``FOLDED_CELL`` characters (each column also takes 3 characters of border and padding)."""
    needed = 1
    for name, values in zip(names, columns, strict=True):
        longest = max((len(v) for v in values), default=0)
        needed += max(len(name), min(longest, FOLDED_CELL)) + 3
    return needed <= width


def _console(width: int | None, color: bool) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        soft_wrap=False,
    )
    return console, buffer


def horizontal(names: list[str], columns: list[list[str]], title: str | None, console: Console) -> None:
    if title:
        console.print(Text(title))
    out = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in names:
        out.add_column(name, overflow="fold")
    for row in zip(*columns, strict=True):
        out.add_row(*(Text(v) for v in row))
    console.print(out)
    console.print()


def vertical(
    names: list[str], columns: list[list[str]], title: str | None, console: Console, first: int = 1
) -> None:
    """One block per record: a ``-[ row N ]-`` rule, then ``name | value`` lines (as psql's ``\\x``)."""
    if title:
        console.print(Text(title))
    label = max((len(n) for n in names), default=0)
    rows = list(zip(*columns, strict=True))
    for number, row in enumerate(rows, start=first):
        console.print(Text(f"-[ row {number} ]".ljust(min(console.width, label + 20), "-")))
        grid = RichTable.grid(padding=(0, 1))
        grid.add_column(width=label, no_wrap=True)
        grid.add_column(overflow="fold")
        for name, value in zip(names, row, strict=True):
            grid.add_row(Text(name), Text("| " + value))
        console.print(grid)


def render(
    table: pa.Table,
    *,
    title: str | None = None,
    width: int | None = None,
    vertical_mode: bool | None = None,
    color: bool = False,
    first: int = 1,
) -> str:
    """``table`` as text ``width`` characters wide (None: the terminal's, $COLUMNS, or 80).
    ``vertical_mode`` None chooses: vertical when the columns do not fit side by side."""
    console, buffer = _console(width, color)
    names, columns = table.column_names, cells(table)
    if vertical_mode is None:
        vertical_mode = bool(names) and not fits(names, columns, console.width)
    if vertical_mode:
        vertical(names, columns, title, console, first)
    else:
        horizontal(names, columns, title, console)
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())
