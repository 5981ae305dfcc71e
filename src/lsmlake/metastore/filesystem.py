"""The filesystem metastore: a database is a ``<name>.db`` directory, a table a sub-directory with a schema."""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Mapping
from contextlib import AbstractContextManager

from lsmlake.core.fileio import FileIO
from lsmlake.metastore.base import DB_SUFFIX, WarehousePaths
from lsmlake.schema_change.manager import rename_table_dir


class FilesystemMetastore:
    """The warehouse directories are the record: nothing is kept anywhere else."""

    def __init__(self, io: FileIO, root: str) -> None:
        self.paths = WarehousePaths(io, root)
        self.io = io

    def database_exists(self, database: str) -> bool:
        return self.io.exists(self.paths.database(database))

    def create_database(self, database: str) -> bool:
        path = self.paths.database(database)
        if self.io.exists(path):
            return False
        self.io.mkdirs(path)
        return True

    def list_databases(self) -> list[str]:
        return sorted(
            s.name[: -len(DB_SUFFIX)]
            for s in self.io.list_dir(self.paths.root)
            if s.is_dir and s.name.endswith(DB_SUFFIX)
        )

    def drop_database(self, database: str) -> None:
        self.io.delete_dir(self.paths.database(database))

    def list_tables(self, database: str) -> list[str]:
        path = self.paths.database(database)
        return sorted(
            s.name
            for s in self.io.list_dir(path)
            if s.is_dir and self.paths.latest_schema_id(posixpath.join(path, s.name)) is not None
        )

    def table_exists(self, database: str, table: str) -> bool:
        return self.paths.latest_schema_id(self.paths.table(database, table)) is not None

    def register_table(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        """Nothing to record: schema-0 in the table directory makes the table."""

    def update_table(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        """Nothing to refresh: the schema files are the record."""

    def drop_table(self, database: str, table: str) -> None:
        self.io.delete_dir(self.paths.table(database, table))

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        rename_table_dir(
            self.io,
            self.paths.table(*source),
            self.paths.table(*target),
            source_name=".".join(source),
            target_name=".".join(target),
        )

    def lock(self, database: str, table: str) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def close(self) -> None:
        """Nothing held open."""
