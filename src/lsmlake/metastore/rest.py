"""The REST catalog: databases and tables kept by a server speaking Paimon's REST catalog API."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsmlake.catalog_options import REST_HEADER_PREFIX, TABLE_DEFAULT_PREFIX, WAREHOUSE, CatalogOptions
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import table_root_of
from lsmlake.core.paths import MAIN_BRANCH
from lsmlake.core.schema import TableSchema, schema_file_name
from lsmlake.errors import (
    AlreadyExistsError,
    CommitConflictError,
    InvalidOptionError,
    MetastoreError,
    NoSuchDatabaseError,
    NoSuchResourceError,
    NoSuchSnapshotError,
    NoSuchTableError,
    UnsupportedError,
)
from lsmlake.maintenance.branches import BRANCH_TABLE_PREFIX, branch_of
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.snapshot import Snapshot, snapshot_from_json, snapshot_to_json
from lsmlake.metastore import rest_json as rj
from lsmlake.metastore.rest_client import RestClient, encode, unknown_commit
from lsmlake.metastore.rest_dlf import DlfSigner, dlf_signer
from lsmlake.metastore.rest_stats import PartitionNaming, partition_statistics
from lsmlake.metastore.rest_token import TokenFileIO, TokenSource
from lsmlake.schema_change.changes import CHANGE_TYPES
from lsmlake.table import Table

PREFIX = "prefix"  # RESTCatalogInternalOptions.PREFIX: the server's path prefix, from /v1/config
DATA_TOKEN_ENABLED = "data-token.enabled"
BEARER = "bear"  # Paimon's token.provider for a bearer token
DLF = "dlf"  # Paimon's token.provider for DLF-signed requests
_LATEST_MOVED = re.compile(r"Latest snapshot \S+ is not \S+")


@dataclass(frozen=True)
class RestPaths:
    """Paimon's ResourcePaths: ``/v1/<prefix>/databases/<db>/tables/<table>/...``, segments encoded."""

    prefix: str = ""

    def _join(self, *parts: str) -> str:
        return "/" + "/".join(p for p in ("v1", encode(self.prefix) if self.prefix else "", *parts) if p)

    def databases(self) -> str:
        return self._join("databases")

    def database(self, db: str) -> str:
        return self._join("databases", encode(db))

    def tables(self, db: str) -> str:
        return self._join("databases", encode(db), "tables")

    def table(self, db: str, table: str) -> str:
        return self._join("databases", encode(db), "tables", encode(table))

    def commit(self, db: str, table: str) -> str:
        return self._join("databases", encode(db), "tables", encode(table), "commit")

    def rollback(self, db: str, table: str) -> str:
        return self._join("databases", encode(db), "tables", encode(table), "rollback")

    def snapshot(self, db: str, table: str) -> str:
        return self._join("databases", encode(db), "tables", encode(table), "snapshot")

    def token(self, db: str, table: str) -> str:
        return self._join("databases", encode(db), "tables", encode(table), "token")

    def branches(self, db: str, table: str) -> str:
        return self._join("databases", encode(db), "tables", encode(table), "branches")

    def branch(self, db: str, table: str, branch: str) -> str:
        return self._join("databases", encode(db), "tables", encode(table), "branches", encode(branch))

    def rename_table(self) -> str:
        return self._join("tables", "rename")


