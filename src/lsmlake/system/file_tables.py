"""Per-snapshot system tables: `$files`, `$manifests`, `$partitions`, `$buckets`, `$table_indexes`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataField
from lsmlake.errors import MissingFileError
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.index_manifest import DELETION_VECTORS_INDEX, IndexManifestEntry, read_index_manifest
from lsmlake.metadata.live_files import live_entries, snapshot_manifests
from lsmlake.metadata.manifest import FileKind, ManifestEntry
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.scan.planner import POSTPONE_BUCKET, skip_level0
from lsmlake.system.common import SystemContext, rows_to_table
from lsmlake.system.render import decode_stats_row, internal_string, key_string, map_string

_TS = pa.timestamp("ms")
_COMPRESS_EXTENSIONS = frozenset({"gz", "bz2", "deflate", "snappy", "lz4", "zst"})
_FILE_SOURCES = {0: "APPEND", 1: "COMPACT"}

FILES_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.string()),
        pa.field("bucket", pa.int32(), nullable=False),
        pa.field("file_path", pa.string(), nullable=False),
        pa.field("file_format", pa.string(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("level", pa.int32(), nullable=False),
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("file_size_in_bytes", pa.int64(), nullable=False),
        pa.field("min_key", pa.string()),
        pa.field("max_key", pa.string()),
        pa.field("null_value_counts", pa.string(), nullable=False),
        pa.field("min_value_stats", pa.string(), nullable=False),
        pa.field("max_value_stats", pa.string(), nullable=False),
        pa.field("min_sequence_number", pa.int64()),
        pa.field("max_sequence_number", pa.int64()),
        pa.field("creation_time", _TS),
        pa.field("deleteRowCount", pa.int64()),
        pa.field("file_source", pa.string()),
        pa.field("first_row_id", pa.int64()),
        pa.field("write_cols", pa.list_(pa.string())),
    ]
)

MANIFESTS_SCHEMA = pa.schema(
    [
        pa.field("file_name", pa.string(), nullable=False),
        pa.field("file_size", pa.int64(), nullable=False),
        pa.field("num_added_files", pa.int64(), nullable=False),
        pa.field("num_deleted_files", pa.int64(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("min_partition_stats", pa.string()),
        pa.field("max_partition_stats", pa.string()),
        pa.field("min_row_id", pa.int64()),
        pa.field("max_row_id", pa.int64()),
    ]
)

PARTITIONS_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.string()),
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("file_size_in_bytes", pa.int64(), nullable=False),
        pa.field("file_count", pa.int64(), nullable=False),
        pa.field("last_update_time", _TS),
        pa.field("created_at", _TS),
        pa.field("created_by", pa.string()),
        pa.field("updated_by", pa.string()),
        pa.field("options", pa.string()),
        pa.field("total_buckets", pa.int32(), nullable=False),
        pa.field("done", pa.bool_(), nullable=False),
        pa.field("deleted_record_count", pa.int64()),
    ]
)

BUCKETS_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.string()),
        pa.field("bucket", pa.int32(), nullable=False),
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("file_size_in_bytes", pa.int64(), nullable=False),
        pa.field("file_count", pa.int64(), nullable=False),
        pa.field("last_update_time", _TS),
        # lsmlake's own: live level-0 files (and their rows) that batch reads skip on this table
        # (deletion vectors, first-row), committed but invisible until compacted; 0 on other tables
        pa.field("skipped_level0_file_count", pa.int64(), nullable=False),
        pa.field("skipped_level0_record_count", pa.int64(), nullable=False),
    ]
)

DV_RANGE_TYPE = pa.struct(
    [
        pa.field("f0", pa.string(), nullable=False),
        pa.field("f1", pa.int32(), nullable=False),
        pa.field("f2", pa.int32(), nullable=False),
        pa.field("_CARDINALITY", pa.int64()),
    ]
)

TABLE_INDEXES_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.string()),
        pa.field("bucket", pa.int32(), nullable=False),
        pa.field("index_type", pa.string(), nullable=False),
        pa.field("file_name", pa.string(), nullable=False),
        pa.field("file_size", pa.int64(), nullable=False),
        pa.field("row_count", pa.int64(), nullable=False),
        pa.field("dv_ranges", pa.list_(DV_RANGE_TYPE)),
        pa.field("row_range_start", pa.int64()),
        pa.field("row_range_end", pa.int64()),
        pa.field("index_field_id", pa.int32()),
        pa.field("index_field_name", pa.string()),
    ]
)


def format_identifier(file_name: str) -> str:
    """The file format from a data file name: its last extension, skipping a compression extension."""
    parts = file_name.rsplit(".", 2)
    if len(parts) < 2:
        return ""
    if parts[-1] in _COMPRESS_EXTENSIONS and len(parts) == 3:
        return parts[-2]
    return parts[-1]


def _live(ctx: SystemContext, snapshot: Snapshot | None) -> list[ManifestEntry]:
    with _referenced_by(ctx, snapshot):
        return live_entries(ctx.io, ctx.table.paths, snapshot)


@contextmanager
def _referenced_by(ctx: SystemContext, snapshot: Snapshot | None) -> Iterator[None]:
    """A missing file the snapshot's metadata names is reported with the snapshot that names it."""
    try:
        yield
    except MissingFileError as e:
        if snapshot is None:
            raise
        raise MissingFileError(f"{e}; snapshot {snapshot.id} of table {ctx.table.name} references it") from e


