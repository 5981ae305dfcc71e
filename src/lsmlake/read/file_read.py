"""One data file as Arrow in the table's current layout: columns mapped by field id, deletion vector and
pushed filter applied, Parquet row groups pruned."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyroaring import BitMap

from lsmlake.core.caches import MB, ByteLRU, FunctionCache
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.types import DataField, to_arrow_type
from lsmlake.errors import CorruptFileError, UnsupportedError
from lsmlake.expr import Predicate, filter_table
from lsmlake.format.avro_data import iter_avro
from lsmlake.format.data_file_writer import FILE_SOURCE_APPEND
from lsmlake.format.parquet_files import iter_row_groups
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.deletion_vector import check_cardinality, read_deletion_vector
from lsmlake.read.context import ReadContext, load_schema
from lsmlake.read.sorted_slice import sorted_bounds
from lsmlake.scan.split import DeletionFile, Split

_FORMATS = {"orc": ds.OrcFileFormat()}
SYSTEM_COLUMNS = {SEQUENCE_NUMBER: pa.int64(), VALUE_KIND: pa.int8()}


def data_file_path(split: Split, f: DataFileMeta) -> str:
    return f.external_path or posixpath.join(split.bucket_path, f.file_name)


@lru_cache(maxsize=16)
def _external_io(uri_root: str) -> FileIO:
    return FileIO.for_uri(uri_root)[0]


FunctionCache("external file systems", _external_io)


def io_for(ctx: ReadContext, path: str, external: bool, what: str) -> tuple[FileIO, str]:
    """The FileIO and filesystem path of a file: a table path as it is, an external path (from
    metadata) confined to the table and its external roots (else a CorruptFileError naming ``what``)."""
    if not external:
        return ctx.io, path
    storage, fs_path = ctx.guard.external(path, source=what, field="external path")
    if storage == ctx.guard.storage:
        return ctx.io, fs_path
    if storage == "file":
        return _external_io("file:///"), fs_path
    return _external_io(f"{storage}://{fs_path.split('/', 1)[0]}"), fs_path


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
    file_schema = schema if f.schema_id == schema.id else load_schema(ctx, f.schema_id)
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


_index_files: ByteLRU[bytes] = ByteLRU("deletion vector index files", 64 * MB)
_masks: ByteLRU[Any] = ByteLRU("deletion vector masks", 64 * MB)


def _index_file_bytes(io: FileIO, path: str) -> bytes:
    """DV index files are immutable (unique names): each is read once for all splits of its bucket."""

    def load() -> bytes:
        try:
            return io.read_bytes(path)
        except FileNotFoundError as e:
            raise io.missing(path, "deletion vector index file") from e

    return _index_files.get_or_load((io, path), load, len)


def deletion_mask(ctx: ReadContext, d: DeletionFile | None, f: DataFileMeta) -> Any:
    if d is None:
        return None
    external = not d.path.startswith(ctx.root.rstrip("/") + "/")
    io, path = io_for(ctx, d.path, external, f"deletion vector index file of data file {f.file_name}")
    return _cached_mask(io, path, d.offset, d.length, d.cardinality, f.file_name, f.row_count)


def _cached_mask(
    io: FileIO, path: str, offset: int, length: int, cardinality: int | None, data_file: str, rows: int
) -> Any:
    """A deletion vector as a read-only boolean mask (index files are immutable: decoded once)."""
    return _masks.get_or_load(
        (io, path, offset, length, cardinality, data_file, rows),
        lambda: _decode_mask(io, path, offset, length, cardinality, data_file, rows),
        lambda mask: 0 if mask is None else mask.nbytes,
    )


def _decode_mask(
    io: FileIO, path: str, offset: int, length: int, cardinality: int | None, data_file: str, rows: int
) -> Any:
    dv = read_deletion_vector(_index_file_bytes(io, path), offset, length, name=path)
    check_cardinality(dv, cardinality, name=path, data_file=data_file)
    if dv.is_empty:
        return None
    mask = dv.to_numpy_mask(rows)
    mask.flags.writeable = False
    return mask


def unselected(split: Split, f: DataFileMeta, deleted: Any) -> Any:
    """``deleted`` (a drop mask, or None) widened by the rows outside the file's index row selection."""
    data = dict(split.row_selections).get(f.file_name)
    if data is None:
        return deleted
    rows = np.asarray(BitMap.deserialize(data).to_array(), dtype=np.int64)
    if len(rows) and rows[-1] >= f.row_count:
        raise CorruptFileError(
            f"row selection of data file {f.file_name} names row {rows[-1]} of {f.row_count}"
        )
    drop = np.ones(f.row_count, dtype=bool)
    drop[rows] = False
    return drop if deleted is None else drop | deleted


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


