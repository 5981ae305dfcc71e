"""Scan planning: snapshot -> manifests -> pruned live files per bucket -> deletion files -> splits."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions, check_readable
from lsmlake.core.path_guard import PathGuard
from lsmlake.core.paths import TablePaths, partition_directory
from lsmlake.core.schema import TableSchema
from lsmlake.errors import MissingFileError, NoSuchSnapshotError, UnsupportedError
from lsmlake.expr import (
    Predicate,
    evaluate,
    might_match,
    split_by_fields,
)
from lsmlake.mergetree.interval_partition import KeyBounds
from lsmlake.metadata.catalog_env import CatalogEnvironment
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import DELETION_VECTORS_INDEX, read_index_manifest
from lsmlake.metadata.manifest import FileKind, ManifestEntry, live_files, read_manifest
from lsmlake.metadata.manifest_list import ManifestFileMeta, read_manifest_list
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.scan.bucket_pruning import BucketSelector
from lsmlake.scan.file_index_prune import FileIndexPruner
from lsmlake.scan.split import DeletionFile, Split
from lsmlake.scan.split_generator import SplitGroup, split_for_append, split_for_batch
from lsmlake.scan.stats_match import stats_might_match
from lsmlake.schema_change.stats import StatsEvolution

PartitionBucket = tuple[bytes, int]
UNSUPPORTED_SCAN_OPTIONS = (
    "scan.tag-name",
    "scan.timestamp-millis",
    "scan.timestamp",
    "scan.watermark",
    "scan.version",
    "incremental-between",
    "incremental-between-timestamp",
)
BATCH_SCAN_MODES = ("default", "latest", "latest-full", "full", "from-snapshot", "from-snapshot-full")
POSTPONE_BUCKET = -2


@dataclass(frozen=True)
class ScanFilters:
    """A filter cut into the parts each pruning step may use (None = nothing to apply)."""

    full: Predicate | None = None
    partition: Predicate | None = None
    key: Predicate | None = None
    """Conjuncts over trimmed primary-key columns only: checked against `_KEY_STATS`."""
    key_safe: Predicate | None = None
    """Conjuncts over primary-key and partition columns: safe to push into overlapping sections."""


def split_filters(predicate: Predicate | None, schema: TableSchema) -> ScanFilters:
    if predicate is None:
        return ScanFilters()
    pk = set(schema.primary_keys)
    return ScanFilters(
        full=predicate,
        partition=split_by_fields(predicate, set(schema.partition_keys)) if schema.partition_keys else None,
        key=split_by_fields(predicate, set(schema.trimmed_primary_keys)) if pk else None,
        key_safe=split_by_fields(predicate, pk | set(schema.partition_keys)) if pk else None,
    )


@dataclass
class PruneCounts:
    """How much each planning step cut (for ``explain`` and ``plan_summary``)."""

    manifests: int = 0
    manifests_skipped: int = 0
    entries_read: int = 0
    by_partition: int = 0
    by_bucket: int = 0
    by_level0: int = 0
    by_key_stats: int = 0
    by_value_stats: int = 0
    by_bucket_value_stats: int = 0
    by_file_index: list[tuple[str, str]] = field(default_factory=list)
    """(data file, index types) of each file its file indexes pruned."""
    rows_by_file_index: list[tuple[str, int, int]] = field(default_factory=list)
    """(data file, live rows its indexes select, live rows) of each file read raw with a row mask."""


@dataclass(frozen=True)
class BucketPlan:
    """One (partition, bucket): its files per level and how its splits are read."""

    partition_values: tuple[object, ...]
    bucket: int
    files_per_level: tuple[tuple[int, int], ...]
    splits: int
    raw_splits: int
    rules: tuple[str, ...]


@dataclass(frozen=True)
class ScanPlan:
    """The result of planning: plain, picklable data."""

    snapshot_id: int | None
    splits: tuple[Split, ...]
    buckets: tuple[BucketPlan, ...]
    filters: ScanFilters
    counts: PruneCounts = field(default_factory=PruneCounts)
    skip_level0: bool = False


def resolve_snapshot(
    io: FileIO,
    root: str,
    snapshot_id: int | None,
    options: CoreOptions,
    catalog_env: CatalogEnvironment | None = None,
) -> Snapshot | None:
    """The snapshot to read: ``snapshot_id``, else option ``scan.snapshot-id``, else the latest (the
    catalog's record of it when the table's catalog keeps one: ``catalog_env``)."""
    for key in UNSUPPORTED_SCAN_OPTIONS:
        if options.get(key) is not None:
            raise UnsupportedError(
                f"scan option {key!r} is not supported here (table {root}); Table.read and Table.scan "
                "resolve time travel, Table.read incremental reads"
            )
    mode = options.get(CoreOptions.SCAN_MODE)
    if mode not in BATCH_SCAN_MODES:
        raise UnsupportedError(f"scan.mode={mode!r} is not supported for batch reads (table {root})")
    manager = SnapshotManager(io, root, catalog_env=catalog_env)
    if snapshot_id is None:
        snapshot_id = options.get(CoreOptions.SCAN_SNAPSHOT_ID)
    if snapshot_id is None:
        return manager.latest()
    if snapshot_id <= 0:
        raise NoSuchSnapshotError(f"snapshot {snapshot_id} does not exist in table {root}")
    return manager.snapshot(snapshot_id)


def skip_level0(schema: TableSchema, options: CoreOptions) -> bool:
    """Java's ``batchScanSkipLevel0`` for primary-key tables."""
    if not schema.primary_keys:
        return False
    if options.deletion_vectors_enabled:
        return not options.get(CoreOptions.DELETION_VECTORS_MERGE_ON_READ)
    return options.merge_engine == "first-row"


