"""Hand memory a finished step freed back to the operating system (Arrow's pool, glibc's arenas)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache

import pyarrow as pa


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None on another C library or platform."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_unused_memory() -> None:
    """Return freed memory to the OS: the calling thread's share of Arrow's pool (mimalloc keeps freed
    pages per thread for a while) and glibc's free arena pages (numpy's arrays). A writer calls it
    after each bucket's flush and compaction, so what one bucket freed is not still held when the
    next ones peak; it costs about a millisecond."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
