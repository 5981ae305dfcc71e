"""The filesystem catalog: databases are ``<name>.db`` directories, tables their sub-directories."""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Mapping, Sequence

import pyarrow as pa

from lsmlake.catalog_options import CatalogOptions
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions, validate_create_options
from lsmlake.core.paths import is_inside
from lsmlake.core.schema import SCHEMA_PREFIX, TableSchema, read_schema, schema_file_name, write_schema
from lsmlake.core.types import assign_field_ids, from_arrow_type
from lsmlake.errors import (
    AlreadyExistsError,
    InvalidIdentifierError,
    InvalidOptionError,
    NoSuchDatabaseError,
    NoSuchTableError,
    SchemaMismatchError,
)
from lsmlake.mergetree.merge_function import validate_merge_engine
from lsmlake.schema_change import SchemaChange
from lsmlake.schema_change.manager import rename_table_dir
from lsmlake.system.registry import SystemTable
from lsmlake.table import Table

DB_SUFFIX = ".db"
SYSTEM_TABLE_SPLITTER = "$"
_BAD_NAME = re.compile(r"[/\\\x00-\x1f$]")


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidIdentifierError(f"{what} name must be a non-empty string, got {name!r}")
    if name in (".", "..") or name.startswith(".") or _BAD_NAME.search(name):
        raise InvalidIdentifierError(
            f"{what} name {name!r} is invalid: it may not start with '.', or contain '/', '\\', '$' "
            "or control characters"
        )
    return name


def parse_identifier(identifier: str) -> tuple[str, str]:
    """Split ``db.table`` into its checked parts."""
    if not isinstance(identifier, str) or identifier.count(".") != 1:
        raise InvalidIdentifierError(f"table identifier {identifier!r} must look like 'database.table'")
    db, table = identifier.split(".")
    return _check_name(db, "database"), _check_name(table, "table")