class _Planner:
    """Per-scan state: decoders and caches for one schema, options and filter."""

    def __init__(
        self, io: FileIO, root: str, schema: TableSchema, options: CoreOptions, filters: ScanFilters
    ) -> None:
        self.io, self.root, self.schema, self.options, self.filters = io, root, schema, options, filters
        self.paths = TablePaths(root)
        self.guard = PathGuard.of(io, root, options)
        self.pk_table = bool(schema.primary_keys)
        self.partition_fields = [schema.field(k) for k in schema.partition_keys]
        self.partition_types = [f.type for f in self.partition_fields]
        self.key_fields = [schema.field(k) for k in schema.trimmed_primary_keys] if self.pk_table else []
        self.skip_level0 = skip_level0(schema, options)
        self.counts = PruneCounts()
        self.bucket_selector = BucketSelector(filters.full, schema, options)
        self._partition_ok: dict[bytes, bool] = {}
        self._partition_values: dict[bytes, tuple[object, ...]] = {}
        self.evolution = StatsEvolution(io, root, schema)  # stats of files of older schemas, by field id

    # -- partition values and paths
    def partition_values(self, partition: bytes) -> tuple[object, ...]:
        values = self._partition_values.get(partition)
        if values is None:
            values = tuple(deserialize_row(partition, self.partition_types)) if self.partition_types else ()
            self._partition_values[partition] = values
        return values

    def bucket_path(self, partition: bytes, bucket: int) -> str:
        return bucket_directory(
            self.paths, self.schema, self.options, self.partition_values(partition), bucket
        )

    # -- manifest and entry pruning
    def manifest_matches(self, meta: ManifestFileMeta) -> bool:
        if self.skip_level0 and meta.max_level is not None and meta.max_level == 0:
            return False
        pred = self.filters.partition
        if pred is None or not self.partition_fields:
            return True
        rows = meta.num_added_files + meta.num_deleted_files
        return stats_might_match(pred, meta.partition_stats, self.partition_fields, rows)

    def partition_matches(self, partition: bytes) -> bool:
        ok = self._partition_ok.get(partition)
        if ok is None:
            pred = self.filters.partition
            ok = True
            if pred is not None:
                values = dict(zip(self.schema.partition_keys, self.partition_values(partition), strict=True))
                ok = evaluate(pred, values) is not False
            self._partition_ok[partition] = ok
        return ok

    def entry_matches(self, e: ManifestEntry) -> bool:
        if e.bucket == POSTPONE_BUCKET and self.pk_table:
            return False  # batch reads see only real buckets; postponed rows wait for compaction
        if not self.partition_matches(e.partition):
            self.counts.by_partition += 1
            return False
        reachable = self.bucket_selector.buckets(e.total_buckets)
        if reachable is not None and e.bucket not in reachable:
            self.counts.by_bucket += 1
            return False
        f = e.file
        if self.skip_level0 and f.level == 0:
            self.counts.by_level0 += 1
            return False
        key = self.filters.key
        if (
            key is not None
            and (f.schema_id == self.schema.id or self.evolution.keys_comparable(f.schema_id))
            and not stats_might_match(key, f.key_stats, self.key_fields, f.row_count)
        ):
            self.counts.by_key_stats += 1
            return False
        if (self.skip_level0 or not self.pk_table) and not self.value_matches(f):
            self.counts.by_value_stats += 1
            return False
        return True

    def value_matches(self, f: DataFileMeta) -> bool:
        """Whether the file's value stats admit the full filter (True when unknown)."""
        pred = self.filters.full
        if pred is None:
            return True
        if f.schema_id != self.schema.id:
            try:
                stats = self.evolution.value_stats(f)
            except (ValueError, KeyError, TypeError, IndexError):
                return True
            return stats is None or might_match(pred, stats, f.row_count)
        names = f.value_stats_cols if f.value_stats_cols is not None else self.schema.field_names
        known = set(self.schema.field_names)
        if any(n not in known for n in names):
            return True
        return stats_might_match(pred, f.value_stats, [self.schema.field(n) for n in names], f.row_count)

    def filter_bucket_by_values(self, files: list[DataFileMeta]) -> list[DataFileMeta]:
        """Java's whole-bucket value filter, run after planning for primary-key tables."""
        if self.filters.full is None or not files:
            return files
        levels = {f.level for f in files}
        if len(files) == 1 or (len(levels) == 1 and 0 not in levels):
            kept = [f for f in files if self.value_matches(f)]
        elif self.options.merge_engine in ("partial-update", "aggregation") and (
            not self.options.deletion_vectors_enabled or 0 in levels
        ):
            # rows of one key in several files fold into one that may pass where none of them does;
            # deletion vectors make deeper rows stand alone, but not level-0 rows (a stream's first plan,
            # merge-on-read), which Java's whole-bucket filter overlooks
            kept = files
        else:
            kept = files if any(self.value_matches(f) for f in files) else []
        self.counts.by_bucket_value_stats += len(files) - len(kept)
        return kept

    # -- deletion vectors
    def deletion_files(self, snapshot: Snapshot) -> dict[PartitionBucket, dict[str, DeletionFile]]:
        if not self.options.deletion_vectors_enabled or not snapshot.index_manifest:
            return {}
        out: dict[PartitionBucket, dict[str, DeletionFile]] = {}
        for e in read_index_manifest(self.io, self.paths.manifest(snapshot.index_manifest)):
            f = e.index_file
            if e.kind != FileKind.ADD or f.index_type != DELETION_VECTORS_INDEX:
                continue
            if e.bucket >= 0 and not self.partition_matches(e.partition):
                continue
            if f.external_path:
                self.guard.external(
                    f.external_path,
                    source=f"index manifest {snapshot.index_manifest}",
                    field="_EXTERNAL_PATH",
                )
            path = self.index_path(e.partition, e.bucket, f.file_name, f.external_path)
            files = out.setdefault((e.partition, e.bucket), {})
            for d in f.dv_ranges or ():
                files[d.data_file_name] = DeletionFile(path, d.offset, d.length, d.cardinality)
        return out

    def index_path(self, partition: bytes, bucket: int, name: str, external: str | None) -> str:
        if external:
            return external
        if self.options.get(CoreOptions.INDEX_FILE_IN_DATA_FILE_DIR):
            return posixpath.join(self.bucket_path(partition, bucket), name)
        return self.paths.index_file(name)


