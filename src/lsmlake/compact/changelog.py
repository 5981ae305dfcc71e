"""The changelog a compaction produces (`lookup` / `full-compaction` producers), written as it is computed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths
from lsmlake.core.schema import TableSchema
from lsmlake.format.changelog_writer import changelog_file_writer, to_changelog_kv
from lsmlake.format.data_file_writer import FILE_SOURCE_APPEND, RollingWriter
from lsmlake.mergetree.changelog_producer import (
    RowDeduplicate,
    changelog_rows,
    full_compaction_before,
    lookup_before,
)
from lsmlake.mergetree.compact_task import rewrite_needs_lookup
from lsmlake.mergetree.engines.segments import Segments
from lsmlake.mergetree.kv_layout import VALUE_KIND, RowKind, is_retract
from lsmlake.metadata.data_file import DataFileMeta

LOOKUP = "lookup"
FULL = "full-compaction"


class CompactionChangelog:
    """Collects one bucket compaction's changelog and writes it to changelog files at the output level.

    ``begin(level)`` opens a step (a rewrite or an upgrade), ``add_*`` feed it piece by piece (key
    order), ``end()`` closes its files; ``files`` lists every changelog file written so far.
    """

    def __init__(
        self,
        io: FileIO,
        paths: TablePaths,
        schema: TableSchema,
        options: CoreOptions,
        directory: str,
        *,
        max_level: int,
        level_column: str,
    ) -> None:
        self.schema = schema
        self.producer = options.changelog_producer
        self.max_level = max_level
        self.level_column = level_column
        self.key_names = list(schema.trimmed_primary_keys)
        self.dedup = RowDeduplicate.of(options, schema.field_names)
        self.writer = changelog_file_writer(io, paths, schema, options, directory)
        self.files: list[DataFileMeta] = []
        self._level = 0
        self._rolling: RollingWriter | None = None
        self._pending: list[pa.Table] = []

    def mode(self, files: Sequence[DataFileMeta], output_level: int) -> str | None:
        """Which changelog a merge of ``files`` into ``output_level`` produces (None: none)."""
        if self.producer == LOOKUP and rewrite_needs_lookup(files, output_level, lookup=True):
            return LOOKUP
        if self.producer == FULL and output_level == self.max_level:
            return FULL
        return None

    # -- computing
    def add_merge(self, mode: str, rows: pa.Table, merged: pa.Table) -> None:
        """The changelog of merging key-sorted ``rows`` (with their level column) into ``merged``."""
        seg = Segments.of(rows, self.key_names)
        levels = rows.column(self.level_column).to_numpy()
        if mode == LOOKUP:
            emit, before = lookup_before(levels, seg)
        else:
            emit, before = full_compaction_before(levels, seg, self.max_level)
        out = changelog_rows(
            rows,
            merged,
            self.key_names,
            self.schema.field_names,
            emit=emit,
            before=before,
            seg=seg,
            dedup=self.dedup,
        )
        if out is not None:
            self._add(to_changelog_kv(out[0], out[1], self.schema))

    def add_inserts(self, rows: pa.Table) -> None:
        """First-row: every added row (keys new to the table) is a +I."""
        keep = ~is_retract(rows.column(VALUE_KIND).to_numpy())
        rows = rows.filter(pa.array(keep)) if not keep.all() else rows
        if rows.num_rows:
            kinds = np.full(rows.num_rows, RowKind.INSERT, dtype=np.int8)
            self._add(to_changelog_kv(rows, kinds, self.schema))

    # -- writing
    def begin(self, level: int) -> None:
        self._level = level

    def _add(self, kv: pa.Table) -> None:
        if not self.writer.streams(self._level):
            self._pending.append(kv)
            return
        if self._rolling is None:
            self._rolling = self.writer.rolling(level=self._level, file_source=FILE_SOURCE_APPEND)
        self._rolling.write(kv)

    def end(self) -> None:
        if self._rolling is not None:
            self.files += self._rolling.close()
            self._rolling = None
        if self._pending:
            kv = pa.concat_tables(self._pending)
            self._pending = []
            self.files += self.writer.write(kv, level=self._level, file_source=FILE_SOURCE_APPEND)

    def abort(self) -> list[str]:
        """Drop the open step; the paths of files it started (for the caller to delete)."""
        self._pending = []
        paths = self._rolling.abort() if self._rolling is not None else []
        self._rolling = None
        return paths

    def take_files(self) -> tuple[DataFileMeta, ...]:
        files, self.files = tuple(self.files), []
        return files