# --------------------------------------------------------------------------- $files


@dataclass(frozen=True)
class _ValueStats:
    null_counts: str
    mins: str
    maxs: str


def _key_fields(schema: TableSchema) -> list[DataField]:
    return [schema.field(k) for k in schema.trimmed_primary_keys] if schema.primary_keys else []


def _key_text(data: bytes, fields: Sequence[DataField]) -> str | None:
    if not fields or len(data) < 4 or int.from_bytes(data[:4], "big", signed=True) <= 0:
        return None
    try:
        types = [f.type for f in fields]
        return key_string(decode_stats_row(data, types), types)
    except ValueError:
        return None


def value_stats(f: DataFileMeta, file_schema: TableSchema, table_fields: Sequence[DataField]) -> _ValueStats:
    """Value stats mapped to the table's fields by id, rendered like Java's TreeMap ``toString``."""
    base = list(file_schema.fields)
    if f.write_cols is not None:
        base = [x for x in base if x.name in f.write_cols]
    by_name = {x.name: x for x in base}
    covered = base if f.value_stats_cols is None else [by_name[n] for n in f.value_stats_cols if n in by_name]
    types = [x.type for x in covered]
    try:
        mins = decode_stats_row(f.value_stats.min_values, types)
        maxs = decode_stats_row(f.value_stats.max_values, types)
    except ValueError:
        mins = maxs = [None] * len(covered)
    counts = list(f.value_stats.null_counts or ())
    counts += [None] * (len(covered) - len(counts))
    stats = {x.id: (lo, hi, c, x) for x, lo, hi, c in zip(covered, mins, maxs, counts, strict=False)}
    file_ids = {x.id for x in file_schema.fields}
    null_entries, min_entries, max_entries = [], [], []
    for field in table_fields:
        lo: object = None
        hi: object = None
        count: int | None = None
        found = stats.get(field.id)
        if found is not None:
            lo, hi, count, source = found
            lo_text, hi_text = internal_string(lo, source.type), internal_string(hi, source.type)
        else:
            if field.id not in file_ids:
                count = f.row_count  # a column added after the file was written: all null
            lo_text = hi_text = "null"
        null_entries.append((field.name, "null" if count is None else str(count)))
        min_entries.append((field.name, lo_text))
        max_entries.append((field.name, hi_text))
    return _ValueStats(map_string(null_entries), map_string(min_entries), map_string(max_entries))


def files_table(ctx: SystemContext) -> pa.Table:
    """Every live data file of the snapshot, all levels (level 0 too, even with deletion vectors)."""
    entries = _live(ctx, ctx.snapshot())
    table_fields = list(ctx.latest_schema.fields)
    rows: list[tuple[Any, ...]] = []
    for e in entries:
        f = e.file
        schema = ctx.schema(f.schema_id)
        keys = _key_fields(schema)
        stats = value_stats(f, schema, table_fields)
        rows.append(
            (
                ctx.partition_row(e.partition),
                e.bucket,
                ctx.io.uri(ctx.locator.data_file(e.partition, e.bucket, f)),
                format_identifier(f.file_name),
                f.schema_id,
                f.level,
                f.row_count,
                f.file_size,
                _key_text(f.min_key, keys),
                _key_text(f.max_key, keys),
                stats.null_counts,
                stats.mins,
                stats.maxs,
                f.min_sequence_number,
                f.max_sequence_number,
                f.creation_time_millis,
                f.delete_row_count,
                None if f.file_source is None else _FILE_SOURCES.get(f.file_source, str(f.file_source)),
                f.first_row_id,
                None if f.write_cols is None else list(f.write_cols),
            )
        )
    rows.sort(key=lambda r: (r[0] or "", r[1]))
    return rows_to_table(FILES_SCHEMA, rows)


# --------------------------------------------------------------------------- $manifests


def manifests_table(ctx: SystemContext) -> pa.Table:
    """The data manifests (base then delta) of the snapshot."""
    snapshot = ctx.snapshot()
    with _referenced_by(ctx, snapshot):
        metas = [] if snapshot is None else snapshot_manifests(ctx.io, ctx.table.paths, snapshot)
    rows = [
        (
            m.file_name,
            m.file_size,
            m.num_added_files,
            m.num_deleted_files,
            m.schema_id,
            ctx.partition_row(m.partition_stats.min_values),
            ctx.partition_row(m.partition_stats.max_values),
            m.min_row_id,
            m.max_row_id,
        )
        for m in metas
    ]
    return rows_to_table(MANIFESTS_SCHEMA, rows)


