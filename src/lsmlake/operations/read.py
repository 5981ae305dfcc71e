"""Split readers: raw reads with deletion vectors, and merge-on-read section by section, in Arrow."""

from __future__ import annotations

import itertools
import json
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.predicate import Predicate
from lsmlake.core.schema import TableSchema, read_schema, schema_file_name
from lsmlake.core.types import DataField, to_arrow_type
from lsmlake.errors import CorruptFileError, LsmlakeError, UnsupportedError
from lsmlake.mergetree.key_sort import stable_key_order
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND
from lsmlake.mergetree.lookup_merge import merge_skips_shadowed, shadowed_mask
from lsmlake.mergetree.merge_function import (
    Deduplicate,
    FirstRow,
    MergeFunction,
    drop_retracts,
    merge_function_for,
    read_columns,
    sort_indices,
)
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.deletion_vector import check_cardinality, read_deletion_vector
from lsmlake.metadata.stats import decode_avro_container
from lsmlake.operations.key_chunks import section_pieces
from lsmlake.operations.parquet_files import read_row_groups
from lsmlake.operations.scan import ScanFilters
from lsmlake.operations.split import DeletionFile, Section, Split

# Rows merged at once by merge-on-read: bigger overlapping sections are cut into key ranges.
MERGE_PIECE_ROWS = 2_000_000
_FORMATS = {"parquet": ds.ParquetFileFormat(), "orc": ds.OrcFileFormat()}
_SYSTEM = {SEQUENCE_NUMBER: pa.int64(), VALUE_KIND: pa.int8()}


def _load_schema(ctx: ReadContext, schema_id: int) -> TableSchema:
    """An older schema of the table, read once per read context (never shared across tables)."""
    cached = ctx.schema_cache.get(schema_id)
    if cached is None:
        cached = read_schema(ctx.io, posixpath.join(ctx.root, "schema", schema_file_name(schema_id)))
        ctx.schema_cache[schema_id] = cached
    return cached


def output_schema(schema: TableSchema, columns: Sequence[str] | None = None) -> pa.Schema:
    """The table's logical Arrow schema (no field-id metadata), optionally projected."""
    names = list(columns) if columns is not None else schema.field_names
    fields = []
    for name in names:
        f = schema.field(name)
        if f.type.root == "VECTOR":
            raise UnsupportedError(f"column {name!r} has VECTOR type, which lsmlake cannot read yet")
        fields.append(pa.field(name, to_arrow_type(f.type), f.type.nullable))
    return pa.schema(fields)


@dataclass(frozen=True)
class ReadContext:
    """Everything a split reader needs besides the split: plain data, picklable."""

    io: FileIO
    root: str
    schema: TableSchema
    options: CoreOptions
    columns: tuple[str, ...]
    filters: ScanFilters = field(default_factory=ScanFilters)
    schema_cache: dict[int, TableSchema] = field(default_factory=dict, compare=False, repr=False)
    mapping_cache: dict[Any, list[_Target]] = field(default_factory=dict, compare=False, repr=False)
    keep_row_kind: bool = False
    """Audit-log reads: keep retract results and put a ``rowkind`` column (+I, -U, +U, -D) first."""

    def __post_init__(self) -> None:
        known = set(self.schema.field_names)
        for name in self.columns:
            if name not in known:
                raise ValueError(f"unknown column {name!r}; table columns are {self.schema.field_names}")

    @cached_property
    def output_schema(self) -> pa.Schema:
        return output_schema(self.schema, self.columns)

    @cached_property
    def key_names(self) -> list[str]:
        return list(self.schema.trimmed_primary_keys) if self.schema.primary_keys else []

    @cached_property
    def sequence_fields(self) -> list[str]:
        return list(self.options.sequence_fields)

    @cached_property
    def merge_function(self) -> MergeFunction:
        return merge_function_for(self.options, self.schema)

    def read_columns(self, *, merge: bool) -> list[str]:
        """Table columns to read: projection, filter columns, and for merges keys and sequence fields."""
        wanted = set(self.columns)
        if self.filters.full is not None:
            wanted |= set(self.filters.full.fields())
        if merge:
            wanted |= set(self.key_names) | set(self.sequence_fields)
            wanted |= set(read_columns(self.merge_function, sorted(wanted)))
        return [n for n in self.schema.field_names if n in wanted]


