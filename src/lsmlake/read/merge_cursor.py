"""Streaming merge input: per file, its key-sorted pieces buffered until every file has passed a key."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

Key = tuple[Any, ...]


def streamable_key_types(types: Sequence[pa.DataType]) -> bool:
    """Whether keys of these types compare in Python and in Arrow as the files are sorted (no floats:
    NaN orders differently)."""
    t = pa.types
    return all(
        t.is_integer(x)
        or t.is_string(x)
        or t.is_large_string(x)
        or t.is_binary(x)
        or t.is_large_binary(x)
        or t.is_date(x)
        or t.is_timestamp(x)
        or t.is_decimal(x)
        or t.is_boolean(x)
        for x in types
    )


def _below(table: pa.Table, keys: Sequence[str], bound: Key) -> int:
    """How many leading rows of ``table`` (sorted by ``keys``) have a key below ``bound``."""
    if not table.num_rows:
        return 0
    below: Any = None
    for name, value in reversed(list(zip(keys, bound, strict=True))):
        col = table.column(name)
        lt = pc.less(col, pa.scalar(value, col.type))
        below = lt if below is None else pc.or_(lt, pc.and_(pc.equal(col, pa.scalar(value, col.type)), below))
    return int(pc.sum(below).as_py() or 0)


class FileCursor:
    """One file's pieces (sorted by key, in file order), buffered; rows leave in key-range slices."""

    def __init__(self, pieces: Iterator[pa.Table], keys: Sequence[str]) -> None:
        self._pieces, self._keys = pieces, keys
        self._buffer: list[pa.Table] = []
        self.done = False
        self.rows = 0

    def fill(self) -> None:
        """Read pieces until some rows are buffered or the file is exhausted."""
        while not self.rows and not self.done:
            self.grow()

    def grow(self) -> None:
        """Buffer the next non-empty piece (or mark the file exhausted)."""
        for piece in self._pieces:
            if piece.num_rows:
                self._buffer.append(piece)
                self.rows += piece.num_rows
                return
        self.done = True

    def last_key(self) -> Key:
        """The key of the last buffered row (rows must be buffered)."""
        last = self._buffer[-1]
        return tuple(last.column(k)[last.num_rows - 1].as_py() for k in self._keys)

    def take(self, bound: Key | None) -> pa.Table | None:
        """The buffered rows with a key below ``bound`` (all of them for None), removed from the buffer."""
        taken: list[pa.Table] = []
        while self._buffer:
            head = self._buffer[0]
            n = head.num_rows if bound is None else _below(head, self._keys, bound)
            if n == head.num_rows:
                taken.append(self._buffer.pop(0))
                continue
            if n:
                taken.append(head.slice(0, n))
                self._buffer[0] = head.slice(n)
            break
        count = sum(t.num_rows for t in taken)
        self.rows -= count
        if not taken:
            return None
        return taken[0] if len(taken) == 1 else pa.concat_tables(taken)


def merge_steps(cursors: Sequence[FileCursor]) -> Iterator[list[pa.Table | None]]:
    """Per step, each cursor's rows below the smallest last-buffered key of the files not yet
    exhausted: every row of those keys, in every file, is then in the step (files are key-sorted)."""
    while True:
        for c in cursors:
            c.fill()
        if not any(c.rows for c in cursors):
            return
        live = [c for c in cursors if not c.done]
        bound = min(c.last_key() for c in live) if live else None
        step = [c.take(bound) for c in cursors]
        if any(t is not None for t in step):
            yield step
            continue
        for c in live:  # every buffered row has the bound's key: read further in those files
            if c.last_key() == bound:
                c.grow()


class MergeStats:
    """Rows merged per step by streaming merges in this process (observability for tests and
    benchmarks): the largest step and the number of steps since the last reset."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.largest_step_rows = 0
        self.steps = 0

    def record(self, rows: int) -> None:
        with self._lock:
            self.steps += 1
            self.largest_step_rows = max(self.largest_step_rows, rows)

    def reset(self) -> None:
        with self._lock:
            self.largest_step_rows = self.steps = 0


MERGE_STATS = MergeStats()
