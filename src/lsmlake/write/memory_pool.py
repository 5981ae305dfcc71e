"""One write buffer budget per writer (`write-buffer-size`), shared by its buckets, and the background flusher."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from lsmlake.errors import LsmlakeError

# Buffers handed to the flush thread and not yet written; a write() blocks only when these are
# pending and the budget is exceeded.
MAX_PENDING_FLUSHES = 2


class WriteBufferPool:
    """Bytes a writer holds in memory: rows buffered in its buckets plus rows being flushed.

    Sizes are counted in whole pages (`page-size`), as Paimon's memory pool allocates them. ``peak``
    is the most ever held, observed after each batch is buffered (the bound tests check)."""

    def __init__(self, budget: int, page_size: int) -> None:
        self.budget = budget
        self.page_size = page_size
        self._lock = threading.Lock()
        self.buffered = 0
        self.in_flight = 0
        self.peak = 0

    def pages(self, nbytes: int) -> int:
        """``nbytes`` rounded up to whole pages."""
        return -(-nbytes // self.page_size) * self.page_size

    @property
    def used(self) -> int:
        return self.buffered + self.in_flight

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.buffered += nbytes
            self.peak = max(self.peak, self.buffered + self.in_flight)

    def hand_off(self, nbytes: int) -> None:
        """Buffered bytes move to a flush: still held until ``release``."""
        with self._lock:
            self.buffered -= nbytes
            self.in_flight += nbytes

    def release(self, nbytes: int) -> None:
        with self._lock:
            self.in_flight -= nbytes

    def over_budget(self) -> bool:
        return self.used > self.budget

    def wants_flush(self) -> bool:
        """Start flushing once half the budget is buffered, so writing overlaps with buffering."""
        return self.buffered * 2 >= self.budget or self.over_budget()


class BackgroundFlusher:
    """Runs flushes on one thread; the first error is kept and raised by ``check`` (and ``drain``)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._executor: ThreadPoolExecutor | None = None
        self._pending: set[Future[None]] = set()
        self._error: BaseException | None = None

    @property
    def pending(self) -> int:
        self._collect()
        return len(self._pending)

    def _collect(self) -> None:
        """Forget finished flushes, keeping the first error."""
        for future in [f for f in self._pending if f.done()]:
            self._pending.discard(future)
            self._keep_error(future)

    def _keep_error(self, future: Future[None]) -> None:
        error = future.exception()
        if error is not None and self._error is None:
            self._error = error

    def submit(self, fn: Callable[[], None]) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"lsmlake-flush-{self._name}")
        self._pending.add(self._executor.submit(fn))

    def wait_one(self) -> None:
        """Block until at least one pending flush finished."""
        if self._pending:
            done, self._pending = wait(self._pending, return_when=FIRST_COMPLETED)
            for future in done:
                self._keep_error(future)

    def check(self) -> None:
        """Raise the error of a background flush that failed, naming that it did."""
        self._collect()
        if self._error is not None:
            error = self._error
            if isinstance(error, LsmlakeError):
                raise error
            raise LsmlakeError(f"table {self._name}: a background flush of the write buffer failed: {error}") from error

    def drain(self) -> None:
        """Wait for every pending flush, then raise the first error."""
        while self._pending:
            self.wait_one()
        self.check()

    def close(self) -> None:
        """Wait for running flushes (their files are then known to the writer) and stop the thread."""
        for future in list(self._pending):
            future.exception()
        self._pending = set()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
