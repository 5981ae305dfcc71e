"""The catalog environment of a table whose catalog publishes its commits (Paimon's REST catalog)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from lsmlake.core.schema import TableSchema
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.snapshot import Snapshot


class CatalogEnvironment(Protocol):
    """What a table asks of a catalog that owns its snapshot and schema commits (Java Paimon's
    CatalogEnvironment with a RESTSnapshotCommit): the table's files are still read and written
    through its FileIO, but the catalog publishes each new snapshot and schema. Implementations are
    plain picklable data (a table handle travels to Ray workers)."""

    def commit_snapshot(
        self, root: str, snapshot: Snapshot, delta: Sequence[ManifestEntry], base_uuid: str | None = None
    ) -> bool:
        """Publish ``snapshot`` of the table (or branch) stored under ``root``, whose delta manifests
        hold ``delta`` (for the catalog's per-partition statistics), built on the snapshot of uuid
        ``base_uuid`` (None: no snapshot, or one without a uuid); False when its id was taken by
        another commit (the committer then rebases and retries)."""
        ...

    def latest_snapshot(self, root: str) -> tuple[bool, Snapshot | None]:
        """The catalog's latest snapshot of the table (or branch) stored under ``root``: (True, the
        snapshot or None when it has none), or (False, None) when the catalog keeps no record of it
        (the table's files then say)."""
        ...

    def create_branch(self, root: str, name: str, tag: str | None) -> None:
        """Create branch ``name`` of the table (or branch) stored under ``root``, from ``tag`` or empty."""
        ...

    def drop_branch(self, root: str, name: str) -> None: ...

    def rename_branch(self, root: str, name: str, target: str) -> None: ...

    def fast_forward(self, root: str, name: str) -> None:
        """Make the main table equal to branch ``name``."""
        ...

    def check_commit(self, root: str) -> None:
        """Refuse, before anything is written, commits the catalog would refuse for the table (or
        branch) stored under ``root``."""
        ...

    def rollback(self, root: str, *, snapshot_id: int | None, tag: str | None, from_snapshot: int) -> None:
        """Make a snapshot (``snapshot_id``) or a tag's the table's latest again, through the catalog,
        only while ``from_snapshot`` is still the latest."""
        ...

    def alter_table(self, root: str, changes: Sequence[Any]) -> TableSchema:
        """Apply schema changes to the table stored under ``root`` through the catalog; its new
        latest schema."""
        ...
