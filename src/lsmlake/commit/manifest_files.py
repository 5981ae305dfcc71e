"""Write manifest files with their list metadata, and merge small manifests so metadata stays bounded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsmlake.core.binary_row import deserialize_row, serialize_row
from lsmlake.core.fileio import FileIO
from lsmlake.core.paths import TablePaths
from lsmlake.core.types import DataType
from lsmlake.metadata.manifest import FileKind, ManifestEntry, merge_entries, read_manifest, write_manifest
from lsmlake.metadata.manifest_list import ManifestFileMeta, write_manifest_list
from lsmlake.metadata.stats import EMPTY_STATS, SimpleStats

# Entries per manifest file before rolling to the next (a data-file entry is ~0.3-1 KB of Avro).
ENTRIES_PER_MANIFEST = 16_384


def partition_stats(entries: Sequence[ManifestEntry], types: Sequence[DataType]) -> SimpleStats:
    """Min/max/null counts of the partition values of ``entries`` ("all" mode, counted per entry)."""
    if not types:
        return EMPTY_STATS
    decoded = {p: deserialize_row(p, list(types)) for p in {e.partition for e in entries}}
    mins: list[object | None] = []
    maxs: list[object | None] = []
    nulls: list[int | None] = []
    for i in range(len(types)):
        values = [row[i] for row in decoded.values() if row[i] is not None]
        mins.append(min(values) if values else None)  # type: ignore[type-var]
        maxs.append(max(values) if values else None)  # type: ignore[type-var]
        nulls.append(sum(1 for e in entries if decoded[e.partition][i] is None))
    nullable = [t.copy(nullable=True) for t in types]
    return SimpleStats(serialize_row(mins, nullable), serialize_row(maxs, nullable), tuple(nulls))


@dataclass(frozen=True)
class ManifestWriter:
    """Writes manifest files for one table; every file name comes from ``paths``."""

    io: FileIO
    paths: TablePaths
    partition_types: tuple[DataType, ...]
    codec: str
    schema_id: int

    def write(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        metas = []
        for start in range(0, len(entries), ENTRIES_PER_MANIFEST):
            metas.append(self._write_one(entries[start : start + ENTRIES_PER_MANIFEST]))
        return metas

    def _write_one(self, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        name = self.paths.new_manifest_name()
        size = write_manifest(self.io, self.paths.manifest(name), list(entries), codec=self.codec)
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=sum(1 for e in entries if e.kind == FileKind.ADD),
            num_deleted_files=sum(1 for e in entries if e.kind == FileKind.DELETE),
            partition_stats=partition_stats(entries, self.partition_types),
            schema_id=max((e.file.schema_id for e in entries), default=self.schema_id),
            min_bucket=min(buckets),
            max_bucket=max(buckets),
            min_level=min(levels),
            max_level=max(levels),
        )

    def merge(
        self, metas: Sequence[ManifestFileMeta], *, target_size: int, min_count: int, full_threshold: int
    ) -> tuple[list[ManifestFileMeta], list[str]]:
        """Merge manifests as Paimon does; returns the new list and the names of files it wrote."""
        must_change = sum(m.file_size for m in metas if m.num_deleted_files > 0 or m.file_size < target_size)
        if must_change >= full_threshold:
            return self._full(metas)
        return self._minor(metas, target_size=target_size, min_count=min_count)

    def _read(self, metas: Sequence[ManifestFileMeta]) -> list[ManifestEntry]:
        out: list[ManifestEntry] = []
        for m in metas:
            out.extend(read_manifest(self.io, self.paths.manifest(m.file_name)))
        return out

    def _full(self, metas: Sequence[ManifestFileMeta]) -> tuple[list[ManifestFileMeta], list[str]]:
        merged = [e for e in merge_entries(self._read(metas)) if e.kind == FileKind.ADD]
        written = self.write(merged)
        return written, [m.file_name for m in written]

    def _minor(
        self, metas: Sequence[ManifestFileMeta], *, target_size: int, min_count: int
    ) -> tuple[list[ManifestFileMeta], list[str]]:
        result: list[ManifestFileMeta] = []
        written: list[str] = []
        run: list[ManifestFileMeta] = []
        run_size = 0
        for m in metas:
            run.append(m)
            run_size += m.file_size
            if run_size >= target_size:
                self._flush_run(run, result, written)
                run, run_size = [], 0
        if len(run) >= min_count:
            self._flush_run(run, result, written)
        else:
            result.extend(run)
        return result, written

    def _flush_run(
        self, run: list[ManifestFileMeta], result: list[ManifestFileMeta], written: list[str]
    ) -> None:
        if len(run) == 1:
            result.extend(run)
            return
        new = self.write(merge_entries(self._read(run)))
        result.extend(new)
        written.extend(m.file_name for m in new)


class DeltaLists:
    """The delta (and changelog) manifests and manifest lists of one commit's changes, written once per
    distinct set of entries (a rebase changes them) and remembered across its attempts."""

    def __init__(self, manifests: ManifestWriter) -> None:
        self.manifests = manifests
        self._lists: dict[tuple[ManifestEntry, ...], tuple[tuple[str, int], list[str]]] = {}

    def _list(self, entries: tuple[ManifestEntry, ...]) -> tuple[str, int]:
        if entries not in self._lists:
            io, paths = self.manifests.io, self.manifests.paths
            metas = self.manifests.write(list(entries)) if entries else []
            name = paths.new_manifest_list_name()
            files = [paths.manifest(m.file_name) for m in metas] + [paths.manifest(name)]
            self._lists[entries] = ((name, 0), files)  # its files are known should the list write fail
            size = write_manifest_list(io, paths.manifest(name), metas, codec=self.manifests.codec)
            self._lists[entries] = ((name, size), files)
        return self._lists[entries][0]

    def prepare(
        self, entries: tuple[ManifestEntry, ...], changelog: tuple[ManifestEntry, ...]
    ) -> tuple[tuple[str, int], tuple[str, int] | None]:
        """The (name, size) of the delta manifest list, and of the changelog one if there is a changelog."""
        return self._list(entries), self._list(changelog) if changelog else None

    def unused(self, entries: tuple[ManifestEntry, ...], changelog: tuple[ManifestEntry, ...]) -> list[str]:
        """Paths of the files written for other entries than these (earlier attempts, before a rebase)."""
        keep = {entries, changelog}
        return [f for key, (_, files) in self._lists.items() if key not in keep for f in files]

    def all(self) -> list[str]:
        """Paths of every file written."""
        return [f for _, files in self._lists.values() for f in files]