def read_physical(
    io: FileIO,
    path: str,
    columns: list[str],
    pushed: Predicate | None,
    deleted: Any,
    f: DataFileMeta,
    threads: bool,
    sorted_by: str | None,
    max_rows: int | None = None,
) -> Iterator[pa.Table]:
    """Read ``columns`` of a file, in pieces of about ``max_rows`` rows (Parquet: whole row groups;
    ORC: record batches; Avro: whole blocks; all at once without it); drop rows marked in the deletion
    mask, then rows failing ``pushed`` (whose fields are file columns of the table's types). Parquet row groups are
    pruned by ``pushed``; in a file sorted by the column ``sorted_by``, a range of it is cut out as a
    slice. Yields at least one table (maybe empty)."""
    fmt = posixpath.splitext(path)[1].lstrip(".").lower()
    if fmt == "parquet":
        pieces: Iterator[tuple[pa.Table, Any]] = iter_row_groups(
            io,
            path,
            columns,
            pushed,
            use_threads=threads,
            constants=(VALUE_KIND,),
            positions=deleted is not None,
            file_size=f.file_size,
            max_rows=max_rows,
            dropped=deleted,
        )
    elif fmt == "avro":
        pieces = iter_avro(io, path, columns, max_rows)
    elif fmt in _FORMATS:
        pieces = _format_batches(_FORMATS[fmt].make_fragment(path, filesystem=io.fs), columns, max_rows)
    else:
        raise UnsupportedError(f"data file {path} has unknown format {fmt!r}")
    for table, positions in pieces:
        yield _kept(table, positions, path, pushed, deleted, f, sorted_by)


def _format_batches(
    fragment: ds.Fragment, columns: list[str], max_rows: int | None
) -> Iterator[tuple[pa.Table, Any]]:
    """A whole file (positions None), or its record batches of at most ``max_rows`` with positions."""
    if max_rows is None:
        yield fragment.to_table(columns=columns), None
        return
    offset = 0
    empty = True
    for batch in fragment.to_batches(columns=columns, batch_size=max_rows):
        empty = False
        yield pa.Table.from_batches([batch]), np.arange(offset, offset + batch.num_rows)
        offset += batch.num_rows
    if empty:
        yield fragment.physical_schema.empty_table().select(columns), np.zeros(0, dtype=np.int64)


def _kept(
    table: pa.Table,
    positions: Any,
    path: str,
    pushed: Predicate | None,
    deleted: Any,
    f: DataFileMeta,
    sorted_by: str | None,
) -> pa.Table:
    """The rows of one piece (at file ``positions``; None: the whole file) the deletion mask and the
    pushed filter keep."""
    keep: Any = None
    if deleted is not None:
        if positions is None and table.num_rows != f.row_count:
            raise CorruptFileError(
                f"data file {path} has {table.num_rows} rows, its manifest says {f.row_count}"
            )
        keep = pa.array(~deleted if positions is None else ~deleted[positions])
    if pushed is not None and table.num_rows:
        bounds = sorted_bounds(table, pushed, sorted_by) if sorted_by is not None else None
        if bounds is not None:
            start, stop = bounds
            table = table.slice(start, stop - start)
            keep = None if keep is None else keep.slice(start, stop - start)
        else:  # one filter for both: half the copying
            holds = pushed.mask(table)
            keep = holds if keep is None else pc.and_kleene(holds, keep)
    return table if keep is None else table.filter(keep)


@dataclass(frozen=True)
class _FilePlan:
    """How to read files of one schema for one read: the file columns, what the pushed filter may use,
    and the output schema (memoized per read context)."""

    targets: list[_Target]
    file_columns: list[str]
    system_columns: dict[str, pa.DataType]
    pushable: bool
    sorted_by: str | None
    schema: pa.Schema


def file_plan(
    ctx: ReadContext,
    f: DataFileMeta,
    names: Sequence[str],
    push: Predicate | None,
    system: bool,
    sequence: bool,
) -> _FilePlan:
    pushed_fields = push.fields() if push is not None else None
    key = ("plan", f.schema_id, f.write_cols, tuple(names), system, sequence, pushed_fields)
    cached = ctx.mapping_cache.get(key)
    if cached is not None:
        return cast(_FilePlan, cached)
    targets = _mapping(ctx, f, names)
    system_columns = (
        {n: t for n, t in SYSTEM_COLUMNS.items() if sequence or n != SEQUENCE_NUMBER} if system else {}
    )
    same = {t.name for t in targets if t.same}
    # primary-key data files are sorted by the key: a range of its first column is one slice
    first_key = ctx.key_names[0] if ctx.key_names else None
    fields = [pa.field(t.name, t.arrow_type) for t in targets]
    fields += [pa.field(n, t) for n, t in system_columns.items()]
    plan = ctx.mapping_cache[key] = _FilePlan(
        targets=targets,
        file_columns=[t.source for t in targets if t.source is not None] + list(system_columns),
        system_columns=system_columns,
        pushable=pushed_fields is not None and pushed_fields <= same,
        sorted_by=first_key if first_key in same else None,
        schema=pa.schema(fields),
    )
    return plan


