"""The metastore protocol: where a catalog records its databases and tables (their files stay in the warehouse)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Protocol

from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import SCHEMA_PREFIX

DB_SUFFIX = ".db"


class WarehousePaths:
    """``<root>/<db>.db/<table>``: where every metastore keeps a table's files (names already checked)."""

    def __init__(self, io: FileIO, root: str) -> None:
        self.io = io
        self.root = root

    def database(self, database: str) -> str:
        return posixpath.join(self.root, database + DB_SUFFIX)

    def table(self, database: str, table: str) -> str:
        return posixpath.join(self.database(database), table)

    def latest_schema_id(self, table_path: str) -> int | None:
        """The highest ``schema/schema-<n>`` of a table directory; None when it has none."""
        ids = []
        for s in self.io.list_dir(posixpath.join(table_path, "schema")):
            suffix = s.name[len(SCHEMA_PREFIX) :]
            if s.name.startswith(SCHEMA_PREFIX) and suffix.isdigit():
                ids.append(int(suffix))
        return max(ids) if ids else None

    def identifier_of(self, path: str) -> tuple[str, str] | None:
        """The (database, table) whose directory holds ``path``; None outside every table directory."""
        prefix = self.root.rstrip("/") + "/"
        if not path.startswith(prefix):
            return None
        parts = path[len(prefix) :].split("/")
        if len(parts) < 3 or not parts[0].endswith(DB_SUFFIX) or len(parts[0]) == len(DB_SUFFIX):
            return None
        return parts[0][: -len(DB_SUFFIX)], parts[1]


class Metastore(Protocol):
    """What a Catalog asks of its metastore; names are checked by the catalog before they get here.

    Dropping and renaming also handle the table directories, so that each metastore can order the
    record and the files to stay consistent when either step fails."""

    paths: WarehousePaths

    def database_exists(self, database: str) -> bool: ...

    def create_database(self, database: str) -> bool:
        """Record a new database; False when it already exists."""
        ...

    def list_databases(self) -> list[str]: ...

    def drop_database(self, database: str) -> None:
        """Forget a database and its tables, and delete their files."""
        ...

    def list_tables(self, database: str) -> list[str]: ...

    def table_exists(self, database: str, table: str) -> bool: ...

    def register_table(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        """Record a table whose schema-0 was just written; AlreadyExistsError when it is recorded."""
        ...

    def update_table(self, database: str, table: str, properties: Mapping[str, str]) -> None:
        """The table's schema changed: refresh what the metastore keeps of it (its properties)."""
        ...

    def drop_table(self, database: str, table: str) -> None:
        """Forget a table and delete its directory."""
        ...

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        """Move a table's record and directory; on failure neither has moved."""
        ...

    def lock(self, database: str, table: str) -> AbstractContextManager[None]:
        """The table's catalog lock (a no-op where the metastore has none)."""
        ...

    def close(self) -> None: ...
