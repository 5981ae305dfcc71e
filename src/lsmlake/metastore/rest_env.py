"""A REST catalog table's server side: Paimon's REST resource paths and the table's commit environment."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsmlake.core.path_guard import table_root_of
from lsmlake.core.paths import MAIN_BRANCH
from lsmlake.core.schema import TableSchema
from lsmlake.errors import CommitConflictError, MetastoreError, NoSuchSnapshotError, UnsupportedError
from lsmlake.maintenance.branches import BRANCH_TABLE_PREFIX, branch_of
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.snapshot import Snapshot, snapshot_from_json, snapshot_to_json
from lsmlake.metastore import rest_json as rj
from lsmlake.metastore.rest_client import RestClient, encode, unknown_commit
from lsmlake.metastore.rest_stats import PartitionNaming, partition_statistics
from lsmlake.schema_change.changes import CHANGE_TYPES

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
