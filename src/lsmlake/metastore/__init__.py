"""Metastores: where a catalog records databases and tables -- the warehouse directories, a JDBC database
(here), or a REST catalog server (``rest``: the catalog asks its client instead)."""

from __future__ import annotations

from lsmlake.catalog_options import JDBC, CatalogOptions
from lsmlake.core.fileio import FileIO
from lsmlake.metastore.base import DB_SUFFIX, Metastore, WarehousePaths
from lsmlake.metastore.filesystem import FilesystemMetastore
from lsmlake.metastore.jdbc import JdbcMetastore
from lsmlake.metastore.jdbc_config import JdbcConfig

__all__ = [
    "DB_SUFFIX",
    "FilesystemMetastore",
    "JdbcMetastore",
    "Metastore",
    "WarehousePaths",
    "open_metastore",
]


def open_metastore(options: CatalogOptions, io: FileIO, root: str) -> Metastore:
    """The metastore ``options`` name, on the warehouse ``root``; a JDBC one with ``lock.enabled``
    also guards the FileIO's create-only publishes (snapshots, schemas, tags) with the table's lock."""
    if options.metastore != JDBC:
        return FilesystemMetastore(io, root)
    metastore = JdbcMetastore(io, root, JdbcConfig.of(options.metastore_options))
    if metastore.lock_enabled:
        io.publish_lock = metastore.publish_lock
    return metastore
