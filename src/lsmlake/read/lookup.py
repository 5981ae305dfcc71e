"""Point lookups: the latest live row of each primary key given. Keys go to their partition and bucket
by Paimon's hash; in each bucket, files newest level first, skipped by key range and bloom filter, are
binary-searched in their cached key columns; deletion vectors are applied; the rows found for a key are
merged (or not) exactly as a read of the snapshot merges them, so a lookup equals a filtered read."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lsmlake.core.caches import MB, ByteLRU
from lsmlake.core.options import CoreOptions
from lsmlake.errors import UnsupportedError
from lsmlake.mergetree.key_sort import integer_key
from lsmlake.mergetree.lookup_merge import merge_skips_shadowed, shadowed_mask
from lsmlake.mergetree.merge_function import drop_retracts
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.context import ReadContext
from lsmlake.read.fallback import fallback_table
from lsmlake.read.file_rows import deleted_mask, file_keys, resize_lookup_caches, rows_at, search_key_blocks
from lsmlake.read.lookup_keys import key_table
from lsmlake.read.lookup_plan import (
    FEW_KEYS,
    Bucket,
    LookupPlan,
    bloom_type,
    bucket_of,
    key_hashes,
    load_bloom,
    lookup_plan,
    partition_ids,
    within,
)
from lsmlake.read.lookup_point import lookup_point
from lsmlake.read.split_read import merge_rows
from lsmlake.scan.travel import time_travel

ROW = "__lookup_row"
_LEVEL = "__lookup_level"
_MERGED = "__lookup_merged"
_POSITION = "__lookup_position"
_BUCKET = "__lookup_bucket"
"""Which (partition, bucket) a row was found in: a key's rows are merged within one bucket only (a key
moved to another partition keeps its deleted rows, with that bucket's sequence numbers, in the old one)."""


def lookup_rows(
    table: TableHandle, keys: Any, *, columns: Sequence[str] | None = None, snapshot_id: int | None = None
) -> pa.Table:
    """The latest live row of each distinct key of ``keys`` that the table holds, in the order the keys
    first appear; keys the table lacks give no row. Columns: the primary key (in the order ``keys``
    names it), then ``columns`` (default: every other column). As ``read``: ``snapshot_id`` or a
    time-travel option reads that snapshot under its own schema, and the latest snapshot adds the
    `scan.fallback-branch` branch's rows of partitions the table lacks."""
    if not table.schema.primary_keys:
        raise UnsupportedError(
            f"table {table.name} has no primary key: lookup needs one (use read(filter=...))"
        )
    if snapshot_id is None and (single := _single_value(keys)) is not None:
        point = lookup_point(table, *single, columns)
        if point is not None:
            return point
    travel = time_travel(table, snapshot_id=snapshot_id)  # or the table's own time-travel option
    if travel is not None:  # a past snapshot is read under its own schema, as read() reads it
        table = travel.table
    schema = table.schema
    given = key_table(table, keys)
    order = given.column_names
    rest = list(columns) if columns is not None else schema.field_names
    wanted = tuple(order + [c for c in rest if c not in order])
    options = table.options
    ctx, names = _context(table, options, wanted)
    resize_lookup_caches(
        options.get(CoreOptions.LOOKUP_CACHE_MAX_MEMORY_SIZE),
        options.get(CoreOptions.LOOKUP_CACHE_MAX_DISK_SIZE),
        options.get(CoreOptions.LOOKUP_CACHE_FILE_RETENTION),
    )
    plan = lookup_plan(table, options, travel.snapshot if travel is not None else None)
    if given.num_rows == 0:
        return ctx.output_schema.empty_table()
    distinct = _distinct(given)
    results = [_found(ctx, table, plan, distinct, names).select([*ctx.columns, ROW])]
    fallback = fallback_table(table) if travel is None else None
    if fallback is not None:  # as read() does: the partitions only the fallback branch has
        results.append(_fallback_rows(fallback, plan, distinct, wanted, ctx.output_schema))
    if len(results) > 1:
        target = pa.schema([*ctx.output_schema, pa.field(ROW, pa.int64())])
        results = [pa.Table.from_arrays(r.columns, schema=target) for r in results]
    result = pa.concat_tables(results) if len(results) > 1 else results[0]
    result = _take(result, np.argsort(result.column(ROW).to_numpy(), kind="stable"))
    return pa.Table.from_arrays([result.column(n) for n in ctx.columns], schema=ctx.output_schema)


