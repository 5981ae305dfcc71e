"""The wall clock that commits, tag and record expiry read; tests pin it with ``fixed_clock``."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager

_fixed_ms: int | None = None


def epoch_millis() -> int:
    """Milliseconds since the epoch (UTC), as Java's ``System.currentTimeMillis()``."""
    return int(time.time() * 1000) if _fixed_ms is None else _fixed_ms


def local_now() -> dt.datetime:
    """This machine's local wall clock, naive (Java's ``LocalDateTime.now()``)."""
    return dt.datetime.now() if _fixed_ms is None else dt.datetime.fromtimestamp(_fixed_ms / 1000)


@contextmanager
def fixed_clock(millis: int) -> Iterator[None]:
    """Within the block the clock reads ``millis`` (epoch milliseconds); for tests of time-driven rules."""
    global _fixed_ms
    previous, _fixed_ms = _fixed_ms, millis
    try:
        yield
    finally:
        _fixed_ms = previous


def set_fixed_clock(millis: int | None) -> None:
    """Pin the clock to ``millis`` (None: the real clock again); for tests that move it step by step."""
    global _fixed_ms
    _fixed_ms = millis