class Catalog:
    """Databases and tables of one warehouse: a local path, ``file://`` or a pyarrow filesystem URI."""

    def __init__(self, warehouse: str, *, options: Mapping[str, str] | None = None) -> None:
        """``options``: Paimon catalog options -- storage settings for object stores (``s3.endpoint``,
        ``s3.access-key``, ...), ``table-default.<option>`` for the tables it creates, ``metastore``
        (``filesystem``) and ``warehouse``; anything else is refused."""
        self.warehouse = warehouse
        self.options = CatalogOptions.of(str(warehouse), options)
        self.io, self.root = FileIO.for_uri(str(warehouse), self.options.storage)

    # -- paths
    def _db_path(self, database: str) -> str:
        path = posixpath.join(self.root, _check_name(database, "database") + DB_SUFFIX)
        if not is_inside(self.root, path):
            raise InvalidIdentifierError(f"database {database!r} escapes the warehouse")
        return path

    def _table_path(self, database: str, table: str) -> str:
        path = posixpath.join(self._db_path(database), table)
        if not is_inside(self.root, path):
            raise InvalidIdentifierError(f"table {database}.{table} escapes the warehouse")
        return path

    # -- databases
    def create_database(self, name: str, *, exist_ok: bool = False) -> None:
        path = self._db_path(name)
        if self.io.exists(path):
            if exist_ok:
                return
            raise AlreadyExistsError(f"database {name} already exists")
        self.io.mkdirs(path)

    def list_databases(self) -> list[str]:
        return sorted(
            s.name[: -len(DB_SUFFIX)]
            for s in self.io.list_dir(self.root)
            if s.is_dir and s.name.endswith(DB_SUFFIX)
        )

    def drop_database(self, name: str, *, ignore_missing: bool = False, cascade: bool = False) -> None:
        path = self._db_path(name)
        if not self.io.exists(path):
            if ignore_missing:
                return
            raise NoSuchDatabaseError(f"database {name} does not exist")
        if self.list_tables(name) and not cascade:
            raise AlreadyExistsError(f"database {name} is not empty (use cascade=True)")
        self.io.delete_dir(path)

    # -- tables
    def list_tables(self, database: str) -> list[str]:
        path = self._db_path(database)
        if not self.io.exists(path):
            raise NoSuchDatabaseError(f"database {database} does not exist")
        return sorted(
            s.name
            for s in self.io.list_dir(path)
            if s.is_dir and self._latest_schema_id(posixpath.join(path, s.name)) is not None
        )

    def _latest_schema_id(self, table_path: str) -> int | None:
        ids = []
        for s in self.io.list_dir(posixpath.join(table_path, "schema")):
            suffix = s.name[len(SCHEMA_PREFIX) :]
            if s.name.startswith(SCHEMA_PREFIX) and suffix.isdigit():
                ids.append(int(suffix))
        return max(ids) if ids else None

    def table_exists(self, identifier: str) -> bool:
        db, name = parse_identifier(identifier)
        return self._latest_schema_id(self._table_path(db, name)) is not None

    def get_table(self, identifier: str) -> Table | SystemTable:
        """Open a table (``db.table``), or a system table (``db.table$files``); NoSuchTableError if absent."""
        if SYSTEM_TABLE_SPLITTER in str(identifier):
            return self.get_system_table(identifier)
        return self.open_table(identifier)

    def open_table(self, identifier: str) -> Table:
        """Open a data table (``db.table``); raises NoSuchTableError when it has no schema file."""
        db, name = parse_identifier(identifier)
        path = self._table_path(db, name)
        schema_id = self._latest_schema_id(path)
        if schema_id is None:
            raise NoSuchTableError(f"table {db}.{name} does not exist")
        schema = read_schema(self.io, posixpath.join(path, "schema", schema_file_name(schema_id)))
        return Table(f"{db}.{name}", self.io, path, schema)

    def get_system_table(self, identifier: str) -> SystemTable:
        """Open ``db.table$name`` (``$files``, ``$snapshots``, ...): a read-only table of metadata."""
        base, _, name = str(identifier).partition(SYSTEM_TABLE_SPLITTER)
        if not name:
            raise InvalidIdentifierError(f"{identifier!r} is not a system table name ('db.table$name')")
        return SystemTable(self.open_table(base), name)

    def create_table(
        self,
        identifier: str,
        *,
        schema: pa.Schema,
        primary_key: Sequence[str] | None = None,
        partition_keys: Sequence[str] | None = None,
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        exist_ok: bool = False,
    ) -> Table:
        """Create a table from an Arrow schema; returns it. Nothing is written when validation fails.
        The catalog's ``table-default.*`` options apply under ``options``."""
        db, name = parse_identifier(identifier)
        if not self.io.exists(self._db_path(db)):
            raise NoSuchDatabaseError(f"database {db} does not exist (create it with create_database)")
        path = self._table_path(db, name)
        if self._latest_schema_id(path) is not None:
            if exist_ok:
                return self.open_table(identifier)
            raise AlreadyExistsError(f"table {db}.{name} already exists")
        table_schema = build_schema(
            schema,
            primary_key=list(primary_key or []),
            partition_keys=list(partition_keys or []),
            options=self.options.table_options(options),
            comment=comment,
            table_name=identifier,
        )
        if not write_schema(self.io, posixpath.join(path, "schema", schema_file_name(0)), table_schema):
            if exist_ok:
                return self.open_table(identifier)
            raise AlreadyExistsError(f"table {db}.{name} already exists")
        return Table(f"{db}.{name}", self.io, path, table_schema)

    def alter_table(
        self, identifier: str, *changes: SchemaChange, ignore_missing: bool = False
    ) -> Table | None:
        """Apply schema changes to ``db.table`` as one new schema version (see ``Table.alter``); returns
        the table on its new schema (None when it does not exist and ``ignore_missing``)."""
        if ignore_missing and not self.table_exists(identifier):
            return None
        return self.open_table(identifier).alter(*changes)

    def rename_table(self, identifier: str, new_identifier: str, *, ignore_missing: bool = False) -> None:
        """Rename ``db.table`` (also into another database) by moving its directory.

        Local warehouses only; refused when the table's metadata refers to absolute paths.
        """
        db, name = parse_identifier(identifier)
        new_db, new_name = parse_identifier(new_identifier)
        path = self._table_path(db, name)
        if self._latest_schema_id(path) is None:
            if ignore_missing:
                return
            raise NoSuchTableError(f"table {db}.{name} does not exist")
        if not self.io.exists(self._db_path(new_db)):
            raise NoSuchDatabaseError(f"database {new_db} does not exist")
        target = self._table_path(new_db, new_name)
        if self.io.exists(target):
            raise AlreadyExistsError(f"table {new_db}.{new_name} already exists (or its directory does)")
        rename_table_dir(
            self.io, path, target, source_name=f"{db}.{name}", target_name=f"{new_db}.{new_name}"
        )

    def drop_table(self, identifier: str, *, ignore_missing: bool = False) -> None:
        db, name = parse_identifier(identifier)
        path = self._table_path(db, name)
        if self._latest_schema_id(path) is None:
            if ignore_missing:
                return
            raise NoSuchTableError(f"table {db}.{name} does not exist")
        self.io.delete_dir(path)