def bucket_directory(
    paths: TablePaths, schema: TableSchema, options: CoreOptions, values: Sequence[object], bucket: int
) -> str:
    """The directory of one bucket of the partition with ``values`` (``data-file.path-directory`` kept)."""
    return paths.bucket_dir(partition_directory(schema, options, values), bucket)


def _group(entries: Sequence[ManifestEntry]) -> dict[PartitionBucket, list[ManifestEntry]]:
    grouped: dict[PartitionBucket, list[ManifestEntry]] = {}
    for e in entries:
        grouped.setdefault((e.partition, e.bucket), []).append(e)
    return grouped


def _levels(files: Sequence[DataFileMeta]) -> tuple[tuple[int, int], ...]:
    counts: dict[int, int] = {}
    for f in files:
        counts[f.level] = counts.get(f.level, 0) + 1
    return tuple(sorted(counts.items()))


def _check_postpone_merge_on_read(options: CoreOptions, root: str) -> None:
    """Java's batch reads of a postpone table with ``postpone.merge-on-read`` route the rows still in the
    postpone bucket to their buckets and merge them in; lsmlake's would leave them out, so it refuses."""
    key = CoreOptions.POSTPONE_MERGE_ON_READ.key
    if (
        options.primary_key_table
        and options.bucket == POSTPONE_BUCKET
        and options.get(CoreOptions.POSTPONE_MERGE_ON_READ)
    ):
        raise UnsupportedError(
            f"table {root}: cannot read it: option {key!r}=true asks batch reads to merge the rows still in the "
            "postpone bucket into their buckets, which lsmlake does not do (it would leave them out); compact the "
            f"table with table.compact() and read with {key}=false"
        )


