"""Where a table's files live, and which files a snapshot references (read once, cached)."""

from __future__ import annotations

import posixpath

from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import PathGuard, check_name, table_root_of
from lsmlake.core.paths import TablePaths, partition_directory
from lsmlake.errors import CorruptFileError
from lsmlake.maintenance.planning import SnapshotFiles
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import IndexFileMeta, IndexManifestEntry, read_index_manifest
from lsmlake.metadata.manifest import FileKind, ManifestEntry, live_files, read_manifest
from lsmlake.metadata.manifest_list import ManifestFileMeta, read_manifest_list
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.table_handle import TableHandle

STATISTICS_DIR = "statistics"


class FileLocator:
    """Paths of data, index, manifest and statistics files, resolved like Java's path factories."""

    def __init__(self, table: TableHandle) -> None:
        self.root = table_root_of(table.root.rstrip("/"))  # a branch's data files are the table's
        self.paths = TablePaths(self.root)
        schema, options = table.schema, table.options
        self.guard = PathGuard.of(table.io, self.root, options)
        self.schema, self.options = schema, options
        self.partition_types = [schema.field(k).type for k in schema.partition_keys]
        self.index_in_data_dir = options.get(CoreOptions.INDEX_FILE_IN_DATA_FILE_DIR)
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}

    def partition_values(self, partition: bytes) -> list[object]:
        if not self.partition_types:
            return []
        return deserialize_row(partition, self.partition_types)

    def partition_dir(self, partition: bytes) -> str:
        """``k=v/...`` relative to the table root (under `data-file.path-directory` when set)."""
        return partition_directory(self.schema, self.options, self.partition_values(partition))

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        found = self._bucket_dirs.get(key)
        if found is None:
            found = self.paths.bucket_dir(self.partition_dir(partition), bucket)
            self._bucket_dirs[key] = found
        return found

    def data_file(self, partition: bytes, bucket: int, f: DataFileMeta) -> str:
        """Its path on the table's filesystem (an external path confined to the external roots)."""
        if f.external_path:
            return self.guard.resolve(f.external_path, "", source=f"data file {f.file_name}")
        return posixpath.join(self.bucket_dir(partition, bucket), f.file_name)

    def data_file_with_extras(self, partition: bytes, bucket: int, f: DataFileMeta) -> list[str]:
        """The data file and its `_EXTRA_FILES` (which sit next to it)."""
        main = self.data_file(partition, bucket, f)
        directory = posixpath.dirname(main)
        return [main, *(posixpath.join(directory, x) for x in f.extra_files)]

    def entry_files(self, e: ManifestEntry) -> list[str]:
        return self.data_file_with_extras(e.partition, e.bucket, e.file)

    def manifest(self, name: str) -> str:
        return self.paths.manifest(name)

    def index_file(self, partition: bytes, bucket: int, meta: IndexFileMeta) -> str:
        if meta.external_path:
            return self.guard.resolve(meta.external_path, "", source=f"index file {meta.file_name}")
        if self.index_in_data_dir:
            return posixpath.join(self.bucket_dir(partition, bucket), meta.file_name)
        return self.paths.index_file(meta.file_name)

    def statistics(self, name: str) -> str:
        return posixpath.join(
            self.root, STATISTICS_DIR, check_name(name, source=f"table {self.root}", field="statistics")
        )


