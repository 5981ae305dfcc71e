"""A spinner with the elapsed time for long operations, on a terminal only (stderr); quiet when piped."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


def on_terminal() -> bool:
    """Whether stderr is a terminal (a spinner there does not mix into piped output)."""
    return sys.stderr.isatty()


@contextmanager
def working(text: str, *, console: Console | None = None) -> Iterator[None]:
    """Show ``text`` with a spinner and the time elapsed while the block runs, then erase it. Nothing
    is drawn unless ``console`` (default: stderr) is a terminal."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, refresh_per_second=8) as progress:
        progress.add_task(text, total=None)
        yield
