"""The catalog: databases and tables of a warehouse, recorded by its metastore (the directories, or JDBC)."""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pyarrow as pa

from lsmlake.catalog_options import REST, CatalogOptions
from lsmlake.core.default_values import default_scalar
from lsmlake.core.field_metadata import field_extras
from lsmlake.core.fileio import FileIO
from lsmlake.core.format_types import check_format_types
from lsmlake.core.options import CoreOptions, validate_create_options
from lsmlake.core.paths import is_inside
from lsmlake.core.schema import TableSchema, read_schema, schema_file_name, write_schema
from lsmlake.core.types import DataField, assign_field_ids, from_arrow_type
from lsmlake.errors import (
    AlreadyExistsError,
    InvalidIdentifierError,
    InvalidOptionError,
    NoSuchDatabaseError,
    NoSuchTableError,
    SchemaMismatchError,
)
from lsmlake.maintenance.branches import open_branch, parse_branch_suffix
from lsmlake.maintenance.drop import delete_external_roots, external_roots_of
from lsmlake.mergetree.merge_function import validate_merge_engine
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.metastore import Metastore, open_metastore
from lsmlake.metastore.rest import RestCatalogClient
from lsmlake.schema_change import SchemaChange
from lsmlake.schema_change.apply import check_record_level_time_field
from lsmlake.system.global_tables import GLOBAL_TABLES, SYSTEM_DATABASE, GlobalSystemTable
from lsmlake.system.registry import SystemTable
from lsmlake.table import Table

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

    rest: RestCatalogClient | None = None
    """The REST catalog's server, when ``metastore=rest``: every operation asks it (such a catalog has
    no warehouse ``io``, ``root`` or ``metastore`` of its own: tables live where the server says)."""
    io: FileIO
    root: str
    metastore: Metastore

    def __init__(self, warehouse: str, *, options: Mapping[str, str] | None = None) -> None:
        """``options``: Paimon catalog options -- storage settings for object stores (``s3.endpoint``,
        ``s3.access-key``, ...), ``table-default.<option>`` for the tables it creates, ``metastore``
        (``filesystem``; ``jdbc`` with ``uri``, ``catalog-key``, ``jdbc.<property>``, ``lock.enabled``,
        ``lock-acquire-timeout``, ``lock-check-max-sleep``, ``sync-all-properties``; or ``rest`` with
        ``uri``, ``token.provider`` (``bear`` with ``token``, or ``dlf`` with ``dlf.*``),
        ``data-token.enabled``, ``header.<name>``) and ``warehouse``; anything else is
        refused. A REST catalog's ``warehouse`` is the name its server resolves (``/v1/config``), and
        the server gives each table's path."""
        self.warehouse = warehouse
        self.options = CatalogOptions.of(str(warehouse), options)
        if self.options.metastore == REST:
            given = {str(k): str(v) for k, v in (options or {}).items()}
            self.rest = RestCatalogClient(str(warehouse), self.options, given)
            # the server's table-default.* (its /v1/config defaults and overrides) apply to new tables
            self.options = replace(self.options, table_defaults=self.rest.table_defaults)
            return
        self.io, self.root = FileIO.for_uri(str(warehouse), self.options.storage)
        self.metastore = open_metastore(self.options, self.io, self.root)

    def close(self) -> None:
        """Close the metastore's connections (the JDBC catalog's); the catalog reconnects on next use."""
        if self.rest is None:
            self.metastore.close()

    # -- paths
    def _db_path(self, database: str) -> str:
        path = self.metastore.paths.database(_check_name(database, "database"))
        if not is_inside(self.root, path):
            raise InvalidIdentifierError(f"database {database!r} escapes the warehouse")
        return path

    def _table_path(self, database: str, table: str) -> str:
        path = posixpath.join(self._db_path(database), table)
        if not is_inside(self.root, path):
            raise InvalidIdentifierError(f"table {database}.{table} escapes the warehouse")
        return path

    def _require_database(self, database: str) -> None:
        self._db_path(database)
        if not self.metastore.database_exists(database):
            raise NoSuchDatabaseError(f"database {database} does not exist")

    # -- databases
    def create_database(self, name: str, *, exist_ok: bool = False) -> None:
        if self.rest is not None:
            if not self.rest.create_database(_check_name(name, "database")) and not exist_ok:
                raise AlreadyExistsError(f"database {name} already exists")
            return
        self._db_path(name)
        if name == SYSTEM_DATABASE:
            raise InvalidIdentifierError(
                f"database name {name!r} is reserved for Paimon's global system tables"
            )
        if not self.metastore.create_database(name) and not exist_ok:
            raise AlreadyExistsError(f"database {name} already exists")

    def list_databases(self) -> list[str]:
        if self.rest is not None:
            return self.rest.list_databases()
        return self.metastore.list_databases()

    def _database_exists(self, name: str) -> bool:
        if self.rest is not None:
            return self.rest.database_exists(_check_name(name, "database"))
        self._db_path(name)
        return self.metastore.database_exists(name)

    def drop_database(self, name: str, *, ignore_missing: bool = False, cascade: bool = False) -> None:
        if not self._database_exists(name):
            if ignore_missing:
                return
            raise NoSuchDatabaseError(f"database {name} does not exist")
        if self.list_tables(name) and not cascade:
            raise AlreadyExistsError(f"database {name} is not empty (use cascade=True)")
        if self.rest is not None:
            for table in self.list_tables(name):  # each through the server, which deletes its files
                self.rest.drop_table(name, table)
            self.rest.drop_database(name)
            return
        self.metastore.drop_database(name)

    # -- tables
    def list_tables(self, database: str) -> list[str]:
        if self.rest is not None:
            return self.rest.list_tables(_check_name(database, "database"))  # 404: NoSuchDatabaseError
        self._require_database(database)
        return self.metastore.list_tables(database)

    def table_exists(self, identifier: str) -> bool:
        db, name = parse_identifier(identifier)
        if self.rest is not None:
            return self.rest.table_exists(db, name)
        self._table_path(db, name)
        return self.metastore.table_exists(db, name)

    def get_table(self, identifier: str) -> Table | SystemTable | GlobalSystemTable:
        """Open a table (``db.table``), a branch (``db.table$branch_b``), a system table
        (``db.table$files``, ``db.table$branch_b$files``) or a catalog-wide one (``sys.tables``,
        ``sys.all_table_options``); NoSuchTableError if absent."""
        database, _, rest = str(identifier).partition(".")
        if database == SYSTEM_DATABASE and SYSTEM_TABLE_SPLITTER not in rest:
            return self.global_system_table(rest)
        _, _, suffix = str(identifier).partition(SYSTEM_TABLE_SPLITTER)
        if suffix and parse_branch_suffix(suffix)[1] is not None:
            return self.get_system_table(identifier)
        return self.open_table(identifier)

    def global_system_table(self, name: str) -> GlobalSystemTable:
        """``sys.<name>``: a table over every table of the catalog (Paimon's global system tables)."""
        key = name.lower()
        if key not in GLOBAL_TABLES:
            raise NoSuchTableError(
                f"table {SYSTEM_DATABASE}.{name} does not exist; global system tables: "
                + ", ".join(f"{SYSTEM_DATABASE}.{n}" for n in GLOBAL_TABLES)
            )
        return GlobalSystemTable(key, self._all_tables)

    def _all_tables(self) -> list[tuple[str, str, TableHandle, str]]:
        """Every table (database, name, table, location), skipping those dropped meanwhile (as Java)."""
        out: list[tuple[str, str, TableHandle, str]] = []
        for database in self.list_databases():
            try:
                names = self.list_tables(database)
            except NoSuchDatabaseError:
                continue
            for name in names:
                try:
                    table = self._open_main(f"{database}.{name}")
                except NoSuchTableError:
                    continue
                out.append((database, name, table, self.io.uri(table.root)))
        return out

    def open_table(self, identifier: str) -> Table:
        """Open a data table (``db.table``, or a branch: ``db.table$branch_b``); raises NoSuchTableError
        when it has no schema file (or, in a JDBC catalog, no row)."""
        base, _, suffix = str(identifier).partition(SYSTEM_TABLE_SPLITTER)
        branch, system = parse_branch_suffix(suffix) if suffix else (None, None)
        if system is not None:
            raise InvalidIdentifierError(f"{identifier!r} names a system table: open it with get_table")
        table = self._open_main(base)
        return table if branch is None else open_branch(table, branch)

    def _open_main(self, identifier: str) -> Table:
        db, name = parse_identifier(identifier)
        if self.rest is not None:
            return self.rest.open_table(db, name)
        path = self._table_path(db, name)
        if not self.metastore.table_exists(db, name):
            raise NoSuchTableError(f"table {db}.{name} does not exist")
        schema_id = self.metastore.paths.latest_schema_id(path)
        if schema_id is None:
            raise NoSuchTableError(
                f"table {db}.{name} is recorded in the catalog, but {self.io.uri(path)} holds no schema file"
            )
        schema = read_schema(self.io, posixpath.join(path, "schema", schema_file_name(schema_id)))
        return Table(f"{db}.{name}", self.io, path, schema)

    def get_system_table(self, identifier: str) -> SystemTable:
        """Open ``db.table$name`` (``$files``, ``$snapshots``, ...; of a branch ``db.table$branch_b$name``):
        a read-only table of metadata."""
        base, _, suffix = str(identifier).partition(SYSTEM_TABLE_SPLITTER)
        branch, name = parse_branch_suffix(suffix) if suffix else (None, None)
        if not name:
            raise InvalidIdentifierError(f"{identifier!r} is not a system table name ('db.table$name')")
        table = self._open_main(base)
        return SystemTable(table if branch is None else open_branch(table, branch), name)

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
        if not self._database_exists(db):
            raise NoSuchDatabaseError(f"database {db} does not exist (create it with create_database)")
        if self.rest is not None:
            return self._create_rest_table(
                identifier, schema, primary_key, partition_keys, options, comment, exist_ok
            )
        path = self._table_path(db, name)
        with self.metastore.lock(db, name):
            if self.metastore.table_exists(db, name):
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
                if self.metastore.table_exists(db, name):  # created meanwhile
                    if exist_ok:
                        return self.open_table(identifier)
                    raise AlreadyExistsError(f"table {db}.{name} already exists")
                raise AlreadyExistsError(
                    f"cannot create table {db}.{name}: {self.io.uri(path)} already holds a table that this "
                    "catalog does not record (drop or move the directory first)"
                )
            try:
                self.metastore.register_table(db, name, table_properties(table_schema))
            except BaseException:
                self.io.delete_dir(path)  # the schema this call wrote: nothing half-made is left
                raise
        return Table(f"{db}.{name}", self.io, path, table_schema)

    def _create_rest_table(
        self,
        identifier: str,
        schema: pa.Schema,
        primary_key: Sequence[str] | None,
        partition_keys: Sequence[str] | None,
        options: Mapping[str, str] | None,
        comment: str | None,
        exist_ok: bool,
    ) -> Table:
        """CREATE TABLE through the REST server: checked here as on any catalog, written by the server."""
        assert self.rest is not None
        db, name = parse_identifier(identifier)
        table_schema = build_schema(
            schema,
            primary_key=list(primary_key or []),
            partition_keys=list(partition_keys or []),
            options=self.options.table_options(options),
            comment=comment,
            table_name=identifier,
        )
        try:
            self.rest.create_table(db, name, table_schema)
        except AlreadyExistsError:
            if not exist_ok:
                raise AlreadyExistsError(f"table {db}.{name} already exists") from None
        return self.rest.open_table(db, name)

    def alter_table(
        self, identifier: str, *changes: SchemaChange, ignore_missing: bool = False
    ) -> Table | None:
        """Apply schema changes to ``db.table`` as one new schema version (see ``Table.alter``); returns
        the table on its new schema (None when it does not exist and ``ignore_missing``)."""
        if SYSTEM_TABLE_SPLITTER in str(identifier):  # a branch: its own schema files, no metastore row
            return self.open_table(identifier).alter(*changes)
        if ignore_missing and not self.table_exists(identifier):
            return None
        db, name = parse_identifier(identifier)
        if self.rest is not None:
            return self.rest.open_table(db, name).alter(*changes)
        with self.metastore.lock(db, name):
            table = self.open_table(identifier)
            altered = table.alter(*changes)
            if altered.schema.id != table.schema.id:
                self.metastore.update_table(db, name, table_properties(altered.schema))
        return altered

    def rename_table(self, identifier: str, new_identifier: str, *, ignore_missing: bool = False) -> None:
        """Rename ``db.table`` (also into another database) by moving its directory (and, in a JDBC
        catalog, its row: both move or neither).

        Local warehouses only; refused when the table's metadata refers to absolute paths.
        """
        db, name = parse_identifier(identifier)
        new_db, new_name = parse_identifier(new_identifier)
        if self.rest is not None:
            self._rename_rest_table((db, name), (new_db, new_name), ignore_missing=ignore_missing)
            return
        self._table_path(db, name)
        target = self._table_path(new_db, new_name)
        first, second = sorted([(db, name), (new_db, new_name)])
        with self.metastore.lock(*first), self.metastore.lock(*second):
            if not self.metastore.table_exists(db, name):
                if ignore_missing:
                    return
                raise NoSuchTableError(f"table {db}.{name} does not exist")
            if not self.metastore.database_exists(new_db):
                raise NoSuchDatabaseError(f"database {new_db} does not exist")
            if self.metastore.table_exists(new_db, new_name) or self.io.exists(target):
                raise AlreadyExistsError(f"table {new_db}.{new_name} already exists (or its directory does)")
            self.metastore.rename_table((db, name), (new_db, new_name))

    def _rename_rest_table(
        self, source: tuple[str, str], target: tuple[str, str], *, ignore_missing: bool
    ) -> None:
        assert self.rest is not None
        if not self.rest.table_exists(*source):
            if ignore_missing:
                return
            raise NoSuchTableError(f"table {'.'.join(source)} does not exist")
        if not self.rest.database_exists(target[0]):
            raise NoSuchDatabaseError(f"database {target[0]} does not exist")
        if self.rest.table_exists(*target):
            raise AlreadyExistsError(f"table {'.'.join(target)} already exists")
        self.rest.rename_table(source, target)

    def drop_table(self, identifier: str, *, ignore_missing: bool = False) -> None:
        db, name = parse_identifier(identifier)
        if self.rest is not None:
            try:
                self.rest.drop_table(db, name)
            except (NoSuchTableError, NoSuchDatabaseError):
                if not ignore_missing:
                    raise NoSuchTableError(f"table {db}.{name} does not exist") from None
            return
        root = self._table_path(db, name)
        with self.metastore.lock(db, name):
            if not self.metastore.table_exists(db, name):
                if ignore_missing:
                    return
                raise NoSuchTableError(f"table {db}.{name} does not exist")
            external = external_roots_of(self.io, root)
            self.metastore.drop_table(db, name)
            delete_external_roots(self.io, external, table_root=root, table=f"{db}.{name}")


