"""The JDBC metastore: databases and tables recorded in a relational database, their files in the warehouse."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager

from lsmlake.core.fileio import FileIO
from lsmlake.errors import AlreadyExistsError, NoSuchTableError
from lsmlake.metastore import jdbc_schema as q
from lsmlake.metastore.base import WarehousePaths
from lsmlake.metastore.jdbc_client import JdbcClient
from lsmlake.metastore.jdbc_config import JdbcConfig
from lsmlake.metastore.jdbc_lock import JdbcLock
from lsmlake.schema_change.manager import rename_table_dir

_CATALOG_TABLES = (
    (q.TABLES, q.CREATE_TABLES),
    (q.DATABASE_PROPERTIES, q.CREATE_DATABASE_PROPERTIES),
    (q.TABLE_PROPERTIES, q.CREATE_TABLE_PROPERTIES),
)


class JdbcMetastore:
    """Paimon's JdbcCatalog layout: a table of a database is a row of ``paimon_tables`` under the
    catalog key; a directory in the warehouse without that row is not a table of this catalog."""

    def __init__(self, io: FileIO, root: str, config: JdbcConfig) -> None:
        self.paths = WarehousePaths(io, root)
        self.io = io
        self.config = config
        self.key = config.catalog_key
        self.client = JdbcClient(config)
        self._lock = JdbcLock(self.client)
        self.lock_enabled = config.lock_enabled if config.lock_enabled is not None else not io.local
        self._create_catalog_tables()

    def _create_catalog_tables(self) -> None:
        existing = self.client.table_names()
        for name, ddl in _CATALOG_TABLES:
            if name not in existing:
                # IF NOT EXISTS: another process may create it meanwhile (same columns as Paimon's DDL)
                with contextlib.suppress(*self.client.integrity_errors):
                    self.client.execute(ddl.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))
        if self.lock_enabled:
            self._lock.create_table()

    # -- databases
    def database_exists(self, database: str) -> bool:
        args = (self.key, database)
        return bool(
            self.client.query(q.DATABASE_IN_PROPERTIES, args) or self.client.query(q.DATABASE_IN_TABLES, args)
        )

    def create_database(self, database: str) -> bool:
        if self.database_exists(database):
            return False
        properties = {"exists": "true", "location": self.io.uri(self.paths.database(database))}
        try:
            with self.client.transaction():
                for k, v in properties.items():
                    self.client.execute(q.INSERT_DATABASE_PROPERTY, (self.key, database, k, v))
        except self.client.integrity_errors:
            return False  # created meanwhile by another catalog
        return True

    def list_databases(self) -> list[str]:
        return sorted({str(r[0]) for r in self.client.query(q.DATABASES, (self.key, self.key))})

    def drop_database(self, database: str) -> None:
        tables = self.list_tables(database)
        with self.client.transaction():
            for sql in (
                q.DELETE_DATABASE_TABLES,
                q.DELETE_DATABASE_PROPERTIES,
                q.DELETE_DATABASE_TABLE_PROPERTIES,
            ):
                self.client.execute(sql, (self.key, database))
        # only this catalog's tables: other catalog keys may keep tables in the same directory
        for table in tables:
            self.io.delete_dir(self.paths.table(database, table))
        self.io.delete_empty_dir(self.paths.database(database))

    # -- tables
    def list_tables(self, database: str) -> list[str]:
        return sorted(str(r[0]) for r in self.client.query(q.TABLE_NAMES, (self.key, database)))

    def table_exists(self, database: str, table: str) -> bool:
        return bool(self.client.query(q.TABLE_ROW, (self.key, database, table)))

    def register_table(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        try:
            with self.client.transaction():
                self.client.execute(q.INSERT_TABLE, (self.key, database, table))
                self._insert_properties(database, table, properties)
        except self.client.integrity_errors:
            raise AlreadyExistsError(f"table {database}.{table} already exists") from None

    def _insert_properties(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        if not self.config.sync_all_properties:
            return
        for k, v in sorted(properties.items()):
            self.client.execute(q.INSERT_TABLE_PROPERTY, (self.key, database, table, k, v))

    def update_table(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        if not self.config.sync_all_properties:
            return
        with self.client.transaction():
            self.client.execute(q.DELETE_TABLE_PROPERTIES, (self.key, database, table))
            self._insert_properties(database, table, properties)

    def drop_table(self, database: str, table: str) -> None:
        """The row goes first (Paimon's order): a failed directory delete leaves files, not a table."""
        with self.client.transaction():
            if not self.client.execute(q.DELETE_TABLE, (self.key, database, table)):
                raise NoSuchTableError(f"table {database}.{table} does not exist")
            self.client.execute(q.DELETE_TABLE_PROPERTIES, (self.key, database, table))
        self.io.delete_dir(self.paths.table(database, table))

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        """Row and properties move in one transaction that commits only after the directory moved."""
        args = (*target, self.key, *source)
        source_path, target_path = self.paths.table(*source), self.paths.table(*target)
        moved = False
        try:
            with self.client.transaction():
                if not self.client.execute(q.RENAME_TABLE, args):
                    raise NoSuchTableError(f"table {'.'.join(source)} does not exist")
                self.client.execute(q.RENAME_TABLE_PROPERTIES, args)
                self.io.mkdirs(self.paths.database(target[0]))  # a JDBC database has no directory until used
                rename_table_dir(
                    self.io,
                    source_path,
                    target_path,
                    source_name=".".join(source),
                    target_name=".".join(target),
                )
                moved = True
        except self.client.integrity_errors:
            raise AlreadyExistsError(f"table {'.'.join(target)} already exists") from None
        except BaseException:
            if moved:  # the commit failed after the move: put the directory back where the row still points
                with contextlib.suppress(OSError):
                    self.io.rename(target_path, source_path)
            raise

    # -- locks
    def lock(self, database: str, table: str) -> AbstractContextManager[None]:
        if not self.lock_enabled:
            return contextlib.nullcontext()
        return self._lock.lock(database, table)

    @contextlib.contextmanager
    def publish_lock(self, path: str) -> Iterator[None]:
        """The lock of the table whose directory holds ``path`` (FileIO's create-only publishes)."""
        ident = self.paths.identifier_of(path)
        if ident is None:
            yield
            return
        with self._lock.lock(*ident):
            yield

    def close(self) -> None:
        self.client.close()