class SnapshotReader:
    """Collects the files snapshots reference; each manifest-kind file is read at most once."""

    def __init__(self, io: FileIO, locator: FileLocator) -> None:
        self.io = io
        self.locator = locator
        self._lists: dict[str, list[ManifestFileMeta] | None] = {}
        self._manifests: dict[str, list[ManifestEntry] | None] = {}
        self._indexes: dict[str, list[IndexManifestEntry] | None] = {}

    # -- cached reads; None = the file is gone
    def manifest_list(self, name: str) -> list[ManifestFileMeta] | None:
        if name not in self._lists:
            try:
                self._lists[name] = read_manifest_list(self.io, self.locator.manifest(name))
            except FileNotFoundError:
                self._lists[name] = None
        return self._lists[name]

    def manifest(self, name: str) -> list[ManifestEntry] | None:
        if name not in self._manifests:
            try:
                entries = read_manifest(self.io, self.locator.manifest(name))
            except FileNotFoundError:
                self._manifests[name] = None
            else:
                for e in entries:
                    if e.file.external_path:
                        self.locator.guard.external(
                            e.file.external_path, source=f"manifest {name}", field="_FILE._EXTERNAL_PATH"
                        )
                self._manifests[name] = entries
        return self._manifests[name]

    def index_manifest(self, name: str) -> list[IndexManifestEntry] | None:
        if name not in self._indexes:
            try:
                index_entries = read_index_manifest(self.io, self.locator.manifest(name))
            except FileNotFoundError:
                self._indexes[name] = None
            else:
                for ie in index_entries:
                    if ie.index_file.external_path:
                        self.locator.guard.external(
                            ie.index_file.external_path,
                            source=f"index manifest {name}",
                            field="_EXTERNAL_PATH",
                        )
                self._indexes[name] = index_entries
        return self._indexes[name]

    # -- per snapshot
    def _require(self, found: object, what: str, snapshot: Snapshot, strict: bool) -> bool:
        if found is None and strict:
            raise CorruptFileError(
                f"snapshot {snapshot.id} references {what}, which is missing; refusing to plan deletions"
            )
        return found is not None

    def _lists_of(self, snapshot: Snapshot) -> list[str]:
        names = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        if snapshot.changelog_manifest_list:
            names.append(snapshot.changelog_manifest_list)
        return names

    def _entries(self, list_name: str | None, snapshot: Snapshot, strict: bool) -> list[ManifestEntry]:
        if not list_name:
            return []
        metas = self.manifest_list(list_name)
        if not self._require(metas, f"manifest list {list_name}", snapshot, strict):
            return []
        out: list[ManifestEntry] = []
        for m in metas or ():
            entries = self.manifest(m.file_name)
            if self._require(entries, f"manifest {m.file_name}", snapshot, strict):
                out.extend(entries or ())
        return out

    def collect(
        self, snapshot: Snapshot, *, strict: bool, live: bool = False, mentioned: bool = False
    ) -> SnapshotFiles:
        """The files ``snapshot`` references. ``strict``: a missing metadata file is an error
        (for snapshots whose files are protected), else it is skipped (for snapshots being removed)."""
        loc = self.locator
        manifests: set[str] = set()
        for name in self._lists_of(snapshot):
            metas = self.manifest_list(name)
            if self._require(metas, f"manifest list {name}", snapshot, strict):
                manifests.add(loc.manifest(name))
                manifests.update(loc.manifest(m.file_name) for m in metas or ())
        index_files: set[str] = set()
        if snapshot.index_manifest:
            entries = self.index_manifest(snapshot.index_manifest)
            if self._require(entries, f"index manifest {snapshot.index_manifest}", snapshot, strict):
                manifests.add(loc.manifest(snapshot.index_manifest))
                index_files.update(
                    loc.index_file(e.partition, e.bucket, e.index_file)
                    for e in entries or ()
                    if e.kind == FileKind.ADD
                )
        statistics = {loc.statistics(snapshot.statistics)} if snapshot.statistics else set()

        delta = self._entries(snapshot.delta_manifest_list, snapshot, strict)
        added = {p for e in delta if e.kind == FileKind.ADD for p in loc.entry_files(e)}
        deleted = {p for e in delta if e.kind == FileKind.DELETE for p in loc.entry_files(e)} - added
        changelog_entries = self._entries(snapshot.changelog_manifest_list, snapshot, strict)
        changelog = {p for e in changelog_entries if e.kind == FileKind.ADD for p in loc.entry_files(e)}

        live_set: frozenset[str] | None = None
        mentioned_set: frozenset[str] | None = None
        if live or mentioned:
            base = self._entries(snapshot.base_manifest_list, snapshot, strict)
            if live:
                live_set = frozenset(p for e in live_files([*base, *delta]) for p in loc.entry_files(e))
            if mentioned:
                mentioned_set = frozenset(
                    p for e in [*base, *delta, *changelog_entries] for p in loc.entry_files(e)
                )
        return SnapshotFiles(
            snapshot_id=snapshot.id,
            manifest_files=frozenset(manifests),
            index_files=frozenset(index_files),
            statistics_files=frozenset(statistics),
            delta_added=frozenset(added),
            delta_deleted=frozenset(deleted),
            changelog_files=frozenset(changelog),
            live=live_set,
            mentioned=mentioned_set,
        )