def _found(
    ctx: ReadContext, table: TableHandle, plan: LookupPlan | None, keys: pa.Table, names: Sequence[str]
) -> pa.Table:
    """The rows of ``plan``'s snapshot holding the distinct ``keys``, merged, with their key row numbers
    in column ``ROW``."""
    found = []
    if plan is not None:
        for number, (bucket, rows) in enumerate(_route(table, table.options, plan, keys)):
            hits = _search(ctx, bucket, _take(keys.select(ctx.key_names), rows), rows, names)
            found += [
                h.append_column(_BUCKET, pa.array(np.full(h.num_rows, number, dtype=np.int32))) for h in hits
            ]
    if not found:
        return ctx.output_schema.empty_table().append_column(ROW, pa.array([], pa.int64()))
    return _merged(ctx, pa.concat_tables(found) if len(found) > 1 else found[0])


def _single_value(keys: Any) -> tuple[str | None, object] | None:
    """(the column named, None for any; the value) of one key of one column given as ``[v]``,
    ``[{column: v}]`` or ``{column: [v]}``; None for anything else."""
    if isinstance(keys, (list, tuple)) and len(keys) == 1:
        if isinstance(keys[0], dict):
            return next(iter(keys[0].items())) if len(keys[0]) == 1 else None
        return None, keys[0]
    if isinstance(keys, dict) and len(keys) == 1:
        ((name, values),) = keys.items()
        if isinstance(values, (list, tuple)) and len(values) == 1:
            return name, values[0]
    return None


def _fallback_rows(
    fallback: TableHandle, plan: LookupPlan | None, keys: pa.Table, columns: tuple[str, ...], out: pa.Schema
) -> pa.Table:
    """The rows the `scan.fallback-branch` branch holds for ``keys`` in partitions the table itself lacks
    (all of them when it has no snapshot), as ``out`` with column ``ROW``."""
    part_keys = list(fallback.schema.partition_keys)
    wanted = columns + tuple(k for k in part_keys if k not in columns)
    ctx, names = _context(fallback, fallback.options, wanted)
    rows = _found(ctx, fallback, lookup_plan(fallback, fallback.options, None), keys, names)
    if part_keys and plan is not None and rows.num_rows:
        types = {k: fallback.schema.field(k).type for k in part_keys}
        ids, values = partition_ids(rows, part_keys, types)
        mine = np.array([v in plan.partitions for v in values], dtype=bool)
        rows = rows.filter(pa.array(~mine[ids]))
    elif plan is not None and plan.partitions:  # unpartitioned: the table's own rows win
        rows = rows.slice(0, 0)
    return pa.Table.from_arrays(
        [rows.column(n).cast(f.type) for n, f in zip(columns, out, strict=True)] + [rows.column(ROW)],
        names=[*columns, ROW],
    )


_contexts: ByteLRU[tuple[ReadContext, list[str]]] = ByteLRU("lookup read contexts", 4 * MB)


def _context(
    table: TableHandle, options: CoreOptions, columns: tuple[str, ...]
) -> tuple[ReadContext, list[str]]:
    """A read context for the lookup's columns and the table columns it reads (kept: its column
    mappings are memoized per context), checking the columns exist."""
    # the schema itself, not its id: a table dropped and created again under its name restarts at 0
    key = (table.io, table.root, table.schema, tuple(sorted(options.raw.items())), columns)

    def build() -> tuple[ReadContext, list[str]]:
        ctx = ReadContext(table.io, table.root, table.schema, options, columns)
        return ctx, ctx.read_columns(merge=True)

    return _contexts.get_or_load(key, build, lambda _: 4096)


def _take(table: pa.Table, rows: np.ndarray[Any, Any]) -> pa.Table:
    """``table``'s rows at ``rows``; the table itself when that is every row in order."""
    n = table.num_rows
    if len(rows) == n and (
        n == 0 or (rows[0] == 0 and rows[-1] == n - 1 and bool((np.diff(rows) == 1).all()))
    ):
        return table
    return table.take(pa.array(rows))


