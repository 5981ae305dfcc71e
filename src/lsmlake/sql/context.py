"""The state one SQL session carries (catalog, current database) and how it resolves table names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lsmlake.catalog import SYSTEM_TABLE_SPLITTER, Catalog
from lsmlake.errors import SqlError, UnsupportedError
from lsmlake.maintenance.branches import BRANCH_TABLE_PREFIX, parse_branch_suffix
from lsmlake.system.registry import SYSTEM_TABLES
from lsmlake.table import Table

DEFAULT_DATABASE = "default"
DEFAULT_CATALOG = "default_catalog"  # Flink's name for the catalog a session starts in


def open_data_table(catalog: Catalog, identifier: str) -> Table:
    """``catalog.get_table`` for a data table; a system table name is a bad argument here."""
    table = catalog.get_table(identifier)
    if not isinstance(table, Table):
        raise SqlError(f"{identifier} is a system table; name the data table instead")
    return table


@dataclass(frozen=True)
class TableName:
    """A resolved ``db.table`` with an optional system-table suffix (``files`` for ``t$files``)."""

    database: str
    table: str
    system: str | None = None

    @property
    def identifier(self) -> str:
        return f"{self.database}.{self.table}"

    def __str__(self) -> str:
        return self.identifier + (f"${self.system}" if self.system else "")


@dataclass
class SqlContext:
    """Catalog plus the database unqualified names refer to (changed by ``USE``); ``catalogs`` are the
    session's catalogs by name (``CREATE CATALOG``), ``catalog_name`` the one in use (``USE CATALOG``)."""

    catalog: Catalog
    database: str = DEFAULT_DATABASE
    catalog_name: str = DEFAULT_CATALOG
    catalogs: dict[str, Catalog] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.catalogs.setdefault(self.catalog_name, self.catalog)

    def name(self, parts: Sequence[str], *, allow_system: bool = True) -> TableName:
        """Resolve ``t``, ``db.t`` or ``catalog.db.t``, maybe ``t$files``; the catalog part must name
        the current catalog (another of the session's is refused: ``USE CATALOG`` it first)."""
        if not 1 <= len(parts) <= 3 or not all(parts):
            raise SqlError(f"bad table name {'.'.join(parts)!r}: expected [database.]table")
        if len(parts) == 3:
            self.check_catalog(parts[0], f"table {'.'.join(parts)}")
        database = parts[-2] if len(parts) >= 2 else self.database
        table, system = parts[-1], None
        if SYSTEM_TABLE_SPLITTER in table:
            table, _, system = table.partition(SYSTEM_TABLE_SPLITTER)
            branch, system = parse_branch_suffix(system)
            if branch is not None:
                table = f"{table}${BRANCH_TABLE_PREFIX}{branch}"  # a branch reads and writes like a table
            if system is None:
                return TableName(database, table, None)
            system = system.lower()
            if not allow_system:
                raise SqlError(f"system table {database}.{table}${system} is read-only")
            if SYSTEM_TABLE_SPLITTER in system:
                raise UnsupportedError(f"table {database}.{table}${system}: not a known system table")
            if system not in SYSTEM_TABLES:
                raise UnsupportedError(
                    f"system table {database}.{table}${system} is not supported; "
                    f"available: {', '.join('$' + s for s in SYSTEM_TABLES)}"
                )
        return TableName(database, table, system)

    def check_catalog(self, catalog: str, subject: str) -> None:
        """The catalog part of a qualified name must be the current catalog: an unknown one is an error
        (never silently the current one), another of the session's is refused."""
        if catalog == self.catalog_name:
            return
        if catalog not in self.catalogs:
            raise SqlError(
                f"{subject}: catalog {catalog} does not exist (known: {', '.join(sorted(self.catalogs))})"
            )
        raise UnsupportedError(
            f"{subject} is in catalog {catalog}, not in the current one ({self.catalog_name}): "
            f"USE CATALOG {catalog} first"
        )

    def database_name(self, parts: Sequence[str]) -> str:
        """Resolve ``db`` or ``catalog.db`` (the catalog checked as in ``name``)."""
        if not 1 <= len(parts) <= 2 or not all(parts):
            raise SqlError(f"bad database name {'.'.join(parts)!r}: expected [catalog.]database")
        if len(parts) == 2:
            self.check_catalog(parts[0], f"database {'.'.join(parts)}")
        return parts[-1]

    def table(self, name: TableName) -> Table:
        """The data table behind ``name`` (for ``t$files`` that is ``t``)."""
        return open_data_table(self.catalog, name.identifier)

    def ensure_database(self, database: str) -> None:
        """Create the ``default`` database on first use, as Paimon's catalogs do when they open."""
        if database == DEFAULT_DATABASE:
            self.catalog.create_database(database, exist_ok=True)