def table_properties(schema: TableSchema) -> dict[str, str]:
    """What a JDBC catalog keeps of a table (Paimon's sync-all-properties): its options, and its
    primary, partition and bucket keys."""
    out = dict(schema.options)
    for key, cols in (
        ("primary-key", schema.primary_keys),
        ("partition", schema.partition_keys),
        ("bucket-key", schema.bucket_keys),
    ):
        if cols:
            out[key] = ",".join(cols)
    return out


def _with_extras(f: DataField, arrow: pa.Field, table_name: str) -> DataField:
    """The field with the comment and default value of its Arrow metadata; a default must cast to its type."""
    description, default = field_extras(arrow)
    if default is not None:
        try:
            default_scalar(f.type, default)
        except ValueError as e:
            raise SchemaMismatchError(f"table {table_name}: column {f.name!r}: {e}") from None
    return replace(f, description=description, default_value=default)


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
    fields = [_with_extras(f, arrow, table_name) for f, arrow in zip(fields, schema, strict=True)]
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
    check_format_types(
        table_schema.fields, CoreOptions.of(options, primary_key_table=bool(primary_key)), table=table_name
    )
    check_record_level_time_field(
        table_schema, CoreOptions.of(options, primary_key_table=bool(primary_key)), table=table_name
    )
    return table_schema
