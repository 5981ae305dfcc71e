"""Paimon's lookup rewriter: keys that level 0 brings up are looked up in the levels above the output."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lsmlake.compact.changelog import LOOKUP, CompactionChangelog
from lsmlake.core.options import CoreOptions
from lsmlake.core.types import DataType
from lsmlake.mergetree.dv_maintainer import BucketDeletionVectors
from lsmlake.mergetree.kv_layout import key_group_starts
from lsmlake.mergetree.lookup import find_keys, lookup_and_mark
from lsmlake.mergetree.lookup_merge import lookup_merge_rows
from lsmlake.mergetree.merge_function import MergeFunction, sort_for_merge
from lsmlake.metadata.data_file import DataFileMeta

LEVEL_COLUMN = "__level"
Runs = Sequence[Sequence[DataFileMeta]]
"""Sorted runs of the levels above a compaction's output level, lowest level first."""


@dataclass
class LookupRewriter:
    """Merges rows of one compaction piece whose keys come up from level 0, as Paimon's lookup rewriter:
    older rows above the output are found, marked in the deletion vectors and merged (or, for first-row,
    the level-0 key is dropped when it already exists)."""

    key_names: list[str]
    key_types: list[DataType]
    options: CoreOptions
    merge_function: MergeFunction
    deletion_vectors: BucketDeletionVectors
    changelog: CompactionChangelog
    read_keys: Callable[[DataFileMeta], pa.Table]
    read_rows: Callable[[DataFileMeta], pa.Table]
    """A file's rows (table columns, sequence number and kind) in file order."""
    dv_enabled: bool
    first_row: bool
    position_lookup: bool
    """A lookup that only marks old positions suffices (deduplicate without sequence fields)."""

    def mark(self, keys: pa.Table, above: Runs) -> None:
        """Mark deleted, in the runs ``above`` the output, the older rows of ``keys``."""
        lookup_and_mark(
            keys.select(self.key_names),
            above,
            self.deletion_vectors,
            key_types=self.key_types,
            read_keys=self.read_keys,
        )

    def merge(self, rows: pa.Table, above: Runs) -> pa.Table:
        """Merge key-sorted ``rows`` (with a level column) that bring level-0 keys up past ``above``."""
        keys = self._level0_keys(rows)
        changelog = self.changelog.producer == LOOKUP
        if self.first_row:
            merged = self.merge_function.merge(rows, self.key_names, reduce_singles=False)
            merged = self._without_existing(merged, keys, above)
            if changelog:
                self.changelog.add_inserts(self._of_keys(merged, keys))
            return merged
        if self.position_lookup and self.dv_enabled and not changelog:
            self.mark(keys, above)
            return self.merge_function.merge(rows, self.key_names)
        older = self._lookup_rows(keys, above) if keys.num_rows else None
        if older is not None:
            rows = sort_for_merge(
                pa.concat_tables([rows, older.select(rows.column_names)]), self.key_names, self.options
            )
        rows = lookup_merge_rows(rows, self.key_names, LEVEL_COLUMN)
        merged = self.merge_function.merge(rows, self.key_names, reduce_singles=False)
        if changelog:
            self.changelog.add_merge(LOOKUP, rows, merged)
        return merged

    def _level0_keys(self, rows: pa.Table) -> pa.Table:
        """The keys (one row each) whose rows in the sorted ``rows`` all come from level 0."""
        starts = key_group_starts(rows, self.key_names)
        first = np.flatnonzero(starts)
        levels = rows.column(LEVEL_COLUMN).to_numpy()
        top = np.maximum.reduceat(levels, first) if len(levels) else levels
        return rows.select(self.key_names).take(pa.array(first[top == 0]))

    def _lookup_rows(self, keys: pa.Table, above: Runs) -> pa.Table | None:
        """The live rows above the output of ``keys``; their positions are marked deleted."""
        parts = []
        for hit in find_keys(
            keys, above, self.deletion_vectors, key_types=self.key_types, read_keys=self.read_keys
        ):
            if self.dv_enabled:
                self.deletion_vectors.add(hit.file.file_name, hit.positions)
            found = self.read_rows(hit.file).take(pa.array(hit.positions))
            level = pa.array(np.full(found.num_rows, hit.file.level, dtype=np.int32))
            parts.append(found.append_column(LEVEL_COLUMN, level))
        return pa.concat_tables(parts) if parts else None

    def _without_existing(self, merged: pa.Table, keys: pa.Table, above: Runs) -> pa.Table:
        """First-row: drop the level-0-only keys that already exist above the output (existence lookup)."""
        hits = find_keys(
            keys, above, self.deletion_vectors, key_types=self.key_types, read_keys=self.read_keys
        )
        if not hits:
            return merged
        existing = pa.concat_tables([h.keys for h in hits])
        order = "__merged_order"
        kept = merged.append_column(order, pa.array(np.arange(merged.num_rows, dtype=np.int64)))
        kept = kept.join(existing, keys=self.key_names, join_type="left anti")
        return kept.sort_by(order).drop_columns([order])

    def _of_keys(self, rows: pa.Table, keys: pa.Table) -> pa.Table:
        """The rows (order kept) whose key is one of ``keys``."""
        order = "__of_keys_order"
        out = rows.append_column(order, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        out = out.join(keys, keys=self.key_names, join_type="left semi")
        return out.sort_by(order).drop_columns([order])
