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
# Paimon's other metastores: named so that asking for one says it is not available, instead of
# silently opening a filesystem catalog on the same warehouse
OTHER_METASTORES = ("jdbc", "rest", "hive")
KNOWN = (METASTORE, WAREHOUSE, f"{TABLE_DEFAULT_PREFIX}<table option>", *S3_OPTIONS)


@dataclass(frozen=True)
class CatalogOptions:
    """A catalog's checked options: ``storage`` for the FileIO, ``table_defaults`` for new tables."""

    storage: dict[str, str] = field(default_factory=dict)
    table_defaults: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def of(warehouse: str, options: Mapping[str, str] | None) -> CatalogOptions:
        """Check ``options`` for a catalog on ``warehouse``: an unknown key, another metastore or a
        different warehouse is refused, naming it."""
        storage: dict[str, str] = {}
        defaults: dict[str, str] = {}
        unknown: list[str] = []
        for raw_key, raw_value in (options or {}).items():
            key, value = str(raw_key), str(raw_value)
            if key == METASTORE:
                _check_metastore(value)
            elif key == WAREHOUSE:
                if value.rstrip("/") != str(warehouse).rstrip("/"):
                    raise InvalidOptionError(
                        f"catalog option 'warehouse' is {value!r}, but the catalog opens {warehouse!r}"
                    )
            elif key.startswith(TABLE_DEFAULT_PREFIX) and len(key) > len(TABLE_DEFAULT_PREFIX):
                defaults[key[len(TABLE_DEFAULT_PREFIX) :]] = value
            elif key.startswith("s3."):
                storage[key] = value
            else:
                unknown.append(key)
        if unknown:
            raise InvalidOptionError(f"unknown catalog option(s) {sorted(unknown)}; known: {', '.join(KNOWN)}")
        S3Settings.of(storage)  # names an unknown s3.* key, on any warehouse
        return CatalogOptions(storage, defaults)

    def table_options(self, options: Mapping[str, str] | None) -> dict[str, str]:
        """A new table's options: the catalog's ``table-default.*`` values under the given ones."""
        return {**self.table_defaults, **{str(k): str(v) for k, v in (options or {}).items()}}


def _check_metastore(value: str) -> None:
    name = value.strip().lower()
    if name == FILESYSTEM:
        return
    if name in OTHER_METASTORES:
        raise UnsupportedError(
            f"catalog option 'metastore' = {value!r}: only the filesystem metastore is available in "
            "lsmlake (tables, schemas and snapshots in the warehouse directories)"
        )
    raise InvalidOptionError(
        f"catalog option 'metastore' = {value!r} is not a metastore; Paimon's are "
        f"{', '.join((FILESYSTEM, *OTHER_METASTORES))}"
    )