# --------------------------------------------------------------------------- one data file


def data_file_path(split: Split, f: DataFileMeta) -> str:
    return f.external_path or posixpath.join(split.bucket_path, f.file_name)


@lru_cache(maxsize=16)
def _external_io(uri_root: str) -> FileIO:
    return FileIO.for_uri(uri_root)[0]


def _io_for(ctx: ReadContext, path: str) -> tuple[FileIO, str]:
    """The FileIO and filesystem path for a table-relative path or an external URI."""
    lower = path.lower()
    if lower.startswith("file:"):
        return _external_io("file:///"), "/" + path[5:].lstrip("/")
    if "://" not in path:
        return ctx.io, path
    scheme, rest = path.split("://", 1)
    bucket = rest.split("/", 1)[0]
    return _external_io(f"{scheme}://{bucket}"), FileIO.for_uri(path)[1]


@dataclass(frozen=True)
class _Target:
    """One wanted table column and where it comes from in a data file."""

    name: str
    arrow_type: pa.DataType
    source: str | None
    """The column's name in the file, None when the file predates the column."""
    same: bool
    """The file column has the table's name and type: filters on it can be pushed into the reader."""


def _mapping(ctx: ReadContext, f: DataFileMeta, names: Sequence[str]) -> list[_Target]:
    """Map table columns to a file's columns by field id, through the schema the file was written with
    (memoized per read context: files of one schema share it)."""
    key = (f.schema_id, f.write_cols, tuple(names))
    cached = ctx.mapping_cache.get(key)
    if cached is None:
        cached = ctx.mapping_cache[key] = _map_columns(ctx, f, names)
    return cached


def _map_columns(ctx: ReadContext, f: DataFileMeta, names: Sequence[str]) -> list[_Target]:
    schema = ctx.schema
    file_schema = schema if f.schema_id == schema.id else _load_schema(ctx, f.schema_id)
    by_id: dict[int, DataField] = {fld.id: fld for fld in file_schema.fields}
    targets = []
    for name in names:
        fld = schema.field(name)
        src = by_id.get(fld.id)
        if f.write_cols is not None and src is not None and src.name not in f.write_cols:
            src = None
        same = (
            src is not None
            and src.name == name
            and src.type.copy(nullable=True) == fld.type.copy(nullable=True)
        )
        targets.append(_Target(name, to_arrow_type(fld.type), None if src is None else src.name, same))
    return targets


@lru_cache(maxsize=32)
def _index_file_bytes(io: FileIO, path: str) -> bytes:
    """DV index files are immutable (unique names): each is read once for all splits of its bucket."""
    return io.read_bytes(path)


def _deletion_mask(ctx: ReadContext, d: DeletionFile | None, f: DataFileMeta) -> Any:
    if d is None:
        return None
    io, path = _io_for(ctx, d.path)
    return _cached_mask(io, path, d.offset, d.length, d.cardinality, f.file_name, f.row_count)


@lru_cache(maxsize=64)
def _cached_mask(
    io: FileIO, path: str, offset: int, length: int, cardinality: int | None, data_file: str, rows: int
) -> Any:
    """A deletion vector as a read-only boolean mask (index files are immutable: decoded once)."""
    dv = read_deletion_vector(_index_file_bytes(io, path), offset, length, name=path)
    check_cardinality(dv, cardinality, name=path, data_file=data_file)
    if dv.is_empty:
        return None
    mask = dv.to_numpy_mask(rows)
    mask.flags.writeable = False
    return mask


_AVRO_TIME_UNITS = {
    "timestamp-millis": "ms",
    "local-timestamp-millis": "ms",
    "timestamp-micros": "us",
    "local-timestamp-micros": "us",
    "timestamp-nanos": "ns",
    "local-timestamp-nanos": "ns",
}


def _avro_logical(avro_type: Any) -> dict[str, Any]:
    """The non-null branch of an Avro field type, as a dict (``{"type": ...}`` for primitives)."""
    if isinstance(avro_type, list):
        avro_type = next((t for t in avro_type if t != "null"), "null")
    return avro_type if isinstance(avro_type, dict) else {"type": avro_type}


