"""Connections to the JDBC catalog's database: SQLite (stdlib sqlite3) or PostgreSQL (psycopg), one per thread."""

from __future__ import annotations

import contextlib
import importlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from lsmlake.errors import MetastoreError
from lsmlake.metastore.jdbc_config import POSTGRESQL, JdbcConfig

_SQLITE_BUSY_TIMEOUT_S = 30.0


class JdbcClient:
    """Runs the catalog's statements; statements use ``?`` placeholders whatever the database.

    Each thread (and each process after a fork) gets its own connection, in autocommit mode;
    ``transaction()`` groups statements. Pickles as its config alone."""

    def __init__(self, config: JdbcConfig) -> None:
        self.config = config
        self._local = threading.local()
        self._driver: Any = None
        if config.kind == POSTGRESQL:
            try:
                self._driver = importlib.import_module("psycopg")
            except ImportError:
                raise MetastoreError(
                    f"JDBC catalog {config.display}: PostgreSQL needs psycopg, which the 'postgresql' "
                    "extra installs: pip install 'lsmlake[postgresql]'"
                ) from None
        self.integrity_errors: tuple[type[Exception], ...] = (
            (sqlite3.IntegrityError,) if self._driver is None else (self._driver.IntegrityError,)
        )
        self._errors: tuple[type[Exception], ...] = (
            (sqlite3.Error,) if self._driver is None else (self._driver.Error,)
        )

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]

    @property
    def is_postgres(self) -> bool:
        return self.config.kind == POSTGRESQL

    def _connect(self) -> Any:
        if self._driver is None:
            path = self.config.connect["path"]
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            conn = sqlite3.connect(path, timeout=_SQLITE_BUSY_TIMEOUT_S, isolation_level=None)
            # WAL (kept in the file, so Java's connections use it too): readers never block a writer.
            # In the default rollback journal, an open read statement blocks every other connection's
            # writes -- and Paimon 1.4's lock leaves one open when the lock table already exists.
            conn.execute("PRAGMA journal_mode=WAL")
        else:
            conn = self._driver.connect(autocommit=True, **self.config.connect)
        return conn

    def connection(self) -> Any:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.pid, local.conn, local.depth = os.getpid(), None, 0
        if local.conn is None:
            try:
                local.conn = self._connect()
            except self._errors as e:
                raise MetastoreError(f"JDBC catalog {self.config.display}: cannot connect: {e}") from e
        return local.conn

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.is_postgres else sql

    def execute(self, sql: str, args: Sequence[object] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        with self._errors_named(sql):
            cur = self.connection().execute(self._sql(sql), tuple(args))
            return int(cur.rowcount)

    def query(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self._errors_named(sql):
            return list(self.connection().execute(self._sql(sql), tuple(args)).fetchall())

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Statements inside commit together or not at all (nested blocks join the outer one)."""
        conn = self.connection()
        local = self._local
        if local.depth:
            local.depth += 1
            try:
                yield
            finally:
                local.depth -= 1
            return
        with self._errors_named("BEGIN"):
            conn.execute("BEGIN IMMEDIATE" if not self.is_postgres else "BEGIN")
        local.depth = 1
        try:
            yield
        except BaseException:
            local.depth = 0
            with contextlib.suppress(*self._errors):
                conn.execute("ROLLBACK")
            raise
        local.depth = 0
        with self._errors_named("COMMIT"):
            conn.execute("COMMIT")

    @contextlib.contextmanager
    def _errors_named(self, sql: str) -> Iterator[None]:
        try:
            yield
        except self.integrity_errors:
            raise
        except self._errors as e:
            verb = sql.split(None, 1)[0] if sql.strip() else "statement"
            raise MetastoreError(f"JDBC catalog {self.config.display}: {verb} failed: {e}") from e

    def table_names(self) -> set[str]:
        """The tables of the database (lower case)."""
        if self.is_postgres:
            rows = self.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        else:
            rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {str(r[0]).lower() for r in rows}

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            with contextlib.suppress(*self._errors):
                conn.close()
        self._local.conn = None
