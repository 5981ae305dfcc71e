"""Split readers: raw reads with deletion vectors, and merge-on-read section by section, in Arrow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.types import to_arrow_type
from lsmlake.errors import LsmlakeError, MissingFileError, UnsupportedError
from lsmlake.expr import Predicate, filter_table
from lsmlake.mergetree.key_sort import by_sequence, integer_key, newest_of_each_key, stable_key_order
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND
from lsmlake.mergetree.lookup_merge import merge_skips_shadowed, shadowed_mask
from lsmlake.mergetree.merge_function import (
    Deduplicate,
    FirstRow,
    MergeFunction,
    drop_retracts,
    sort_indices,
)
from lsmlake.read.context import ROW_KIND_COLUMN, ReadContext, output_schema
from lsmlake.read.file_read import data_file_path, read_file, read_file_pieces
from lsmlake.read.key_chunks import section_pieces
from lsmlake.read.merge_cursor import MERGE_STATS, FileCursor, merge_steps, streamable_key_types
from lsmlake.scan.split import Section, Split

__all__ = [
    "ROW_KIND_COLUMN",
    "ReadContext",
    "concat",
    "merge_rows",
    "output_schema",
    "read_file",
    "read_split",
]

# Rows merged at once by merge-on-read: bigger overlapping sections are cut into key ranges.
MERGE_PIECE_ROWS = 2_000_000


# --------------------------------------------------------------------------- splits


def _finish(ctx: ReadContext, table: pa.Table, *, filtered: bool) -> pa.Table:
    """Apply the full filter (unless already exact) and the projection, in output schema."""
    if not filtered:
        table = filter_table(table, ctx.filters.full)
    if ctx.keep_row_kind:
        return _with_row_kind(ctx, table)
    if not ctx.columns:
        return table.select([])
    return pa.Table.from_arrays([table.column(n) for n in ctx.columns], schema=ctx.output_schema)


_ROW_KIND_TEXT = pa.array(["+I", "-U", "+U", "-D"])


def _with_row_kind(ctx: ReadContext, table: pa.Table) -> pa.Table:
    """The projected columns behind a ``rowkind`` column (+I for append tables, which have no kinds)."""
    if VALUE_KIND in table.column_names:
        kinds = _ROW_KIND_TEXT.take(pa.array(table.column(VALUE_KIND).to_numpy().astype("int64")))
    else:
        kinds = pa.array(["+I"] * table.num_rows, pa.string())
    columns = [kinds, *(table.column(n) for n in ctx.columns)]
    return pa.Table.from_arrays(columns, schema=ctx.result_schema)


def read_raw(ctx: ReadContext, split: Split) -> Iterator[pa.Table]:
    """Read a raw-convertible split file by file: projection, full filter pushdown, deletion vectors."""
    names = ctx.read_columns(merge=False)
    for i, f in enumerate(split.files):
        # A level-0 primary-key file is raw only because its manifest says it has no delete rows;
        # some writers (pypaimon 2.1's pure-Python one) record 0 wrongly, so check the row kinds.
        guard = bool(ctx.key_names) and f.level == 0 and not ctx.keep_row_kind
        system = guard or (ctx.keep_row_kind and bool(ctx.key_names))
        pieces = read_file_pieces(
            ctx, split, i, names, push=ctx.filters.full, system=system, max_rows=ctx.batch_rows, selected=True
        )
        for table in pieces:
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
    run_lengths: Sequence[int] = (),
) -> pa.Table:
    """Vectorized merge of the rows of one overlapping section: one result per key, deletes dropped
    (kept with ``keep_deletes``, for audit-log reads).

    ``ordered_runs``: ``table`` is a concatenation of files, each sorted by (key, sequence number), every
    file's sequence numbers above the previous file's -- then a stable sort by key is enough;
    ``run_lengths`` (the files' row counts) lets deduplicate skip even that sort.

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
    int_key = integer_key(table, keys)
    by_arrival = len(sort_keys) == len(keys) and ordered_runs
    if (
        by_arrival
        and isinstance(merge_function, Deduplicate)
        and not merge_function.ignore_delete
        and int_key is not None
        and (newest := newest_of_each_key(int_key, run_lengths)) is not None
    ):
        merged = _take_sorted(table, newest)
        return merged if keep_deletes else drop_retracts(merged)
    if by_arrival:
        # runs of older sequence numbers come first: a stable sort by key alone keeps (key, sequence) order
        idx = pa.array(stable_key_order(table, keys, sorted_runs=True, integer_keys=int_key))
    else:
        sort_keys.append((SEQUENCE_NUMBER, "ascending"))
        idx = sort_indices(table.select([k for k, _ in sort_keys]), sort_keys)
    try:
        if (
            isinstance(merge_function, Deduplicate)
            and not merge_function.ignore_delete
            and int_key is not None
        ):
            # the newest row of each key wins: the last of each run of equal keys, found in numpy
            order = idx.to_numpy()
            sorted_keys = int_key[order]
            last = np.ones(len(order), dtype=bool)
            last[:-1] = sorted_keys[1:] != sorted_keys[:-1]
            merged = _take_sorted(table, order[np.flatnonzero(last)])
        elif isinstance(merge_function, (Deduplicate, FirstRow)):
            # sort only keys and kinds; take the surviving rows of the whole table once, in key order
            picked = merge_function.pick(table.select([*keys, VALUE_KIND]).take(idx), keys)
            merged = _take_sorted(table, idx.to_numpy()[picked])
        else:
            merged = merge_function.merge(table.take(idx), keys)
    except LsmlakeError as e:
        raise type(e)(f"{e} ({where})" if where else str(e)) from None
    return merged if keep_deletes else drop_retracts(merged)


def _take_sorted(table: pa.Table, indices: np.ndarray[Any, Any]) -> pa.Table:
    """``table``'s rows at ``indices``, which come from sorting the table: in bounds, so unchecked."""
    return pc.take(table, pa.array(indices), boundscheck=False)


def _merge(ctx: ReadContext, table: pa.Table, *, ordered_runs: bool, run_lengths: Sequence[int]) -> pa.Table:
    opts = ctx.options
    return merge_rows(
        table,
        ctx.key_names,
        merge_function=ctx.merge_function,
        sequence_fields=ctx.sequence_fields,
        descending=opts.sequence_descending,
        where=f"table {ctx.root}",
        keep_deletes=ctx.keep_row_kind,
        ordered_runs=ordered_runs,
        run_lengths=run_lengths,
    )


def _picks_by_arrival(ctx: ReadContext) -> bool:
    """Whether merging keeps one of each key's rows chosen by arrival order alone (no sequence fields)."""
    return (
        isinstance(ctx.merge_function, (Deduplicate, FirstRow))
        and not ctx.sequence_fields
        and not merge_skips_shadowed(ctx.options)
    )


def _section_files(split: Split, section: Section) -> tuple[list[int], bool]:
    """The section's files, oldest sequence numbers first, and whether their sequence ranges are disjoint
    in that order (then merging needs only a stable sort by key)."""
    index = {f.identifier(): i for i, f in enumerate(split.files)}
    files, ordered = by_sequence(f for run in section for f in run)
    return [index[f.identifier()] for f in files], ordered


def read_merge(ctx: ReadContext, split: Split) -> Iterator[pa.Table]:
    """Merge-on-read, one IntervalPartition section at a time (memory bounded by the largest); a
    streaming read (``ctx.batch_rows``) reads files in pieces and merges sections in key-range steps."""
    names = ctx.read_columns(merge=True)
    for section in split.sections or ():
        overlapping = len(section) > 1
        push = ctx.filters.key_safe if overlapping else ctx.filters.full
        indices, ordered_runs = _section_files(split, section)
        # sequence numbers only order rows of one key; files in sequence order need none for picking
        sequence = overlapping and not (ordered_runs and _picks_by_arrival(ctx))
        if not overlapping:
            for i in indices:
                pieces = read_file_pieces(
                    ctx, split, i, names, push=push, system=True, sequence=False, max_rows=ctx.batch_rows
                )
                for table in pieces:
                    yield from _merged(ctx, split, [i], [table], overlapping=False, ordered_runs=True)
            continue
        if ctx.batch_rows is not None and _streamable(ctx):
            steps = _streamed_steps(ctx, split, indices, names, push, sequence)
        else:
            steps = _piece_steps(ctx, split, indices, names, push, sequence)
        for step_indices, tables in steps:
            yield from _merged(ctx, split, step_indices, tables, overlapping=True, ordered_runs=ordered_runs)


def _piece_steps(
    ctx: ReadContext,
    split: Split,
    indices: Sequence[int],
    names: Sequence[str],
    push: Predicate | None,
    sequence: bool,
) -> Iterator[tuple[list[int], list[pa.Table]]]:
    """A whole overlapping section per step, or its key-range pieces when it is large."""
    for piece in _pieces(ctx, split, indices, push):
        tables = [
            read_file(ctx, split, i, names, push=piece, system=True, sequence=sequence) for i in indices
        ]
        yield list(indices), tables


def _streamed_steps(
    ctx: ReadContext,
    split: Split,
    indices: Sequence[int],
    names: Sequence[str],
    push: Predicate | None,
    sequence: bool,
) -> Iterator[tuple[list[int], list[pa.Table]]]:
    """An overlapping section's files read in pieces of ``ctx.batch_rows``, merged in key-range steps:
    each step holds every row of its keys in every file, so memory is a few pieces per file."""
    cursors = [
        FileCursor(
            read_file_pieces(
                ctx, split, i, names, push=push, system=True, sequence=sequence, max_rows=ctx.batch_rows
            ),
            ctx.key_names,
        )
        for i in indices
    ]
    for step in merge_steps(cursors):
        kept = [(i, t) for i, t in zip(indices, step, strict=True) if t is not None]
        MERGE_STATS.record(sum(t.num_rows for _, t in kept))
        yield [i for i, _ in kept], [t for _, t in kept]


def _streamable(ctx: ReadContext) -> bool:
    """Whether the key columns compare as the files are sorted (else sections merge in pieces)."""
    types = [to_arrow_type(ctx.schema.field(k).type) for k in ctx.key_names]
    return bool(types) and streamable_key_types(types)


def _merged(
    ctx: ReadContext,
    split: Split,
    indices: Sequence[int],
    tables: Sequence[pa.Table],
    *,
    overlapping: bool,
    ordered_runs: bool,
) -> Iterator[pa.Table]:
    """The rows of one step (the files' rows of some keys, files in ``indices`` order), merged when
    the files overlap, filtered and projected."""
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if not table.num_rows:
        return
    if overlapping:
        lengths = [t.num_rows for t in tables]
        if merge_skips_shadowed(ctx.options):  # lookup tables: see mergetree/lookup_merge.py
            levels = np.repeat([split.files[i].level for i in indices], lengths)
            table = table.filter(pa.array(shadowed_mask(table.select(ctx.key_names), levels)))
            lengths = []
        table = _merge(ctx, table, ordered_runs=ordered_runs, run_lengths=lengths)
    elif not ctx.keep_row_kind:
        table = drop_retracts(table)
    if table.num_rows:
        # merged rows of key-filtered files already hold a filter on keys alone
        exact = not overlapping or ctx.filters.full == ctx.filters.key_safe
        out = _finish(ctx, table, filtered=exact)
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
    """The rows of one split as a stream of tables in the output schema; a missing data or deletion
    vector file is a MissingFileError naming the snapshot that references it."""
    tables = read_raw(ctx, split) if split.raw_convertible else read_merge(ctx, split)
    try:
        yield from tables
    except MissingFileError as e:
        where = f"snapshot {split.snapshot_id} of table" if split.snapshot_id is not None else "table"
        raise MissingFileError(f"{e}; {where} {ctx.root} references it") from e


def concat(parts: Sequence[pa.Table], schema: pa.Schema) -> pa.Table:
    """Concatenate tables of one schema (keeping the row count of column-less tables)."""
    if not parts:
        return schema.empty_table()
    if not schema.names:
        return pa.table({"rows": pa.nulls(sum(p.num_rows for p in parts))}).select([])
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def read_split_table(ctx: ReadContext, split: Split) -> pa.Table:
    """The rows of one split as one table in ``ctx.result_schema`` (also when none are left)."""
    return concat(list(read_split(ctx, split)), ctx.result_schema)
