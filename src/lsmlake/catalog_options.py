"""Catalog options: what a catalog accepts (storage settings, table defaults, the metastore), checked up front."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lsmlake.core.object_store import S3_OPTIONS, S3Settings
from lsmlake.core.redact import redact_options
from lsmlake.errors import InvalidOptionError, UnsupportedError

METASTORE = "metastore"
WAREHOUSE = "warehouse"
TABLE_DEFAULT_PREFIX = "table-default."
FILESYSTEM = "filesystem"
JDBC = "jdbc"
REST = "rest"
# Paimon's other metastores: named so that asking for one says it is not available, instead of
# silently opening a filesystem catalog on the same warehouse
OTHER_METASTORES = ("hive",)
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
# the options of Paimon's REST catalog (RESTCatalogOptions) that lsmlake's client honours: the server's
# ``uri``, bearer-token or DLF auth, data tokens, and ``header.<name>`` headers sent with every request
REST_HEADER_PREFIX = "header."
REST_OPTIONS = (
    "uri",
    "token.provider",
    "token",
    "data-token.enabled",
    "dlf.access-key-id",
    "dlf.access-key-secret",
    "dlf.security-token",
    "dlf.region",
    "dlf.token-path",
    "dlf.token-loader",
    "dlf.signing-algorithm",
)
KNOWN = (METASTORE, WAREHOUSE, f"{TABLE_DEFAULT_PREFIX}<table option>", *S3_OPTIONS)


@dataclass(frozen=True)
class CatalogOptions:
    """A catalog's checked options: ``storage`` for the FileIO, ``table_defaults`` for new tables,
    ``metastore`` and its own options (``metastore_options``: the JDBC or REST catalog's, unparsed)."""

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
                if metastore == REST:
                    own[key] = value  # a REST catalog's warehouse is a name the server resolves
                if value.rstrip("/") != str(warehouse).rstrip("/") and not (
                    metastore == REST and _is_http(str(warehouse))
                ):
                    raise InvalidOptionError(
                        f"catalog option 'warehouse' is {value!r}, but the catalog opens {warehouse!r}"
                    )
            elif key.startswith(TABLE_DEFAULT_PREFIX) and len(key) > len(TABLE_DEFAULT_PREFIX):
                defaults[key[len(TABLE_DEFAULT_PREFIX) :]] = value
            elif key.startswith("s3."):
                storage[key] = value
            elif _own_option(metastore, key):
                own[key] = value
            else:
                unknown.append(key)
        if unknown:
            known = KNOWN + _METASTORE_KNOWN.get(metastore, ())
            hint = (
                ""
                if metastore != FILESYSTEM
                else f" (the JDBC and REST catalogs' options need {METASTORE}={JDBC} or {METASTORE}={REST})"
            )
            raise InvalidOptionError(
                f"unknown catalog option(s) {sorted(unknown)}; known: {', '.join(known)}{hint}"
            )
        S3Settings.of(storage)  # names an unknown s3.* key, on any warehouse
        return CatalogOptions(storage, defaults, metastore, own)

    def __repr__(self) -> str:  # secret values (token, passwords, headers, s3 keys) masked
        return (
            f"CatalogOptions(storage={redact_options(self.storage)!r}, table_defaults={self.table_defaults!r}, "
            f"metastore={self.metastore!r}, metastore_options={redact_options(self.metastore_options)!r})"
        )

    def table_options(self, options: Mapping[str, str] | None) -> dict[str, str]:
        """A new table's options: the catalog's ``table-default.*`` values under the given ones."""
        return {**self.table_defaults, **{str(k): str(v) for k, v in (options or {}).items()}}


_METASTORE_KNOWN = {
    JDBC: (*JDBC_OPTIONS, f"{JDBC_PREFIX}<driver property>"),
    REST: (*REST_OPTIONS, f"{REST_HEADER_PREFIX}<HTTP header>"),
}


def _is_http(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def _own_option(metastore: str, key: str) -> bool:
    """Whether ``key`` is an option of the ``metastore`` catalog itself."""
    if metastore == JDBC:
        return key in JDBC_OPTIONS or key.startswith(JDBC_PREFIX)
    if metastore == REST:
        return key in REST_OPTIONS or key.startswith(REST_HEADER_PREFIX)
    return False


def _check_metastore(value: str) -> str:
    name = value.strip().lower()
    if name in (FILESYSTEM, JDBC, REST):
        return name
    if name in OTHER_METASTORES:
        raise UnsupportedError(
            f"catalog option 'metastore' = {value!r}: lsmlake offers the filesystem, jdbc and rest "
            "metastores only (the Hive catalog is not implemented)"
        )
    raise InvalidOptionError(
        f"catalog option 'metastore' = {value!r} is not a metastore; Paimon's are "
        f"{', '.join((FILESYSTEM, JDBC, REST, *OTHER_METASTORES))}"
    )