# --------------------------------------------------------------------------- $partitions / $buckets


@dataclass
class _Totals:
    records: int = 0
    size: int = 0
    files: int = 0
    last_update: int | None = None
    total_buckets: int = 0
    level0_files: int = 0
    level0_records: int = 0

    def add(self, e: ManifestEntry) -> None:
        f = e.file
        self.records += f.row_count
        self.size += f.file_size
        self.files += 1
        if f.level == 0:
            self.level0_files += 1
            self.level0_records += f.row_count
        self.total_buckets = e.total_buckets
        t = f.creation_time_millis
        if t is not None and (self.last_update is None or t > self.last_update):
            self.last_update = t


def _deleted_rows(ctx: SystemContext, snapshot: Snapshot | None) -> dict[bytes, int | None]:
    """Deleted row count per partition from deletion-vector cardinalities (None when one is unknown)."""
    out: dict[bytes, int | None] = {}
    if snapshot is None or not snapshot.index_manifest or not ctx.table.options.deletion_vectors_enabled:
        return out
    for e in read_index_manifest(ctx.io, ctx.table.paths.manifest(snapshot.index_manifest)):
        if e.kind != FileKind.ADD or e.index_file.index_type != DELETION_VECTORS_INDEX:
            continue
        for dv in e.index_file.dv_ranges or ():
            current = out.get(e.partition, 0)
            out[e.partition] = None if current is None or dv.cardinality is None else current + dv.cardinality
    return out


def partitions_table(ctx: SystemContext) -> pa.Table:
    snapshot = ctx.snapshot()
    totals: dict[bytes, _Totals] = {}
    for e in _live(ctx, snapshot):
        totals.setdefault(e.partition, _Totals()).add(e)
    deleted = _deleted_rows(ctx, snapshot)
    rows = [
        (
            ctx.partition_spec(p),
            t.records,
            t.size,
            t.files,
            t.last_update,
            None,
            None,
            None,
            None,
            t.total_buckets,
            False,
            deleted.get(p, 0),
        )
        for p, t in totals.items()
    ]
    rows.sort(key=lambda r: r[0])
    return rows_to_table(PARTITIONS_SCHEMA, rows)


def buckets_table(ctx: SystemContext) -> pa.Table:
    totals: dict[tuple[bytes, int], _Totals] = {}
    for e in _live(ctx, ctx.snapshot()):
        totals.setdefault((e.partition, e.bucket), _Totals()).add(e)
    skipping = skip_level0(ctx.table.schema, ctx.table.options)
    rows = [
        (
            ctx.partition_row(p),
            b,
            t.records,
            t.size,
            t.files,
            t.last_update,
            t.level0_files if skipping and b != POSTPONE_BUCKET else 0,
            t.level0_records if skipping and b != POSTPONE_BUCKET else 0,
        )
        for (p, b), t in totals.items()
    ]
    rows.sort(key=lambda r: (r[0] or "", r[1]))
    return rows_to_table(BUCKETS_SCHEMA, rows)


# --------------------------------------------------------------------------- $table_indexes


def _global_index_fields(e: IndexManifestEntry, fields: Sequence[DataField]) -> tuple[Any, ...]:
    g = e.index_file.global_index
    if g is None:
        return (None, None, None, None)
    names = {f.id: f.name for f in fields}
    field_id = g.get("_INDEX_FIELD_ID")
    ids = [field_id, *(g.get("_EXTRA_FIELD_IDS") or ())]
    name = ",".join(names[i] for i in ids if i in names) if all(i in names for i in ids) else None
    return (g.get("_ROW_RANGE_START"), g.get("_ROW_RANGE_END"), field_id, name)


def table_indexes_table(ctx: SystemContext) -> pa.Table:
    """The index files (deletion vectors, HASH, global indexes) of the snapshot's index manifest."""
    snapshot = ctx.snapshot()
    entries: list[IndexManifestEntry] = []
    if snapshot is not None and snapshot.index_manifest:
        entries = read_index_manifest(ctx.io, ctx.table.paths.manifest(snapshot.index_manifest))
    fields = list(ctx.latest_schema.fields)
    rows = []
    for e in entries:
        if e.kind != FileKind.ADD:
            continue
        f = e.index_file
        ranges = (
            None
            if f.dv_ranges is None
            else [
                {"f0": d.data_file_name, "f1": d.offset, "f2": d.length, "_CARDINALITY": d.cardinality}
                for d in f.dv_ranges
            ]
        )
        rows.append(
            (
                ctx.partition_row(e.partition),
                e.bucket,
                f.index_type,
                f.file_name,
                f.file_size,
                f.row_count,
                ranges,
                *_global_index_fields(e, fields),
            )
        )
    return rows_to_table(TABLE_INDEXES_SCHEMA, rows)
