"""Statistics of files written under an older schema, seen through the current schema (by field id).

Scan planning prunes files by their min/max/null-count statistics. Those are stored per column of the
schema the file was written with (``_SCHEMA_ID``). After an ALTER, a column may have a new name, a
wider type, or not exist in old files at all; mapping the statistics by field id keeps pruning
correct: renamed columns find their stats, columns added later are all-null in old files, widened
numeric and string columns keep their stats, and anything else is "unknown" (never pruned).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import TableSchema, read_schema, schema_file_name
from lsmlake.core.types import DataField
from lsmlake.expr import ColumnStats
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.stats import stats_from_simple
from lsmlake.schema_change.casts import stats_comparable


class StatsEvolution:
    """Per-scan helper: file schemas by id (read once) and the stats of old files under ``schema``."""

    def __init__(self, io: FileIO, root: str, schema: TableSchema) -> None:
        self.io, self.root, self.schema = io, root, schema
        self._schemas: dict[int, TableSchema | None] = {schema.id: schema}
        self._keys_ok: dict[int, bool] = {}

    def file_schema(self, schema_id: int) -> TableSchema | None:
        if schema_id not in self._schemas:
            try:
                self._schemas[schema_id] = read_schema(
                    self.io, posixpath.join(self.root, "schema", schema_file_name(schema_id))
                )
            except Exception:  # a missing or unreadable old schema only costs pruning; the read reports it
                self._schemas[schema_id] = None
        return self._schemas[schema_id]

    def keys_comparable(self, schema_id: int) -> bool:
        """Whether ``_KEY_STATS`` of files of ``schema_id`` decode with the current key fields.

        Key stats are positional over the trimmed primary key; they stay valid while every key field
        keeps its id and type (renames are fine, and Paimon never lets key types change).
        """
        ok = self._keys_ok.get(schema_id)
        if ok is None:
            old = self.file_schema(schema_id)
            ok = (
                old is not None
                and bool(old.primary_keys)
                and _key_signature(old) == _key_signature(self.schema)
            )
            self._keys_ok[schema_id] = ok
        return ok

    def value_stats(self, f: DataFileMeta) -> dict[str, ColumnStats] | None:
        """``f``'s value stats keyed by current column names (None: unknown, do not prune)."""
        old = self.file_schema(f.schema_id)
        if old is None or f.write_cols is not None:
            return None
        return evolve_value_stats(f, old, self.schema)


def _key_signature(s: TableSchema) -> list[tuple[int, object]]:
    return [(s.field(k).id, s.field(k).type.copy(nullable=True)) for k in s.trimmed_primary_keys]


def evolve_value_stats(
    f: DataFileMeta, file_schema: TableSchema, schema: TableSchema
) -> dict[str, ColumnStats]:
    """Decode ``f``'s value stats with its own schema and re-key them by the current column names."""
    file_fields: Sequence[DataField] = file_schema.fields
    if f.value_stats_cols is not None:
        by_name = {x.name: x for x in file_fields}
        covered = [by_name[n] for n in f.value_stats_cols if n in by_name]
        if len(covered) != len(f.value_stats_cols):
            return {}
    else:
        covered = list(file_fields)
    decoded = stats_from_simple(f.value_stats, covered, f.row_count)
    by_id = {x.id: x for x in covered}
    file_ids = {x.id for x in file_fields}
    out: dict[str, ColumnStats] = {}
    for field in schema.fields:
        src = by_id.get(field.id)
        if src is not None:
            if stats_comparable(src.type, field.type):
                out[field.name] = decoded[src.name]
        elif field.id not in file_ids:
            out[field.name] = ColumnStats(None, None, f.row_count)  # added later: null in this file
    return out