def _avro_column(values: list[Any], avro_type: Any) -> pa.Array:
    t = _avro_logical(avro_type)
    logical = t.get("logicalType")
    if logical in _AVRO_TIME_UNITS:
        return pa.array(values, pa.int64()).cast(pa.timestamp(_AVRO_TIME_UNITS[logical]))
    if logical == "date":
        return pa.array(values, pa.int32()).cast(pa.date32())
    if logical == "time-millis":
        return pa.array(values, pa.int32()).cast(pa.time32("ms"))
    if logical == "time-micros":
        return pa.array(values, pa.int64()).cast(pa.time64("us"))
    if logical == "decimal":
        scale, precision = int(t.get("scale", 0)), int(t["precision"])
        unscaled = [None if v is None else int.from_bytes(v, "big", signed=True) for v in values]
        return pa.array(
            [None if u is None else Decimal(u).scaleb(-scale) for u in unscaled],
            pa.decimal128(precision, scale),
        )
    return pa.array(values)


def _read_avro(io: FileIO, path: str, columns: list[str]) -> pa.Table:
    """Avro data files (``file.format=avro``, rare) are decoded record by record."""
    contents = decode_avro_container(io.read_bytes(path), name=path)
    records = [r for r in contents.records if r is not None]
    if not columns:
        return pa.table({"rows": pa.nulls(len(records))}).select([])
    types = {f["name"]: f["type"] for f in json.loads(contents.schema_json)["fields"]}
    return pa.table({c: _avro_column([r.get(c) for r in records], types[c]) for c in columns})


_TRUE = pa.array(["t", "true", "y", "yes", "1"])
_FALSE = pa.array(["f", "false", "n", "no", "0"])


def _cast(col: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """Cast a column read from an older schema to the table's type, with Paimon's string-to-bool rule."""
    if col.type == target:
        return col
    if pa.types.is_boolean(target) and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        lower = pc.utf8_lower(col)
        truthy = pc.is_in(lower, value_set=_TRUE)
        known = pc.or_(truthy, pc.is_in(lower, value_set=_FALSE))
        return pc.if_else(known, truthy, pa.scalar(None, pa.bool_()))
    return pc.cast(col, target, safe=False)


def _read_physical(
    io: FileIO,
    path: str,
    columns: list[str],
    pushed: Predicate | None,
    deleted: Any,
    f: DataFileMeta,
) -> pa.Table:
    """Read ``columns`` of a file; drop rows marked in the deletion mask, then rows failing ``pushed``
    (whose fields are file columns of the table's types). Parquet row groups are pruned by ``pushed``."""
    fmt = posixpath.splitext(path)[1].lstrip(".").lower()
    positions = None
    if fmt == "parquet":
        table, positions = read_row_groups(io, path, columns, pushed)
    elif fmt == "avro":
        table = _read_avro(io, path, columns)
    elif fmt in _FORMATS:
        table = _FORMATS[fmt].make_fragment(path, filesystem=io.fs).to_table(columns=columns)
    else:
        raise UnsupportedError(f"data file {path} has unknown format {fmt!r}")
    if deleted is not None:
        if positions is None and table.num_rows != f.row_count:
            raise CorruptFileError(
                f"data file {path} has {table.num_rows} rows, its manifest says {f.row_count}"
            )
        keep = ~deleted if positions is None else ~deleted[positions]
        table = table.filter(pa.array(keep))
    if pushed is not None and table.num_rows:
        table = table.filter(pushed.to_arrow())
    return table


def read_file(
    ctx: ReadContext, split: Split, index: int, names: Sequence[str], *, push: Predicate | None, system: bool
) -> pa.Table:
    """One data file as a table of ``names`` (table layout, table types), DV and ``push`` applied."""
    f = split.files[index]
    io, path = _io_for(ctx, data_file_path(split, f))
    targets = _mapping(ctx, f, names)
    same = {t.name for t in targets if t.same}
    pushable = push is not None and set(push.fields()) <= same
    file_columns = [t.source for t in targets if t.source is not None]
    file_columns += list(_SYSTEM) if system else []
    deleted = _deletion_mask(ctx, split.deletion_files[index], f)
    try:
        raw = _read_physical(io, path, file_columns, push if pushable else None, deleted, f)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(f"cannot read data file {path}: {e}") from e
    arrays: list[pa.Array | pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    for t in targets:
        col = raw.column(t.source) if t.source is not None else pa.nulls(raw.num_rows, t.arrow_type)
        arrays.append(_cast(col, t.arrow_type))
        fields.append(pa.field(t.name, t.arrow_type))
    for name, arrow_type in _SYSTEM.items() if system else ():
        arrays.append(_cast(raw.column(name), arrow_type))
        fields.append(pa.field(name, arrow_type))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields)) if fields else raw
    if push is not None and not pushable and table.num_rows:
        table = table.filter(push.to_arrow())
    return table