@dataclass(frozen=True)
class RestTableEnv:
    """A REST catalog table's commit environment (a CatalogEnvironment): snapshots go to the server's
    commit endpoint (a branch's to that of ``<table>$branch_<name>``, as the REST API names it),
    schema changes to its alter endpoint (main branch only), branches are created, dropped, renamed and
    fast-forwarded through its branch endpoints."""

    client: RestClient
    paths: RestPaths
    database: str
    table: str
    table_id: str
    root: str
    partitions: PartitionNaming

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"

    def _object(self, root: str) -> str:
        """The REST object name of the table or branch stored under ``root``: ``t`` or ``t$branch_b``."""
        trimmed = root.rstrip("/")
        if table_root_of(trimmed) != self.root.rstrip("/"):
            raise UnsupportedError(
                f"table {self.name}: {root} is not this table's directory or one of its branches'"
            )
        branch = branch_of(trimmed)
        return self.table if branch == MAIN_BRANCH else f"{self.table}${BRANCH_TABLE_PREFIX}{branch}"

    def _check_root(self, root: str, action: str) -> None:
        if root.rstrip("/") != self.root.rstrip("/"):
            raise UnsupportedError(
                f"table {self.name}: the REST catalog client cannot {action} on a branch ({root}): the "
                "server's alter and rollback endpoints are used for the main branch only"
            )

    def check_commit(self, root: str) -> None:
        self._object(root)

    def commit_snapshot(
        self, root: str, snapshot: Snapshot, delta: Sequence[ManifestEntry], base_uuid: str | None = None
    ) -> bool:
        obj = self._object(root)
        body = {
            "tableId": self.table_id,
            # the uuid of the snapshot the commit was built on (CommitTableRequest.baseSnapshotUuid,
            # Paimon 2.0): a 2.0 server refuses the commit when its latest snapshot is another one; a
            # 1.4 server ignores the field
            "baseSnapshotUuid": base_uuid,
            "snapshot": snapshot_to_json(snapshot),
            "statistics": partition_statistics(delta, self.partitions),
        }
        what = f"table {self.database}.{obj}"
        answer = self.client.post(self.paths.commit(self.database, obj), body, what=what, commit=True)
        if not isinstance(answer, Mapping) or not isinstance(answer.get("success"), bool):
            raise unknown_commit(f"table {self.name}", f"the commit answer is malformed: {answer!r}")
        return bool(answer["success"])

    def latest_snapshot(self, root: str) -> tuple[bool, Snapshot | None]:
        """The server's record of the latest snapshot (GET .../snapshot), as Java's RESTCatalog reads it
        (its SnapshotLoader): (True, None) when the server says there is none, (False, None) when the
        server keeps no snapshots (HTTP 501: the table's files say)."""
        obj = self._object(root)
        what = f"table {self.database}.{obj}"
        try:
            answer = self.client.get(self.paths.snapshot(self.database, obj), what=what)
        except UnsupportedError:
            return False, None
        except NoSuchSnapshotError:
            return True, None
        record = answer.get("snapshot") if isinstance(answer, Mapping) else None
        snapshot = record.get("snapshot") if isinstance(record, Mapping) else None
        if not isinstance(snapshot, Mapping):
            raise MetastoreError(
                f"REST catalog: {what}: the latest-snapshot answer is not a GetTableSnapshotResponse: "
                f"{str(answer)[:200]!r}"
            )
        return True, snapshot_from_json(snapshot, name=f"the REST catalog's latest snapshot of {what}")

    def rollback(self, root: str, *, snapshot_id: int | None, tag: str | None, from_snapshot: int) -> None:
        # main only: Paimon 1.4.2's server rolls back its main table object whatever branch is named
        self._check_root(root, "roll back")
        obj = self.table
        instant = (
            {"type": "tag", "tagName": tag}
            if tag is not None
            else {"type": "snapshot", "snapshotId": snapshot_id}
        )
        body = {"instant": instant, "fromSnapshot": from_snapshot}
        try:
            self.client.post(
                self.paths.rollback(self.database, obj), body, what=f"table {self.database}.{obj}"
            )
        except MetastoreError as e:
            # the server checks fromSnapshot against its latest (RollbackTableRequest) and says
            # "Latest snapshot X is not Y" when another commit landed since
            if not _LATEST_MOVED.search(str(e)):
                raise
            raise CommitConflictError(
                f"table {self.name}: another commit landed after snapshot {from_snapshot} while rolling "
                f"back ({e}); nothing was rolled back, retry"
            ) from None

    def alter_table(self, root: str, changes: Sequence[Any]) -> TableSchema:
        self._check_root(root, "alter the schema")
        bad = [c for c in changes if not isinstance(c, CHANGE_TYPES)]
        if bad:
            raise TypeError(f"table {self.name}: not schema changes: {bad!r}")
        body = {"changes": [rj.change_json(c) for c in changes]}
        self.client.post(self.paths.table(self.database, self.table), body, what=f"table {self.name}")
        answer = self.client.get(self.paths.table(self.database, self.table), what=f"table {self.name}")
        return rj.table_response(answer, name=self.name)[2]

    # -- branches (BranchesApi: create, drop, rename, fast-forward)
    def _branch_of_table(self, root: str, action: str) -> None:
        if table_root_of(root.rstrip("/")) != self.root.rstrip("/"):
            raise UnsupportedError(f"table {self.name}: cannot {action}: {root} is not this table's")

    def create_branch(self, root: str, name: str, tag: str | None) -> None:
        obj = self._object(root)
        body = {"branch": name, "fromTag": tag}
        self.client.post(self.paths.branches(self.database, obj), body, what=f"table {self.database}.{obj}")

    def drop_branch(self, root: str, name: str) -> None:
        self._branch_of_table(root, "drop a branch")
        self.client.delete(self.paths.branch(self.database, self.table, name), what=f"table {self.name}")

    def rename_branch(self, root: str, name: str, target: str) -> None:
        self._branch_of_table(root, "rename a branch")
        path = self.paths.branch(self.database, self.table, name) + "/rename"
        self.client.post(path, {"toBranch": target}, what=f"table {self.name}")

    def fast_forward(self, root: str, name: str) -> None:
        self._branch_of_table(root, "fast-forward")
        path = self.paths.branch(self.database, self.table, name) + "/forward"
        self.client.post(path, {}, what=f"table {self.name}")


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
        """Nothing held open: each request opens its own connection."""
