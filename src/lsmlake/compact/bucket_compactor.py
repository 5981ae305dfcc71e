"""Compaction of one bucket: pick a unit, merge or move files up, look keys up and mark deletion vectors."""

from __future__ import annotations

import posixpath
from dataclasses import replace
from functools import cached_property, partial

import numpy as np
import pyarrow as pa

from lsmlake.compact.bucket_files import BucketFiles, combine_results, restore_deletion_vectors, written_by
from lsmlake.compact.changelog import FULL, LOOKUP, CompactionChangelog
from lsmlake.compact.lookup_rewriter import LEVEL_COLUMN, LookupRewriter
from lsmlake.compact.record_expire import RecordExpire
from lsmlake.core.clock import local_now
from lsmlake.core.external_paths import index_file_path, located_path
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema, read_schema, schema_file_name
from lsmlake.core.types import DataType
from lsmlake.expr import Predicate
from lsmlake.format.data_file_writer import (
    FILE_SOURCE_COMPACT,
    STREAMED_FORMATS,
    DataFileWriter,
    local_wall_clock_millis,
)
from lsmlake.mergetree.compact_strategy import (
    CompactUnit,
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    GentleTrigger,
    OffPeakHours,
    UniversalCompaction,
    drop_delete,
    gentle_max_interval,
    is_worth_running,
    pick_full_compaction,
)
from lsmlake.mergetree.compact_task import Rewrite, TaskPlanner, Upgrade, UpgradeKind, rewrite_needs_lookup
from lsmlake.mergetree.key_sort import by_sequence, stable_key_order
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, is_retract, to_kv_table
from lsmlake.mergetree.levels import Levels
from lsmlake.mergetree.lookup import KEY_CACHE
from lsmlake.mergetree.lookup_merge import lookup_merge_rows, needs_lookup
from lsmlake.mergetree.merge_function import merge_function_for, sort_for_merge
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import IndexFileMeta
from lsmlake.read.file_rows import file_keys
from lsmlake.read.key_chunks import section_pieces
from lsmlake.read.split_read import ReadContext, read_file
from lsmlake.scan.split import DeletionFile, Split
from lsmlake.schema_change.stats import StatsEvolution

__all__ = [
    "BucketCompactor",
    "BucketFiles",
    "compact_bucket",
    "num_levels",
    "restore_deletion_vectors",
    "written_by",
]

# Rows merged at once by a compaction rewrite: bigger sections are cut into key ranges (bounded memory).
MERGE_PIECE_ROWS = 250_000
COMPACTION_SMALL_FILE_RATIO = 0.7


def compact_bucket(
    io: FileIO,
    paths: TablePaths,
    schema: TableSchema,
    options: CoreOptions,
    state: BucketFiles,
    *,
    full: bool,
) -> CommitMessage | None:
    """Compact one bucket as the strategy (or a full compaction) says; None when there is nothing to do.

    Files written under a newer schema than ``schema`` (an ALTER since the table was opened) are merged
    under that newer schema, so no column added since is lost.
    """
    newest = max((f.schema_id for f in state.files), default=schema.id)
    if newest > schema.id:
        schema = read_schema(io, posixpath.join(paths.root, "schema", schema_file_name(newest)))
    return BucketCompactor(io, paths.root, paths, schema, options, state).compact(full=full)


def num_levels(options: CoreOptions) -> int:
    return options.num_levels


