"""Catalog options: what a catalog accepts (storage settings, table defaults, the metastore), checked up front."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lsmlake.core.object_store import S3_OPTIONS, S3Settings
from lsmlake.errors import InvalidOptionError, UnsupportedError

METASTORE = "metastore"
WAREHOUSE = "warehouse"
TABLE_DEFAULT_PREFIX = "table-default."
FILESYSTEM = "filesystem"
JDBC = "jdbc"
# Paimon's other metastores: named so that asking for one says it is not available, instead of
# silently opening a filesystem catalog on the same warehouse
OTHER_METASTORES = ("rest", "hive")
# the options of Paimon's JDBC catalog (JdbcCatalogOptions and the lock options of CatalogOptions);
# ``jdbc.<property>`` goes to the database driver
JDBC_PREFIX = "jdbc."
JDBC_OPTIONS = (
    "uri",
    "catalog-key",
    "lock.enabled",
    "lock-acquire-timeout",
    "lock-check-max-sleep",
    "lock-key-max-length",
    "sync-all-properties",
)
KNOWN = (METASTORE, WAREHOUSE, f"{TABLE_DEFAULT_PREFIX}<table option>", *S3_OPTIONS)


@dataclass(frozen=True)
class CatalogOptions:
    """A catalog's checked options: ``storage`` for the FileIO, ``table_defaults`` for new tables,
    ``metastore`` and its own options (``metastore_options``: the JDBC catalog's, unparsed)."""

    storage: dict[str, str] = field(default_factory=dict)
    table_defaults: dict[str, str] = field(default_factory=dict)
    metastore: str = FILESYSTEM
    metastore_options: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def of(warehouse: str, options: Mapping[str, str] | None) -> CatalogOptions:
        """Check ``options`` for a catalog on ``warehouse``: an unknown key, another metastore or a
        different warehouse is refused, naming it."""
        given = {str(k): str(v) for k, v in (options or {}).items()}
        metastore = _check_metastore(given.get(METASTORE, FILESYSTEM))
        storage: dict[str, str] = {}
        defaults: dict[str, str] = {}
        own: dict[str, str] = {}
        unknown: list[str] = []
        for key, value in given.items():
            if key == METASTORE:
                continue
            if key == WAREHOUSE:
                if value.rstrip("/") != str(warehouse).rstrip("/"):
                    raise InvalidOptionError(
                        f"catalog option 'warehouse' is {value!r}, but the catalog opens {warehouse!r}"
                    )
            elif key.startswith(TABLE_DEFAULT_PREFIX) and len(key) > len(TABLE_DEFAULT_PREFIX):
                defaults[key[len(TABLE_DEFAULT_PREFIX) :]] = value
            elif key.startswith("s3."):
                storage[key] = value
            elif metastore == JDBC and (key in JDBC_OPTIONS or key.startswith(JDBC_PREFIX)):
                own[key] = value
            else:
                unknown.append(key)
        if unknown:
            known = KNOWN + ((*JDBC_OPTIONS, f"{JDBC_PREFIX}<driver property>") if metastore == JDBC else ())
            hint = "" if metastore == JDBC else f" (the JDBC catalog's options need {METASTORE}={JDBC})"
            raise InvalidOptionError(
                f"unknown catalog option(s) {sorted(unknown)}; known: {', '.join(known)}{hint}"
            )
        S3Settings.of(storage)  # names an unknown s3.* key, on any warehouse
        return CatalogOptions(storage, defaults, metastore, own)

    def table_options(self, options: Mapping[str, str] | None) -> dict[str, str]:
        """A new table's options: the catalog's ``table-default.*`` values under the given ones."""
        return {**self.table_defaults, **{str(k): str(v) for k, v in (options or {}).items()}}


def _check_metastore(value: str) -> str:
    name = value.strip().lower()
    if name in (FILESYSTEM, JDBC):
        return name
    if name in OTHER_METASTORES:
        raise UnsupportedError(
            f"catalog option 'metastore' = {value!r}: lsmlake offers the filesystem and jdbc metastores "
            "only (the REST and Hive catalogs are not implemented)"
        )
    raise InvalidOptionError(
        f"catalog option 'metastore' = {value!r} is not a metastore; Paimon's are "
        f"{', '.join((FILESYSTEM, JDBC, *OTHER_METASTORES))}"
    )
