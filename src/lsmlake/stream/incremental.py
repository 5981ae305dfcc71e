"""Change files of snapshots (APPEND deltas or changelog files) planned as raw splits read with row kinds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Literal

import pyarrow as pa

from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions, check_readable
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.errors import MissingFileError
from lsmlake.expr import Predicate, evaluate
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.manifest import FileKind, ManifestEntry, read_manifest
from lsmlake.metadata.manifest_list import read_manifest_list
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.read.split_read import ROW_KIND_COLUMN, ReadContext, read_split
from lsmlake.scan.planner import POSTPONE_BUCKET, ScanFilters, bucket_directory
from lsmlake.scan.split import Split

ChangeMode = Literal["delta", "changelog"]
APPEND, OVERWRITE = "APPEND", "OVERWRITE"


def has_changes(snapshot: Snapshot, mode: ChangeMode) -> bool:
    """Whether a snapshot contributes to a read of ``mode``: APPEND snapshots carry the delta (COMPACT
    and OVERWRITE ones are skipped); any non-OVERWRITE snapshot with a changelog list carries changelog."""
    if mode == "delta":
        return snapshot.commit_kind == APPEND
    return snapshot.commit_kind != OVERWRITE and snapshot.changelog_manifest_list is not None


def change_entries(io: FileIO, root: str, snapshot: Snapshot, mode: ChangeMode) -> list[ManifestEntry]:
    """The ADD entries of a snapshot's delta manifest list (``delta``) or changelog list (``changelog``)."""
    name = snapshot.delta_manifest_list if mode == "delta" else snapshot.changelog_manifest_list
    if name is None:
        return []
    paths = TablePaths(root)
    entries: list[ManifestEntry] = []
    try:
        for meta in read_manifest_list(io, paths.manifest(name)):
            added = read_manifest(io, paths.manifest(meta.file_name))
            entries.extend(e for e in added if e.kind == FileKind.ADD)
    except MissingFileError as e:
        raise MissingFileError(f"{e}; snapshot {snapshot.id} of table {root} references it") from e
    return entries


class _BucketLocator:
    """Partition values and bucket directories of manifest entries (one table, cached per partition)."""

    def __init__(self, root: str, schema: TableSchema, options: CoreOptions) -> None:
        self.paths = TablePaths(root)
        self.schema = schema
        self.options = options
        self.types = [schema.field(k).type for k in schema.partition_keys]
        self._values: dict[bytes, tuple[object, ...]] = {}

    def values(self, partition: bytes) -> tuple[object, ...]:
        found = self._values.get(partition)
        if found is None:
            found = tuple(deserialize_row(partition, self.types)) if self.types else ()
            self._values[partition] = found
        return found

    def bucket_path(self, partition: bytes, bucket: int) -> str:
        return bucket_directory(self.paths, self.schema, self.options, self.values(partition), bucket)


def change_splits(
    io: FileIO,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    snapshot: Snapshot,
    mode: ChangeMode,
    *,
    partition_filter: Predicate | None = None,
) -> list[Split]:
    """One raw split per (partition, bucket) holding the snapshot's change files in sequence order.

    The files are read as they are (no merge, no deletion vectors), so every row keeps its row kind.
    Changelog reads skip the postpone bucket, whose rows get their changelog once compacted into a
    real bucket (Java's ``onlyReadRealBuckets``).
    """
    entries = change_entries(io, root, snapshot, mode)
    if mode == "changelog":
        entries = [e for e in entries if e.bucket != POSTPONE_BUCKET]
    return raw_splits(root, schema, options, entries, snapshot.id, f"{mode} files", partition_filter)


def postpone_splits(
    io: FileIO,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    snapshot: Snapshot,
    *,
    partition_filter: Predicate | None = None,
) -> list[Split]:
    """Raw splits of the files still waiting in the postpone bucket (batch plans leave them out)."""
    entries = live_entries(io, TablePaths(root), snapshot, entry_filter=lambda e: e.bucket == POSTPONE_BUCKET)
    return raw_splits(root, schema, options, entries, snapshot.id, "postpone-bucket files", partition_filter)


def raw_splits(
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    entries: Sequence[ManifestEntry],
    snapshot_id: int,
    what: str,
    partition_filter: Predicate | None = None,
) -> list[Split]:
    """Group files into one raw split per (partition, bucket), files in sequence-number order."""
    locator = _BucketLocator(root, schema, options)
    grouped: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in entries:
        grouped.setdefault((e.partition, e.bucket), []).append(e)
    splits = []
    for (partition, bucket), bucket_entries in grouped.items():
        values = locator.values(partition)
        if partition_filter is not None:
            named = dict(zip(schema.partition_keys, values, strict=True))
            if evaluate(partition_filter, named) is False:
                continue
        files = sorted(
            (e.file for e in bucket_entries),
            key=lambda f: (f.min_sequence_number, f.max_sequence_number, f.file_name),
        )
        splits.append(
            Split(
                partition=partition,
                partition_values=values,
                bucket=bucket,
                bucket_path=locator.bucket_path(partition, bucket),
                files=tuple(files),
                deletion_files=(None,) * len(files),
                raw_convertible=True,
                total_buckets=bucket_entries[0].total_buckets,
                snapshot_id=snapshot_id,
                rule=f"{what} of snapshot {snapshot_id}, read as-is",
            )
        )
    return splits


def change_context(
    io: FileIO,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    columns: Sequence[str] | None,
    filters: ScanFilters,
) -> ReadContext:
    """A read context that keeps every row's kind in a leading ``rowkind`` column (refused for a table whose
    stored options ask a reader for what lsmlake cannot do)."""
    check_readable(options, table=root)
    names = tuple(columns) if columns is not None else tuple(schema.field_names)
    return ReadContext(io, root, schema, options, names, filters, keep_row_kind=True)


def change_schema(ctx: ReadContext) -> pa.Schema:
    """``rowkind`` (+I, -U, +U, -D) followed by the projected table columns."""
    return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), False), *ctx.output_schema])


def read_changes(ctx: ReadContext, splits: Sequence[Split]) -> Iterator[pa.Table]:
    """The rows of change splits in order, each with its row kind; no merging, nothing dropped."""
    if not ctx.keep_row_kind:
        ctx = replace(ctx, keep_row_kind=True)
    for split in splits:
        for table in read_split(ctx, split):
            if table.num_rows:
                yield table


def snapshot_range_splits(
    io: FileIO,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    snapshots: Sequence[Snapshot],
    mode: ChangeMode,
    *,
    partition_filter: Predicate | None = None,
) -> list[Split]:
    """Change splits of every snapshot that has ``mode`` changes, snapshot by snapshot in order."""
    splits: list[Split] = []
    for s in snapshots:
        if has_changes(s, mode):
            splits.extend(
                change_splits(io, root, schema, options, s, mode, partition_filter=partition_filter)
            )
    return splits