class BucketCompactor:
    """Runs the compaction strategy on one bucket and returns the commit message of what it changed."""

    def __init__(
        self,
        io: FileIO,
        root: str,
        paths: TablePaths,
        schema: TableSchema,
        options: CoreOptions,
        state: BucketFiles,
    ) -> None:
        self.io, self.root, self.paths, self.schema, self.options, self.state = (
            io,
            root,
            paths,
            schema,
            options,
            state,
        )
        self.dv_enabled = options.deletion_vectors_enabled
        self.levels = Levels.of(state.files, max(num_levels(options), 2))
        self.key_names = list(schema.trimmed_primary_keys)
        self.merge_function = merge_function_for(options, schema)
        self.ctx = ReadContext(io, root, schema, options, tuple(schema.field_names))
        self.record_expire = RecordExpire.create(options, schema, StatsEvolution(io, root, schema), table=root)
        self._expired = None if self.record_expire is None else self.record_expire.is_expired_file
        # Paimon's needLookup: deletion vectors, first-row (whose batch reads skip level 0), lookup changelog
        self.lookup = needs_lookup(options)
        if self.lookup:
            KEY_CACHE.resize(options.get(CoreOptions.LOOKUP_CACHE_MAX_MEMORY_SIZE))
        self.first_row = options.merge_engine == "first-row"
        # a lookup that only marks old positions suffices when the level-0 row is the final value
        self.position_lookup = options.merge_engine == "deduplicate" and not options.sequence_fields
        self.changelog = CompactionChangelog(
            io,
            paths,
            schema,
            options,
            state.directory,
            max_level=self.levels.max_level,
            level_column=LEVEL_COLUMN,
        )
        self.lookup_rewriter = LookupRewriter(
            self.key_names,
            self._key_types,
            options,
            self.merge_function,
            state.deletion_vectors,
            self.changelog,
            self._read_keys,
            self._read_rows,
            dv_enabled=self.dv_enabled,
            first_row=self.first_row,
            position_lookup=self.position_lookup,
        )

    def pick(self, *, full: bool) -> CompactUnit | None:
        runs = self.levels.level_sorted_runs()
        if full:
            with_dv = frozenset(n for n, dv in self.state.deletion_vectors.vectors.items() if not dv.is_empty)
            return pick_full_compaction(
                self.levels.num_levels,
                runs,
                files_with_deletion_vectors=with_dv,
                expired=self._expired,
                force_rewrite_all=self._force_rewrite,
            )
        universal = UniversalCompaction(
            max_size_amp=self.options.get(CoreOptions.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT),
            size_ratio=self.options.get(CoreOptions.COMPACTION_SIZE_RATIO),
            run_trigger=self.options.get(CoreOptions.NUM_SORTED_RUN_COMPACTION_TRIGGER),
            early_full=self._early_full(),
            off_peak_ratio=self._off_peak_ratio(),
        )
        strategy = ForceUpLevel0Compaction(universal, self._gentle) if self.lookup else universal
        unit = strategy.pick(self.levels.num_levels, runs)
        return unit if is_worth_running(unit) else None

    @cached_property
    def _gentle(self) -> GentleTrigger | None:
        """This compactor's gentle lookup-compaction count (a writer's, as in Paimon), None when radical."""
        if self.options.get(CoreOptions.LOOKUP_COMPACT) != "gentle":
            return None
        trigger = self.options.get(CoreOptions.NUM_SORTED_RUN_COMPACTION_TRIGGER)
        return GentleTrigger(
            gentle_max_interval(self.options.get(CoreOptions.LOOKUP_COMPACT_MAX_INTERVAL), trigger)
        )

    @property
    def _force_rewrite(self) -> bool:
        return self.options.get(CoreOptions.COMPACTION_FORCE_REWRITE_ALL_FILES)

    def _off_peak_ratio(self) -> int:
        """The size ratio off-peak hours add at this hour of the local clock (Paimon: LocalDateTime.now())."""
        o = self.options
        hours = OffPeakHours.of(
            o.get(CoreOptions.COMPACTION_OFFPEAK_START_HOUR),
            o.get(CoreOptions.COMPACTION_OFFPEAK_END_HOUR),
            o.get(CoreOptions.COMPACTION_OFFPEAK_RATIO),
        )
        return 0 if hours is None else hours.extra_ratio(local_now().hour)

    def _early_full(self) -> EarlyFullCompaction | None:
        o = self.options
        interval = o.get(CoreOptions.COMPACTION_OPTIMIZATION_INTERVAL)
        total = o.get(CoreOptions.COMPACTION_TOTAL_SIZE_THRESHOLD)
        incremental = o.get(CoreOptions.COMPACTION_INCREMENTAL_SIZE_THRESHOLD)
        if interval is None and total is None and incremental is None:
            return None
        top = self.levels.runs[self.levels.max_level]
        created = [f.creation_time_millis for f in top if f.creation_time_millis is not None]
        return EarlyFullCompaction(
            interval_ms=interval,
            total_size_threshold=total,
            incremental_size_threshold=incremental,
            last_full_millis=max(created) if created else None,
            now_millis=local_wall_clock_millis(),
        )

    def compact(self, *, full: bool = False) -> CommitMessage | None:
        """Compact once; then again while the bucket has more sorted runs than ``num-sorted-run.stop-trigger``."""
        message = self._compact_once(full=full)
        stop = self.options.num_sorted_run_stop_trigger
        while message is not None and self.levels.number_of_sorted_runs() > stop:
            more = self._compact_once(full=False)
            if more is None:
                break
            message = combine_results(
                message,
                more,
                data_path=partial(self._path_of, files=message.compact_after),
                index_path=partial(self._index_path_of, files=message.new_index_files),
                delete=self.io.delete_file,
            )
        return message

    def _compact_once(self, *, full: bool) -> CommitMessage | None:
        unit = self.pick(full=full)
        if unit is None or not unit.files:
            return None
        drop = drop_delete(
            unit.output_level, self.levels.highest_non_empty_level(), deletion_vectors=self.dv_enabled
        )
        planner = TaskPlanner(
            tuple(self.schema.field(k).type for k in self.key_names),
            self.levels.max_level,
            int(self.options.target_file_size * COMPACTION_SMALL_FILE_RATIO),
            self.lookup,
            self.position_lookup,
            expired=self._expired,
            level_format=lambda level: self._writer.settings(level).format,
            force_rewrite=self._force_rewrite,
        )
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        for step in planner.plan(unit):
            if isinstance(step, Upgrade):
                mode = self.changelog.mode([step.file], unit.output_level)
                if mode is not None:
                    self._upgrade_changelog(step.file, unit.output_level, mode)
                elif step.kind is UpgradeKind.LOOKUP_RELABEL and self.dv_enabled:
                    self.lookup_rewriter.mark(
                        self._read([step.file], self.key_names), self.levels.files_above(unit.output_level)
                    )
                before.append(step.file)
                after.append(step.file.upgrade(unit.output_level))
            else:
                before.extend(step.files)
                after.extend(self._rewrite(step, unit.output_level, drop))
        if (
            full
            and len(unit.files) == len(before) == len(after)
            and all(
                b.file_name == a.file_name and b.level == a.level for b, a in zip(before, after, strict=True)
            )
        ):
            return None
        new_index, old_index = self.state.deletion_vectors.write(self.io, self.paths, self._new_index_location)
        self.levels = self.levels.apply(before, after)
        return CommitMessage(
            self.state.partition,
            self.state.bucket,
            self.state.total_buckets,
            compact_before=tuple(before),
            compact_after=tuple(after),
            new_index_files=(new_index,) if new_index else (),
            deleted_index_files=(old_index,) if old_index else (),
            compact_changelog_files=self.changelog.take_files(),
        )

    def _path_of(self, name: str, files: tuple[DataFileMeta, ...]) -> str:
        """The path of the file ``name`` among ``files`` (under an external root or the bucket directory)."""
        external = next((f.external_path for f in files if f.file_name == name), None)
        return located_path(self.state.directory, name, external, local=self.io.local)

    def _on_table_storage(self, f: DataFileMeta) -> bool:
        """Whether ``f`` is on the table's storage (under an external root there, or in the bucket)."""
        if not f.external_path:
            return True
        guard = self.ctx.guard
        return guard.external(f.external_path, source=f.file_name, field="_EXTERNAL_PATH")[0] == guard.storage

    def _index_path_of(self, name: str, files: tuple[IndexFileMeta, ...]) -> str:
        """The path of the index file ``name`` among ``files``."""
        external = next((f.external_path for f in files if f.file_name == name), None)
        return index_file_path(self.paths.index_file(name), self.state.directory, name, external, self.options)

    def _new_index_location(self, name: str) -> tuple[str, str | None]:
        """A new index file's path and external path: with `index-file-in-data-file-dir`, where a data
        file of the bucket would go (under an external root when one is chosen), as Java writes it."""
        if not self.options.get(CoreOptions.INDEX_FILE_IN_DATA_FILE_DIR):
            return self.paths.index_file(name), None
        writer = self._writer
        if writer.external is None:
            return posixpath.join(self.state.directory, name), None
        uri, path = writer.external.choose(posixpath.relpath(self.state.directory, self.paths.data_root), name)
        return path, uri

    def _upgrade_changelog(self, f: DataFileMeta, output_level: int, mode: str) -> None:
        """The changelog of moving ``f`` up unchanged (Paimon's CHANGELOG_NO_REWRITE upgrade)."""
        self.changelog.begin(output_level)
        try:
            for piece in self._pieces([f]):  # key ranges: memory stays bounded for a large file
                rows = self._read([f], piece=piece)
                if mode == LOOKUP:
                    self.lookup_rewriter.merge(rows, self.levels.files_above(output_level))
                else:
                    self.changelog.add_merge(FULL, rows, self.merge_function.merge(rows, self.key_names))
        except BaseException:
            for path in self.changelog.abort():
                self.io.delete_file(path)
            raise
        self.changelog.end()

    def _split(self, files: list[DataFileMeta]) -> Split:
        return Split(
            self.state.partition,
            self.state.partition_values,
            self.state.bucket,
            self.state.directory,
            tuple(files),
            (None,) * len(files),
            raw_convertible=True,
            total_buckets=self.state.total_buckets,
        )

    def _read(
        self, files: list[DataFileMeta], names: list[str] | None = None, *, piece: Predicate | None = None
    ) -> pa.Table:
        """The rows of the files (table columns + sequence + kind + level), deletion vectors applied;
        with ``piece``, only the rows in that key range (row groups outside it are not read)."""
        split = self._split(files) if piece is None else self._split_with_deletion_files(files)
        parts = []
        for i, f in enumerate(files):
            t = read_file(self.ctx, split, i, names or self.schema.field_names, push=piece, system=True)
            if piece is None:
                keep = self.state.deletion_vectors.keep_mask(f.file_name, t.num_rows)
                if not keep.all():
                    t = t.filter(pa.array(keep))
            parts.append(
                t.append_column(LEVEL_COLUMN, pa.array(np.full(t.num_rows, f.level, dtype=np.int32)))
            )
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _split_with_deletion_files(self, files: list[DataFileMeta]) -> Split:
        """A split whose files carry their committed deletion vectors (read with row positions kept)."""
        index = self.state.deletion_vectors.index_file
        ranges = {r.data_file_name: r for r in (index.dv_ranges or ())} if index is not None else {}
        path = "" if index is None else self._index_path_of(index.file_name, (index,))
        deletion_files = tuple(
            DeletionFile(
                path, ranges[f.file_name].offset, ranges[f.file_name].length, ranges[f.file_name].cardinality
            )
            if f.file_name in ranges
            else None
            for f in files
        )
        return replace(self._split(files), deletion_files=deletion_files)

    @cached_property
    def _writer(self) -> DataFileWriter:
        return DataFileWriter(self.io, self.paths, self.schema, self.options, self.state.directory)

    def _pieces(self, files: list[DataFileMeta], output_level: int | None = None) -> list[Predicate | None]:
        """Key ranges that bound the memory of merging ``files`` (one piece when they are small): Parquet
        files only, written at ``output_level`` (when given) into a format written chunk by chunk."""
        if any(not f.file_name.endswith(".parquet") or not self._on_table_storage(f) for f in files):
            return [None]  # pieces read Parquet footers through the table's FileIO
        if output_level is not None and self._writer.settings(output_level).format not in STREAMED_FORMATS:
            return [None]
        paths = [self._path_of(f.file_name, (f,)) for f in files]
        pieces = section_pieces(self.io, self.schema, paths, files, base=None, max_rows=MERGE_PIECE_ROWS)
        return pieces or [None]

    @property
    def _key_types(self) -> list[DataType]:
        return [self.schema.field(k).type for k in self.key_names]

    def _read_keys(self, f: DataFileMeta) -> pa.Table:
        return file_keys(self.ctx, self._split([f]), 0)  # shared with table lookups (read/file_rows.py)

    def _read_rows(self, f: DataFileMeta) -> pa.Table:
        return read_file(self.ctx, self._split([f]), 0, self.schema.field_names, push=None, system=True)

    def _rewrite(self, step: Rewrite, output_level: int, drop: bool) -> list[DataFileMeta]:
        """Merge the step's files into new files at ``output_level``, one bounded key range at a time."""
        files = step.files
        pieces = self._pieces(files, output_level)
        writer = self._writer
        rolling = (
            writer.rolling(level=output_level, file_source=FILE_SOURCE_COMPACT) if len(pieces) > 1 else None
        )
        written: list[DataFileMeta] = []
        self.changelog.begin(output_level)
        try:
            for piece in pieces:
                kv = self._merge_piece(files, piece, output_level, drop)
                if kv is None:
                    continue
                if rolling is not None:
                    rolling.write(kv)
                else:
                    written += writer.write(kv, level=output_level, file_source=FILE_SOURCE_COMPACT)
        except BaseException:
            for path in rolling.abort() if rolling is not None else []:
                self.io.delete_file(path)
            for path in self.changelog.abort():
                self.io.delete_file(path)
            raise
        self.changelog.end()
        for f in files:
            self.state.deletion_vectors.remove(f.file_name)
        return rolling.close() if rolling is not None else written

    def _live(self, rows: pa.Table) -> pa.Table:
        """The rows record-level expiry keeps (all of them when it is off)."""
        return rows if self.record_expire is None else self.record_expire.live_rows(rows)

    def _merge_piece(
        self, files: list[DataFileMeta], piece: Predicate | None, output_level: int, drop: bool
    ) -> pa.Table | None:
        """The merged rows of one key range in file layout, or None when nothing survives."""
        by_age, disjoint = by_sequence(files)
        if not self.options.sequence_fields and disjoint:
            # files in sequence order, each sorted by (key, sequence): a stable sort by key merges them
            rows = self._live(self._read(by_age, piece=piece))
            rows = rows.take(pa.array(stable_key_order(rows, self.key_names, sorted_runs=True)))
        else:
            rows = sort_for_merge(self._live(self._read(files, piece=piece)), self.key_names, self.options)
        if rewrite_needs_lookup(files, output_level, lookup=self.lookup):
            merged = self.lookup_rewriter.merge(rows, self.levels.files_above(output_level))
        else:
            if self.lookup and not self.first_row:
                rows = lookup_merge_rows(rows, self.key_names, LEVEL_COLUMN)
            merged = self.merge_function.merge(rows, self.key_names)
            if self.changelog.mode(files, output_level) == FULL:
                self.changelog.add_merge(FULL, rows, merged)
        kinds = merged.column(VALUE_KIND).to_numpy()
        if drop:
            keep = ~is_retract(kinds)
            merged, kinds = merged.filter(pa.array(keep)), kinds[keep]
        if merged.num_rows == 0:
            return None
        return to_kv_table(
            merged.select(self.schema.field_names),
            kinds,
            merged.column(SEQUENCE_NUMBER).to_numpy(),
            self.schema,
        )