# --------------------------------------------------------------------------- splits


def _finish(ctx: ReadContext, table: pa.Table, *, filtered: bool) -> pa.Table:
    """Apply the full filter (unless already exact) and the projection, in output schema."""
    if not filtered and ctx.filters.full is not None and table.num_rows:
        table = table.filter(ctx.filters.full.to_arrow())
    if ctx.keep_row_kind:
        return _with_row_kind(ctx, table)
    if not ctx.columns:
        return table.select([])
    return pa.Table.from_arrays([table.column(n) for n in ctx.columns], schema=ctx.output_schema)


ROW_KIND_COLUMN = "rowkind"
_ROW_KIND_TEXT = pa.array(["+I", "-U", "+U", "-D"])


def _with_row_kind(ctx: ReadContext, table: pa.Table) -> pa.Table:
    """The projected columns behind a ``rowkind`` column (+I for append tables, which have no kinds)."""
    if VALUE_KIND in table.column_names:
        kinds = _ROW_KIND_TEXT.take(pa.array(table.column(VALUE_KIND).to_numpy().astype("int64")))
    else:
        kinds = pa.array(["+I"] * table.num_rows, pa.string())
    columns = [kinds, *(table.column(n) for n in ctx.columns)]
    schema = pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), False), *ctx.output_schema])
    return pa.Table.from_arrays(columns, schema=schema)


def read_raw(ctx: ReadContext, split: Split) -> Iterator[pa.Table]:
    """Read a raw-convertible split file by file: projection, full filter pushdown, deletion vectors."""
    names = ctx.read_columns(merge=False)
    for i, f in enumerate(split.files):
        # A level-0 primary-key file is raw only because its manifest says it has no delete rows;
        # some writers (pypaimon 2.1's pure-Python one) record 0 wrongly, so check the row kinds.
        guard = bool(ctx.key_names) and f.level == 0 and not ctx.keep_row_kind
        system = guard or (ctx.keep_row_kind and bool(ctx.key_names))
        table = read_file(ctx, split, i, names, push=ctx.filters.full, system=system)
        if guard:
            table = drop_retracts(table)
        if table.num_rows:
            yield _finish(ctx, table, filtered=True)


def merge_rows(
    table: pa.Table,
    keys: Sequence[str],
    *,
    merge_function: MergeFunction | None = None,
    engine: str = "deduplicate",
    sequence_fields: Sequence[str] = (),
    descending: bool = False,
    ignore_delete: bool = False,
    where: str = "",
    keep_deletes: bool = False,
    ordered_runs: bool = False,
) -> pa.Table:
    """Vectorized merge of the rows of one overlapping section: one result per key, deletes dropped
    (kept with ``keep_deletes``, for audit-log reads).

    ``ordered_runs``: ``table`` is a concatenation of files, each sorted by (key, sequence number), every
    file's sequence numbers above the previous file's -- then a stable sort by key is enough.

    ``table`` holds key columns, sequence fields, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` (and the
    value columns the engine folds). Rows of a key are ordered by (sequence fields, sequence number)
    and folded by ``merge_function`` (default: the ``engine`` named, deduplicate or first-row). Results
    that retract (-U/-D) are dropped, as Java's DropDeleteReader does.
    """
    if merge_function is None:
        if engine == "deduplicate":
            merge_function = Deduplicate(ignore_delete=ignore_delete)
        elif engine == "first-row":
            merge_function = FirstRow(ignore_delete=ignore_delete)
        else:
            raise UnsupportedError(f"merge-engine {engine} needs its merge function ({where})")
    order = "descending" if descending else "ascending"
    sort_keys = [(k, "ascending") for k in keys]
    sort_keys += [(f, order) for f in sequence_fields] if not isinstance(merge_function, FirstRow) else []
    if len(sort_keys) == len(keys) and ordered_runs:
        # runs of older sequence numbers come first: a stable sort by key alone keeps (key, sequence) order
        idx = pa.array(stable_key_order(table, keys, sorted_runs=True))
    else:
        sort_keys.append((SEQUENCE_NUMBER, "ascending"))
        idx = sort_indices(table.select([k for k, _ in sort_keys]), sort_keys)
    try:
        if isinstance(merge_function, (Deduplicate, FirstRow)):
            # sort only keys and kinds; take the surviving rows of the whole table once, in key order
            picked = merge_function.pick(table.select([*keys, VALUE_KIND]).take(idx), keys)
            merged = table.take(pa.array(idx.to_numpy()[picked]))
        else:
            merged = merge_function.merge(table.take(idx), keys)
    except LsmlakeError as e:
        raise type(e)(f"{e} ({where})" if where else str(e)) from None
    return merged if keep_deletes else drop_retracts(merged)