def plan_scan(
    io: FileIO,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    *,
    predicate: Predicate | None = None,
    snapshot_id: int | None = None,
    snapshot: Snapshot | None = None,
    streaming: bool = False,
    all_levels: bool = False,
) -> ScanPlan:
    """Plan a batch read of one snapshot into splits (see module docstring): ``snapshot`` when given
    (e.g. a tag's, which may have expired from `snapshot/`), else as :func:`resolve_snapshot` picks.
    ``streaming``: the first plan of a stream, which never skips level 0 (Java: batch scans only).
    ``all_levels``: read level-0 files too where batch reads skip them, for readers that must see every
    committed key (Java's ``withLevelFilter(level -> true)`` in the cross-partition index bootstrap)."""
    check_readable(options, table=root)
    if not streaming:
        _check_postpone_merge_on_read(options, root)
    filters = split_filters(predicate, schema)
    planner = _Planner(io, root, schema, options, filters)
    if streaming or all_levels:
        planner.skip_level0 = False
    if snapshot is None:
        snapshot = resolve_snapshot(io, root, snapshot_id, options)
    if snapshot is None:
        return ScanPlan(None, (), (), filters, planner.counts, planner.skip_level0)
    try:
        entries = _live_entries(planner, snapshot)
        dv_files = planner.deletion_files(snapshot)
    except MissingFileError as e:
        raise MissingFileError(f"{e}; snapshot {snapshot.id} of table {root} references it") from e
    target = options.get(CoreOptions.SOURCE_SPLIT_TARGET_SIZE)
    open_cost = options.get(CoreOptions.SOURCE_SPLIT_OPEN_FILE_COST)
    bounds = KeyBounds([f.type for f in planner.key_fields])
    index_pruner = FileIndexPruner(io, schema, predicate, planner.evolution)
    index_pruner.pruned = planner.counts.by_file_index
    index_pruner.selected = planner.counts.rows_by_file_index
    # a primary-key file's rows stand alone only when level 0 is not read and deletion vectors mark every
    # superseded row (Java uses file indexes there only: batch reads that skip level 0); else a file whose
    # rows fail the filter may still be merged into a row that passes (aggregation, partial-update)
    use_indexes = (
        predicate is not None
        and options.get(CoreOptions.FILE_INDEX_READ_ENABLED)
        and (not planner.pk_table or (options.deletion_vectors_enabled and planner.skip_level0))
    )
    splits: list[Split] = []
    buckets: list[BucketPlan] = []
    for (partition, bucket), bucket_entries in _group(entries).items():
        files = [e.file for e in bucket_entries]
        if use_indexes:
            bucket_dir = planner.bucket_path(partition, bucket)
            pk = planner.pk_table
            files = index_pruner.filter(files, bucket_dir, dv_files.get((partition, bucket), {}), pk=pk)
            if not files:
                continue
        if planner.pk_table:
            files = planner.filter_bucket_by_values(files)
            if not files:
                continue
            groups = split_for_batch(
                files,
                bounds,
                target_size=target,
                open_file_cost=open_cost,
                deletion_vectors=options.deletion_vectors_enabled,
                merge_engine=options.merge_engine,
            )
        else:
            groups = split_for_append(files, target_size=target, open_file_cost=open_cost)
        bucket_dvs = dv_files.get((partition, bucket), {})
        values = planner.partition_values(partition)
        path = planner.bucket_path(partition, bucket)
        total = bucket_entries[0].total_buckets
        splits.extend(
            _to_split(
                g, partition, values, bucket, path, total, snapshot.id, bucket_dvs, index_pruner.selections
            )
            for g in groups
        )
        rules = tuple(dict.fromkeys(g.rule for g in groups))
        raw = sum(1 for g in groups if g.raw_convertible)
        buckets.append(BucketPlan(values, bucket, _levels(files), len(groups), raw, rules))
    return ScanPlan(snapshot.id, tuple(splits), tuple(buckets), filters, planner.counts, planner.skip_level0)


