"""The REST catalog: databases and tables kept by a server speaking Paimon's REST catalog API."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from lsmlake.catalog_options import REST_HEADER_PREFIX, TABLE_DEFAULT_PREFIX, WAREHOUSE, CatalogOptions
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema, schema_file_name
from lsmlake.errors import (
    AlreadyExistsError,
    InvalidOptionError,
    MetastoreError,
    NoSuchDatabaseError,
    NoSuchResourceError,
    NoSuchTableError,
    UnsupportedError,
)
from lsmlake.metastore import rest_json as rj
from lsmlake.metastore.rest_client import RestClient
from lsmlake.metastore.rest_dlf import DlfSigner, dlf_signer
from lsmlake.metastore.rest_env import RestPaths, RestTableEnv
from lsmlake.metastore.rest_stats import PartitionNaming
from lsmlake.metastore.rest_token import TokenFileIO, TokenSource
from lsmlake.table import Table

PREFIX = "prefix"  # RESTCatalogInternalOptions.PREFIX: the server's path prefix, from /v1/config
DATA_TOKEN_ENABLED = "data-token.enabled"
BEARER = "bear"  # Paimon's token.provider for a bearer token
DLF = "dlf"  # Paimon's token.provider for DLF-signed requests


def _auth(uri: str, own: Mapping[str, str]) -> tuple[dict[str, str], DlfSigner | None]:
    """The fixed auth headers (a bearer token) or the signer of every request (DLF)."""
    provider = own.get("token.provider")
    token = own.get("token")
    if provider is None:
        if token is None:
            return {}, None
        provider = BEARER
    if provider.strip().lower() == DLF:
        return {}, dlf_signer(uri, own)
    if provider.strip().lower() != BEARER:
        raise UnsupportedError(
            f"catalog option 'token.provider' = {provider!r}: lsmlake's REST client offers 'bear' (a bearer "
            "token in the option 'token') and 'dlf' (requests signed with a DLF access key) only"
        )
    if not token:
        raise InvalidOptionError(
            "catalog option 'token.provider' is 'bear' but the option 'token' is not set"
        )
    return {"Authorization": f"Bearer {token}"}, None


def _prefixed(options: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in options.items() if k.startswith(prefix) and len(k) > len(prefix)}


class RestCatalogClient:
    """What a Catalog with ``metastore=rest`` asks its server; table files are read and written through
    lsmlake's FileIO at the paths the server gives, commits and schema changes go to the server."""

    def __init__(self, warehouse: str | None, options: CatalogOptions, given: Mapping[str, str]) -> None:
        own = options.metastore_options
        positional_uri = warehouse is not None and warehouse.startswith(("http://", "https://"))
        uri = own.get("uri") or (warehouse if positional_uri else None)
        if not uri:
            raise InvalidOptionError(
                "metastore=rest needs the catalog option 'uri' (the REST catalog server's http(s) URL)"
            )
        if not uri.startswith(("http://", "https://")):
            raise InvalidOptionError(f"catalog option 'uri' = {uri!r} is not an http:// or https:// URL")
        if positional_uri and uri != warehouse:
            raise InvalidOptionError(f"catalog option 'uri' is {uri!r}, but the catalog opens {warehouse!r}")
        # Catalog("http://server", options={"warehouse": name, ...}) or Catalog(name, {"uri": ...})
        self.warehouse = own.get(WAREHOUSE) or (None if positional_uri else warehouse)
        auth, signer = _auth(uri, own)
        headers = {**_prefixed(own, REST_HEADER_PREFIX), **auth}
        client = RestClient(uri, tuple(sorted(headers.items())), signer=signer)
        query = {WAREHOUSE: self.warehouse} if self.warehouse else {}
        try:
            config = client.get("/v1/config", query, what=f"warehouse {self.warehouse!r}")
        except (NoSuchTableError, NoSuchDatabaseError, NoSuchResourceError) as e:  # a 404: no such warehouse
            raise InvalidOptionError(
                f"REST catalog at {uri} does not serve the warehouse {self.warehouse!r} (catalog option "
                f"'warehouse'): {e}"
            ) from None
        if not isinstance(config, Mapping):
            raise UnsupportedError(
                f"REST catalog at {uri}: /v1/config answered {config!r}, not a ConfigResponse"
            )
        defaults = {str(k): str(v) for k, v in (config.get("defaults") or {}).items() if v is not None}
        overrides = {str(k): str(v) for k, v in (config.get("overrides") or {}).items() if v is not None}
        # ConfigResponse.merge: the server's defaults, under the client's options, under its overrides
        self.merged = {**defaults, **{str(k): str(v) for k, v in given.items()}, **overrides}
        self.client = client.with_headers(_prefixed(self.merged, REST_HEADER_PREFIX))
        self.paths = RestPaths(self.merged.get(PREFIX, ""))
        self.table_defaults = _prefixed(self.merged, TABLE_DEFAULT_PREFIX)
        self.storage = {k: v for k, v in self.merged.items() if k.startswith("s3.")}
        self.data_token = self.merged.get(DATA_TOKEN_ENABLED, "false").strip().lower() == "true"

    # -- databases
    def database_exists(self, database: str) -> bool:
        try:
            self.client.get(self.paths.database(database), what=f"database {database}")
        except NoSuchDatabaseError:
            return False
        return True

    def create_database(self, database: str) -> bool:
        try:
            self.client.post(
                self.paths.databases(), {"name": database, "options": {}}, what=f"database {database}"
            )
        except AlreadyExistsError:
            return False
        return True

    def _paged(self, path: str, key: str, what: str) -> list[str]:
        out: list[str] = []
        token: str | None = None
        while True:
            answer = self.client.get(path, {"pageToken": token} if token else None, what=what) or {}
            items = answer.get(key) or [] if isinstance(answer, Mapping) else None
            token = answer.get("nextPageToken") if isinstance(answer, Mapping) else None
            if not isinstance(items, list) or not isinstance(token, str | None):
                raise MetastoreError(
                    f"REST catalog: GET {path} answered {str(answer)[:200]!r}, not a page of {key!r} "
                    "(an object with a list and an optional nextPageToken)"
                )
            out += [str(x) for x in items]
            if not token:
                return sorted(out)

    def list_databases(self) -> list[str]:
        return self._paged(self.paths.databases(), "databases", "the databases")

    def drop_database(self, database: str) -> None:
        self.client.delete(self.paths.database(database), what=f"database {database}")

    # -- tables
    def list_tables(self, database: str) -> list[str]:
        return self._paged(self.paths.tables(database), "tables", f"database {database}")

    def table_exists(self, database: str, table: str) -> bool:
        try:
            self.client.get(self.paths.table(database, table), what=f"table {database}.{table}")
        except (NoSuchTableError, NoSuchDatabaseError):
            return False
        return True

    def open_table(self, database: str, table: str) -> Table:
        name = f"{database}.{table}"
        answer = self.client.get(self.paths.table(database, table), what=f"table {name}")
        table_id, path, schema = rj.table_response(answer, name=name)
        io, root = FileIO.for_uri(path, self.storage)
        if self.data_token:  # the table's files are reached with the server's credentials for it
            source = TokenSource(self.client, self.paths.token(database, table), f"table {name}")
            io = TokenFileIO(path, self.storage, source)
        if not io.is_file(posixpath.join(root, "schema", schema_file_name(schema.id))):
            # reading a directory without the table would silently give no rows
            raise NoSuchTableError(
                f"table {name}: the REST catalog gives its path as {path}, which holds no schema-{schema.id} "
                "file (the server's record and the table's files disagree)"
            )
        table_options = CoreOptions.of(
            dict(schema.effective_options), primary_key_table=bool(schema.primary_keys)
        )
        naming = PartitionNaming(
            tuple(schema.partition_keys),
            tuple(schema.field(k).type for k in schema.partition_keys),
            table_options.partition_default_name,
            table_options.partition_legacy_name,
        )
        env = RestTableEnv(self.client, self.paths, database, table, table_id, root, naming)
        return Table(name, io, root, schema, catalog_env=env)

    def create_table(self, database: str, table: str, schema: TableSchema) -> None:
        body = {"identifier": rj.identifier(database, table), "schema": rj.schema_request(schema)}
        self.client.post(self.paths.tables(database), body, what=f"database {database}")

    def drop_table(self, database: str, table: str) -> None:
        self.client.delete(self.paths.table(database, table), what=f"table {database}.{table}")

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        body = {"source": rj.identifier(*source), "destination": rj.identifier(*target)}
        self.client.post(self.paths.rename_table(), body, what=f"table {'.'.join(source)}")

    def close(self) -> None:
        """Close the kept-alive connections of the GET requests (another request opens a new one)."""
        self.client.pool.close()