def build_schema(
    schema: pa.Schema,
    *,
    primary_key: list[str],
    partition_keys: list[str],
    options: dict[str, str],
    comment: str | None,
    table_name: str,
) -> TableSchema:
    """Schema-0 of a new table: field ids assigned, keys checked, primary-key columns made NOT NULL."""
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"table {table_name}: schema must be a pyarrow.Schema, got {type(schema).__name__}")
    names = schema.names
    if len(set(names)) != len(names):
        raise SchemaMismatchError(f"table {table_name}: duplicate column names in {names}")
    for what, cols in (("primary key", primary_key), ("partition key", partition_keys)):
        missing = [c for c in cols if c not in names]
        if missing:
            raise SchemaMismatchError(f"table {table_name}: {what} column(s) {missing} are not in the schema")
        if len(set(cols)) != len(cols):
            raise SchemaMismatchError(f"table {table_name}: {what} lists a column twice: {cols}")
    if primary_key and set(primary_key) <= set(partition_keys):
        raise SchemaMismatchError(f"table {table_name}: the primary key must not be just the partition keys")
    nullable_pk = options.get(CoreOptions.PRIMARY_KEY_NULLABLE.key, "false").lower() == "true"
    try:
        validate_create_options(options, primary_key_table=bool(primary_key))
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {table_name}: {e}") from None
    bucket = int(options.get(CoreOptions.BUCKET.key, "-1"))
    if primary_key and bucket > 0 and not set(partition_keys) <= set(primary_key):
        raise InvalidOptionError(
            f"table {table_name}: with a fixed bucket count the primary key {primary_key} must include "
            f"every partition key {partition_keys}"
        )
    bucket_key = options.get(CoreOptions.BUCKET_KEY.key)
    if bucket_key:
        for col in bucket_key.split(","):
            if col not in names or col in partition_keys or (primary_key and col not in primary_key):
                raise InvalidOptionError(
                    f"table {table_name}: bucket-key column {col!r} must be a non-partition column"
                    + (" of the primary key" if primary_key else "")
                )
    typed = []
    for f in schema:
        t = from_arrow_type(f.type, f.nullable)
        if f.name in primary_key and not nullable_pk:
            t = t.copy(nullable=False)
        typed.append((f.name, t))
    fields, highest = assign_field_ids(typed)
    table_schema = TableSchema(
        id=0,
        fields=tuple(fields),
        highest_field_id=highest,
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_key),
        options=options,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )
    validate_merge_engine(table_schema)
    return table_schema