def _merge(ctx: ReadContext, table: pa.Table, *, ordered_runs: bool) -> pa.Table:
    opts = ctx.options
    return merge_rows(
        table,
        ctx.key_names,
        merge_function=ctx.merge_function,
        sequence_fields=ctx.sequence_fields,
        descending=(opts.get("sequence.field.sort-order") or "ascending").lower() == "descending",
        where=f"table {ctx.root}",
        keep_deletes=ctx.keep_row_kind,
        ordered_runs=ordered_runs,
    )


def _section_files(split: Split, section: Section) -> tuple[list[int], bool]:
    """The section's files, oldest sequence numbers first, and whether their sequence ranges are disjoint
    in that order (then merging needs only a stable sort by key)."""
    index = {f.identifier(): i for i, f in enumerate(split.files)}
    files = sorted((f for run in section for f in run), key=lambda f: f.min_sequence_number)
    ordered = all(a.max_sequence_number < b.min_sequence_number for a, b in itertools.pairwise(files))
    return [index[f.identifier()] for f in files], ordered


def read_merge(ctx: ReadContext, split: Split) -> Iterator[pa.Table]:
    """Merge-on-read, one IntervalPartition section at a time (memory bounded by the largest)."""
    names = ctx.read_columns(merge=True)
    for section in split.sections or ():
        overlapping = len(section) > 1
        push = ctx.filters.key_safe if overlapping else ctx.filters.full
        indices, ordered_runs = _section_files(split, section)
        for piece in _pieces(ctx, split, indices, push) if overlapping else [push]:
            tables = [read_file(ctx, split, i, names, push=piece, system=True) for i in indices]
            table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            if not table.num_rows:
                continue
            if overlapping:
                if merge_skips_shadowed(ctx.options):  # lookup tables: see mergetree/lookup_merge.py
                    levels = np.repeat([split.files[i].level for i in indices], [t.num_rows for t in tables])
                    table = table.filter(pa.array(shadowed_mask(table.select(ctx.key_names), levels)))
                table = _merge(ctx, table, ordered_runs=ordered_runs)
            elif not ctx.keep_row_kind:
                table = drop_retracts(table)
            if table.num_rows:
                out = _finish(ctx, table, filtered=not overlapping)
                if out.num_rows:
                    yield out


def _pieces(
    ctx: ReadContext, split: Split, indices: Sequence[int], push: Predicate | None
) -> list[Predicate | None]:
    """Key ranges that bound the memory of merging a large overlapping section (one piece when small)."""
    files = [split.files[i] for i in indices]
    if any(f.external_path for f in files):
        return [push]
    paths = [data_file_path(split, f) for f in files]
    pieces = section_pieces(ctx.io, ctx.schema, paths, files, base=push, max_rows=MERGE_PIECE_ROWS)
    return pieces or [push]


def read_split(ctx: ReadContext, split: Split) -> Iterator[pa.Table]:
    """The rows of one split as a stream of tables in the output schema."""
    return read_raw(ctx, split) if split.raw_convertible else read_merge(ctx, split)


def concat(parts: Sequence[pa.Table], schema: pa.Schema) -> pa.Table:
    """Concatenate tables of one schema (keeping the row count of column-less tables)."""
    if not parts:
        return schema.empty_table()
    if not schema.names:
        return pa.table({"rows": pa.nulls(sum(p.num_rows for p in parts))}).select([])
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def read_split_table(ctx: ReadContext, split: Split) -> pa.Table:
    return concat(list(read_split(ctx, split)), ctx.output_schema)
