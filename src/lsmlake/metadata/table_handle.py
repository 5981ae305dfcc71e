"""The low-level table handle: what every layer below the facade needs of one table (frozen, picklable)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions, check_writable
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.metadata.catalog_env import CatalogEnvironment
from lsmlake.metadata.snapshot_manager import SnapshotManager

H = TypeVar("H", bound="TableHandle")


@dataclass(frozen=True)
class TableHandle:
    """One table's identity, storage, schema and dynamic options; holds no open handles.

    The ``Table`` facade is a subclass that adds the verbs (read, write, compact, ...); code below the
    facade takes a handle, so a ``Table`` can be passed wherever a handle is expected."""

    name: str
    io: FileIO
    root: str
    schema: TableSchema
    dynamic_options: Mapping[str, str] = field(default_factory=dict)
    catalog_env: CatalogEnvironment | None = None
    """Set when the catalog publishes the table's snapshots and schemas (a REST catalog); None when
    they are published straight to the table's files."""

    @property
    def options(self) -> CoreOptions:
        """The schema's options with the dynamic ones on top."""
        merged = dict(self.schema.effective_options)
        merged.update(self.dynamic_options)
        return CoreOptions.of(merged, primary_key_table=bool(self.schema.primary_keys))

    @property
    def paths(self) -> TablePaths:
        return TablePaths(self.root)

    @property
    def snapshot_manager(self) -> SnapshotManager:
        return SnapshotManager(self.io, self.root, catalog_env=self.catalog_env)

    def check_committable(self) -> None:
        """Refuse up front a write or compaction whose commit the table's catalog would refuse (a REST
        catalog commits the main branch only), or that the table's stored options ask lsmlake to do
        differently than it can (a table made by Java), before any file is written."""
        check_writable(self.options, table=self.name, dynamic_keys=self.dynamic_options)
        if self.catalog_env is not None:
            self.catalog_env.check_commit(self.root)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    def with_dynamic_options(self: H, options: Mapping[str, str]) -> H:
        """This table (the same class) with ``options`` added to its dynamic options, unvalidated."""
        return replace(self, dynamic_options={**self.dynamic_options, **options})