def read_file(
    ctx: ReadContext,
    split: Split,
    index: int,
    names: Sequence[str],
    *,
    push: Predicate | None,
    system: bool,
    sequence: bool = True,
) -> pa.Table:
    """One data file as a table of ``names`` (table layout, table types), DV and ``push`` applied.

    ``system`` adds ``_VALUE_KIND`` and, unless ``sequence`` is False, ``_SEQUENCE_NUMBER``.
    """
    pieces = read_file_pieces(ctx, split, index, names, push=push, system=system, sequence=sequence)
    return next(pieces)


def read_file_pieces(
    ctx: ReadContext,
    split: Split,
    index: int,
    names: Sequence[str],
    *,
    push: Predicate | None,
    system: bool,
    sequence: bool = True,
    max_rows: int | None = None,
    selected: bool = False,
) -> Iterator[pa.Table]:
    """:func:`read_file` in pieces of about ``max_rows`` rows before filtering, in file order (at
    least one, maybe empty; one without ``max_rows``). A Parquet row group is never split, so a piece
    may hold more rows than ``max_rows`` when the file's row groups do: callers slice. ``selected``:
    only the rows of the split's file-index row selection for the file are read (raw reads, where
    ``push`` is the whole filter and every row stands alone)."""
    f = split.files[index]
    plan = file_plan(ctx, f, names, push, system, sequence)
    io, path = io_for(ctx, data_file_path(split, f), bool(f.external_path), f"data file {f.file_name}")
    deleted = deletion_mask(ctx, split.deletion_files[index], f)
    stamped = file_sequence(ctx, f) if SEQUENCE_NUMBER in plan.system_columns else None
    if selected:
        deleted = unselected(split, f, deleted)
    pushed = push if plan.pushable else None
    raws = read_physical(
        io, path, plan.file_columns, pushed, deleted, f, ctx.decode_threads, plan.sorted_by, max_rows
    )
    while True:
        try:
            raw = next(raws, None)
        except FileNotFoundError as e:
            raise io.missing(path, "data file") from e
        except (OSError, pa.ArrowException) as e:
            raise CorruptFileError(f"cannot read data file {path}: {e}") from e
        if raw is None:
            return
        yield in_layout(plan, raw, push, stamped)


def file_sequence(ctx: ReadContext, f: DataFileMeta) -> int | None:
    """Under ``sequence.snapshot-ordering``, the sequence number every row of an appended file has: the
    snapshot id its commit stamped into the file's metadata (the numbers on disk are the writer's, not
    ordered across writers); None for other files, whose rows keep their own."""
    if not ctx.options.get(CoreOptions.SEQUENCE_SNAPSHOT_ORDERING):
        return None
    if f.file_source is None:
        raise UnsupportedError(
            f"data file {f.file_name}: sequence.snapshot-ordering needs data files that record their source "
            "(APPEND or COMPACT); files of older writers cannot be ordered by their commit's snapshot id"
        )
    return f.min_sequence_number if f.file_source == FILE_SOURCE_APPEND else None


def in_layout(plan: _FilePlan, raw: pa.Table, push: Predicate | None, sequence: int | None = None) -> pa.Table:
    """Rows read from a file in the table's layout and types, the part of ``push`` not pushed applied;
    ``sequence`` (see :func:`file_sequence`) replaces every row's ``_SEQUENCE_NUMBER``."""
    if not plan.schema:
        return raw if plan.pushable else filter_table(raw, push)
    arrays: list[pa.Array | pa.ChunkedArray] = []
    for t in plan.targets:
        col = raw.column(t.source) if t.source is not None else pa.nulls(raw.num_rows, t.arrow_type)
        arrays.append(_cast(col, t.arrow_type))
    arrays += [
        pa.array(np.full(raw.num_rows, sequence, dtype=np.int64))
        if name == SEQUENCE_NUMBER and sequence is not None
        else _cast(raw.column(name), arrow_type)
        for name, arrow_type in plan.system_columns.items()
    ]
    table = pa.Table.from_arrays(arrays, schema=plan.schema)
    return table if plan.pushable else filter_table(table, push)