def _distinct(keys: pa.Table) -> pa.Table:
    """The distinct key rows, in order of first appearance."""
    if keys.num_rows == 1:
        return keys
    single = integer_key(keys, keys.column_names)
    if single is not None:
        _, first = np.unique(single, return_index=True)
    else:
        numbered = keys.append_column(_POSITION, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
        grouped = numbered.group_by(keys.column_names, use_threads=False).aggregate([(_POSITION, "min")])
        first = grouped.column(f"{_POSITION}_min").to_numpy()
    if len(first) == keys.num_rows:
        return keys
    return keys.take(pa.array(np.sort(first)))


def _route(
    table: TableHandle, options: CoreOptions, plan: LookupPlan, keys: pa.Table
) -> Iterator[tuple[Bucket, np.ndarray[Any, Any]]]:
    """Each bucket that may hold some of the keys, with those keys' row numbers: the partition from the
    key's partition columns, the bucket from Paimon's hash in fixed-bucket tables (else every bucket)."""
    part_keys = table.schema.partition_keys
    if not part_keys:
        per_partition = [(plan.partitions.get((), []), np.arange(keys.num_rows))]
    elif set(part_keys) <= set(keys.column_names):
        ids, values = partition_ids(keys, part_keys, {k: table.schema.field(k).type for k in part_keys})
        order = np.argsort(ids, kind="stable")
        cuts = np.searchsorted(ids[order], np.arange(len(values) + 1))
        groups = [(values[p], order[cuts[p] : cuts[p + 1]]) for p in range(len(values))]
        per_partition = [(plan.partitions.get(v, []), rows) for v, rows in groups]
    else:  # the key does not name the partition (cross-partition tables): every partition may hold it
        every = np.arange(keys.num_rows)
        per_partition = [(buckets, every) for buckets in plan.partitions.values()]
    for buckets, rows in per_partition:
        by_total: dict[int, np.ndarray[Any, Any] | None] = {}
        for b in buckets:
            if b.total_buckets not in by_total:
                by_total[b.total_buckets] = bucket_of(
                    keys.take(pa.array(rows)), table, options, b.total_buckets
                )
            chosen_ids = by_total[b.total_buckets]
            chosen = rows if chosen_ids is None else rows[chosen_ids == b.bucket]
            if len(chosen):
                yield b, chosen


def _search(
    ctx: ReadContext,
    bucket: Bucket,
    keys: pa.Table,
    rows: np.ndarray[Any, Any],
    names: Sequence[str],
) -> list[pa.Table]:
    """The live rows of one bucket's files holding ``keys`` (the trimmed key columns of key rows
    ``rows``), each with its key row number, level and whether a read merges it."""
    key_names = ctx.key_names
    ints = integer_key(keys, key_names)
    hash_type = bloom_type(ctx.options, [ctx.schema.field(k).type for k in key_names], key_names)
    hashes = None
    pending = np.ones(keys.num_rows, dtype=bool)
    out = []
    for lf in bucket.files:
        if ints is not None:
            inside = pending & (ints >= lf.low[0]) & (ints <= lf.high[0])
        else:
            inside = pending & within(keys, lf.low, lf.high)
        wanted = np.flatnonzero(inside)
        if len(wanted) and hash_type is not None and (bloom := load_bloom(ctx, lf, key_names[0])) is not None:
            if hashes is None:
                hashes = key_hashes(keys.column(0), hash_type)
            wanted = wanted[bloom.might_contain(hashes[wanted])]
        if not len(wanted):
            continue
        found_in_blocks = (
            search_key_blocks(ctx, lf.split, lf.index, ints[wanted])
            if ints is not None and len(wanted) <= FEW_KEYS
            else None
        )
        if found_in_blocks is not None:  # a few keys: only the key blocks of their row groups are read
            which, positions = wanted[found_in_blocks[0]], found_in_blocks[1]
        else:
            which, positions = _match(file_keys(ctx, lf.split, lf.index), keys, wanted, ints, key_names)
        deleted = deleted_mask(ctx, lf.split, lf.index)
        if deleted is not None and len(positions):
            live = ~deleted[positions]
            which, positions = which[live], positions[live]
        if not len(positions):
            continue
        order = np.argsort(positions, kind="stable")
        which, positions = which[order], positions[order]
        found = rows_at(ctx, lf.split, lf.index, names, positions)
        n = found.num_rows
        found = found.append_column(ROW, pa.array(rows[which]))
        found = found.append_column(_LEVEL, pa.array(np.full(n, lf.level, dtype=np.int32)))
        out.append(found.append_column(_MERGED, pa.array(np.full(n, lf.merged))))
        if not lf.merged:  # a key read unmerged has no other row a read returns: stop looking for it
            pending[which] = False
    return out


def _match(
    file_keys: pa.Table,
    keys: pa.Table,
    wanted: np.ndarray[Any, Any],
    ints: np.ndarray[Any, Any] | None,
    key_names: Sequence[str],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(key numbers, file positions) of the ``wanted`` keys the key-sorted file holds: a binary search
    for a single integer key, a hash join otherwise."""
    column = integer_key(file_keys, key_names) if ints is not None else None
    if column is not None and ints is not None:
        values = ints[wanted]
        n = len(column)
        if n == 0:
            return wanted[:0], np.zeros(0, dtype=np.int64)
        order = np.argsort(values, kind="stable")  # sorted needles search the file's keys twice as fast
        left = np.empty(len(values), dtype=np.int64)
        left[order] = np.searchsorted(column, values[order], side="left")
        hit = column[np.minimum(left, n - 1)] == values
        if not (hit & (column[np.minimum(left + 1, n - 1)] == values) & (left + 1 < n)).any():
            return wanted[hit], left[hit]  # no key more than once: no need for the right bounds
        counts = np.searchsorted(column, values, side="right") - left
        repeat = np.repeat(np.arange(len(values)), counts)
        starts = np.cumsum(counts) - counts
        return wanted[repeat], left[repeat] + (np.arange(int(counts.sum())) - starts[repeat])
    numbered = _joinable(file_keys).append_column(
        _POSITION, pa.array(np.arange(file_keys.num_rows, dtype=np.int64))
    )
    asked = _joinable(keys.take(pa.array(wanted))).append_column(ROW, pa.array(wanted))
    joined = asked.join(numbered, keys=list(key_names), join_type="inner", use_threads=False)
    return joined.column(ROW).to_numpy(), joined.column(_POSITION).to_numpy()


def _joinable(keys: pa.Table) -> pa.Table:
    """``keys`` with floating-point columns as their bits (one NaN), so that a NaN key matches itself."""
    for i, f in enumerate(keys.schema):
        if pa.types.is_floating(f.type):
            d = np.asarray(keys.column(i).to_numpy(), dtype=np.float64)
            bits = d.view(np.int64).copy()
            bits[np.isnan(d)] = 0x7FF8000000000000
            keys = keys.set_column(i, f.name, pa.array(bits))
    return keys


def _merged(ctx: ReadContext, hits: pa.Table) -> pa.Table:
    """The rows found, as a read returns them: rows a read takes alone lose their retractions; a key's
    rows from an overlapping section are merged by the table's merge engine."""
    merged = hits.column(_MERGED).to_numpy(zero_copy_only=False)
    hits = hits.drop_columns([_MERGED])
    if not merged.any():
        return drop_retracts(hits).drop_columns([_LEVEL, _BUCKET])
    parts = [] if merged.all() else [drop_retracts(hits.filter(pa.array(~merged))).drop_columns([_LEVEL])]
    rows = hits if merged.all() else hits.filter(pa.array(merged))
    if merge_skips_shadowed(ctx.options):  # lookup tables: see mergetree/lookup_merge.py
        rows = rows.filter(
            pa.array(shadowed_mask(rows.select([ROW, _BUCKET]), rows.column(_LEVEL).to_numpy()))
        )
    parts.append(
        merge_rows(
            rows.drop_columns([_LEVEL]),
            [*ctx.key_names, ROW, _BUCKET],
            merge_function=ctx.merge_function,
            sequence_fields=ctx.sequence_fields,
            descending=ctx.options.sequence_descending,
            where=f"table {ctx.root}",
        )
    )
    out = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    return out.drop_columns([_BUCKET])