def _live_entries(planner: _Planner, snapshot: Snapshot) -> list[ManifestEntry]:
    io, paths = planner.io, planner.paths
    metas = read_manifest_list(io, paths.manifest(snapshot.base_manifest_list))
    metas += read_manifest_list(io, paths.manifest(snapshot.delta_manifest_list))
    planner.counts.manifests = len(metas)
    kept: list[ManifestEntry] = []
    for meta in metas:
        if not planner.manifest_matches(meta):
            planner.counts.manifests_skipped += 1
            continue
        entries = read_manifest(io, paths.manifest(meta.file_name))
        planner.counts.entries_read += len(entries)
        external = [e.file.external_path for e in entries if e.file.external_path]
        for path in external:
            planner.guard.external(path, source=f"manifest {meta.file_name}", field="_FILE._EXTERNAL_PATH")
        kept.extend(e for e in entries if planner.entry_matches(e))
    return live_files(kept)


def _to_split(
    g: SplitGroup,
    partition: bytes,
    values: tuple[object, ...],
    bucket: int,
    path: str,
    total: int,
    snapshot_id: int,
    dvs: Mapping[str, DeletionFile],
    selections: Mapping[str, bytes],
) -> Split:
    chosen = tuple((f.file_name, selections[f.file_name]) for f in g.files if f.file_name in selections)
    return Split(
        partition=partition,
        partition_values=values,
        bucket=bucket,
        bucket_path=path,
        files=g.files,
        deletion_files=tuple(dvs.get(f.file_name) for f in g.files),
        raw_convertible=g.raw_convertible,
        sections=g.sections,
        total_buckets=total,
        snapshot_id=snapshot_id,
        rule=g.rule,
        row_selections=chosen if g.raw_convertible else (),
    )
