"""The JDBC catalog lock (Paimon's JdbcCatalogLock): a row in paimon_distributed_locks per held lock."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from lsmlake.errors import LockTimeoutError
from lsmlake.metastore import jdbc_schema as q
from lsmlake.metastore.jdbc_client import JdbcClient

_FIRST_SLEEP_MS = 50


class JdbcLock:
    """``lock(db, table)``: the table's lock ``<catalog-key>.<db>.<table>``, waited for up to
    ``lock-acquire-timeout`` (sleeps doubling from 50 ms up to ``lock-check-max-sleep``); a lock row
    older than that timeout is stale and taken over, as in Paimon. Re-entrant within one thread."""

    def __init__(self, client: JdbcClient) -> None:
        self.client = client
        self._held = threading.local()

    def __getstate__(self) -> dict[str, Any]:
        return {"client": self.client}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["client"])  # type: ignore[misc]

    def create_table(self) -> None:
        config = self.client.config
        if q.LOCKS not in self.client.table_names():
            with contextlib.suppress(*self.client.integrity_errors):
                self.client.execute(
                    q.CREATE_LOCKS.format(config.lock_key_max_length).replace(
                        "CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1
                    )
                )

    def key(self, database: str, table: str) -> str:
        return f"{self.client.config.catalog_key}.{database}.{table}"

    @contextlib.contextmanager
    def lock(self, database: str, table: str) -> Iterator[None]:
        key = self.key(database, table)
        held: set[str] = self._held.__dict__.setdefault("keys", set())
        if key in held:
            yield
            return
        self._acquire(key)
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
            self.client.execute(q.LOCK_RELEASE, (key,))

    def _try(self, key: str, timeout_ms: int) -> bool:
        expire = q.LOCK_EXPIRE_POSTGRESQL if self.client.is_postgres else q.LOCK_EXPIRE_SQLITE
        self.client.execute(expire, (key,))
        try:
            return self.client.execute(q.LOCK_ACQUIRE, (key, timeout_ms // 1000)) > 0
        except self.client.integrity_errors:
            return False

    def _acquire(self, key: str) -> None:
        config = self.client.config
        timeout_ms, max_sleep = config.acquire_timeout_ms, config.check_max_sleep_ms
        start = time.monotonic()
        sleep_ms = _FIRST_SLEEP_MS
        while not self._try(key, timeout_ms):
            waited = (time.monotonic() - start) * 1000
            if waited > timeout_ms:
                raise LockTimeoutError(
                    f"JDBC catalog {config.display}: lock {key!r} not acquired within lock-acquire-timeout "
                    f"({timeout_ms} ms; waited {waited:.0f} ms): another writer holds it"
                )
            sleep_ms = min(sleep_ms * 2, max_sleep)
            time.sleep(min(sleep_ms, max(timeout_ms - waited, 0) + 1) / 1000)
