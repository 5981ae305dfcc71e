"""The lean path of a lookup of one integer key in an unpartitioned fixed-bucket table: the latest snapshot
recognised by its file's bytes, the key routed by Paimon's hash of the Python value, its bucket's files
searched newest level first by bisecting the key block of the one row group that may hold it, the row taken
from a cached decoded row group. What it does not cover (rows a read merges, a key across row groups, files
that are not Parquet, ...) it leaves to the general path, so its answers are the general path's."""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lsmlake.core.binary_row import encode_row, hash_row_bytes
from lsmlake.core.bucket import bucket_for_hash
from lsmlake.core.caches import MB, ByteLRU
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataType, to_arrow_type
from lsmlake.mergetree.kv_layout import VALUE_KIND, RowKind
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.context import ReadContext
from lsmlake.read.fallback import FALLBACK_BRANCH
from lsmlake.read.file_rows import (
    KeyBlocks,
    RowSource,
    deleted_mask,
    key_blocks,
    resize_lookup_caches,
    row_source,
)
from lsmlake.read.lookup_plan import (
    Bucket,
    LookupFile,
    LookupPlan,
    bloom_type,
    key_hashes,
    load_bloom,
    lookup_plan,
)
from lsmlake.scan.travel import travel_option

_INTEGER_RANGES = {pa.int8(): 7, pa.int16(): 15, pa.int32(): 31, pa.int64(): 63}
"""The integer key types the lean path takes, with their value bits."""

_RETRACTS = (int(RowKind.UPDATE_BEFORE), int(RowKind.DELETE))


@dataclass
class _Latest:
    """One snapshot's plan, known by the snapshot file's id and bytes, with what a search of it has loaded:
    each bucket by number, and per file its key blocks and row sources (None: not applicable)."""

    snapshot_id: int
    content: bytes
    plan: LookupPlan
    buckets: dict[int, Bucket]
    total_buckets: int
    blocks: dict[int, KeyBlocks | None] = field(default_factory=dict)
    sources: dict[tuple[int, tuple[str, ...]], RowSource | None] = field(default_factory=dict)


@dataclass
class _Profile:
    """What lookups on one table (storage, schema and dynamic options) need, worked out once: its options,
    key, read contexts per column choice, and the latest snapshot searched."""

    schema: TableSchema
    dynamic: dict[str, str]
    options: CoreOptions
    applies: bool = False
    key: str = ""
    key_types: list[DataType] = field(default_factory=list)
    arrow_type: pa.DataType | None = None
    bits: int = 0
    hash_type: DataType | None = None
    cache_bounds: tuple[int, int, int] = (0, 0, 0)
    contexts: dict[tuple[str, ...] | None, tuple[ReadContext, list[str]]] = field(default_factory=dict)
    latest: _Latest | None = None


_profiles: ByteLRU[_Profile] = ByteLRU("lookup point profiles", 16 * MB)
"""By (FileIO, root, schema, dynamic options): handles of one table share their profile."""
_PROFILE_BYTES = 256 * 1024
"""A profile's weight: it grows as its searches load footers' row-group bounds (kept, not re-weighed)."""
_handles: ByteLRU[tuple[weakref.ref[TableHandle], TableSchema, _Profile]] = ByteLRU(
    "lookup point handles", 1 * MB
)
"""By table handle's id (checked against a weak reference to it, and its schema): its profile, found without
hashing the schema."""


def lookup_point(
    table: TableHandle, column: str | None, value: object, columns: Sequence[str] | None
) -> pa.Table | None:
    """The latest live row of primary key ``value`` (of key column ``column``, None: the key's) as
    ``lookup_rows`` returns it (no row: an empty table), or None when the lean path does not apply and
    the general path must answer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    v = int(value)
    profile = _profile(table)
    if (
        profile is None
        or (column is not None and column != profile.key)
        or not -(1 << profile.bits) <= v < (1 << profile.bits)
    ):
        return None
    ctx, names = _context(table, profile, columns)
    resize_lookup_caches(*profile.cache_bounds)
    manager = table.snapshot_manager  # a catalog that keeps the table's snapshots says which is latest
    sid = manager.latest_id()
    if sid is None:
        return ctx.output_schema.empty_table()
    try:
        content = table.io.read_bytes(manager.snapshot_path(sid))
    except FileNotFoundError:
        return None  # the general path says what is missing
    latest = profile.latest
    if latest is None or latest.snapshot_id != sid or latest.content != content:
        latest = _load_latest(table, profile, sid, content)
        if latest is None:
            return None
    bucket = latest.buckets.get(
        bucket_for_hash(hash_row_bytes(encode_row([v], profile.key_types)), latest.total_buckets)
    )
    if bucket is not None:
        for lf in bucket.files:
            found = _search_file(ctx, profile, latest, lf, v)
            if found is None:
                return None
            if found < 0:
                continue
            return _row(ctx, latest, lf, names, found)
    return ctx.output_schema.empty_table()


def _search_file(ctx: ReadContext, profile: _Profile, latest: _Latest, lf: LookupFile, v: int) -> int | None:
    """The live position of key ``v`` in the file; -1 when the file does not hold it live; None when the
    lean path cannot tell (or the row found is one a read merges with others)."""
    if not lf.low[0] <= v <= lf.high[0]:
        return -1
    if profile.hash_type is not None:
        bloom = load_bloom(ctx, lf, profile.key)
        if (
            bloom is not None
            and not bloom.might_contain(key_hashes(pa.array([v], profile.arrow_type), profile.hash_type))[0]
        ):
            return -1
    number = id(lf)
    if number not in latest.blocks:
        latest.blocks[number] = key_blocks(ctx, lf.split, lf.index)
    blocks = latest.blocks[number]
    if blocks is None:
        return None
    group = bisect.bisect_left(blocks.high_list, v)  # the first group whose largest key is >= v
    if group == len(blocks.high_list) or blocks.low_list[group] > v:
        return -1
    if group + 1 < len(blocks.low_list) and blocks.low_list[group + 1] == v:
        return None  # the key's rows run into the next group
    block = blocks.block(group)
    i = int(np.searchsorted(block, v))
    if i == len(block) or int(block[i]) != v:
        return -1
    if i + 1 < len(block) and int(block[i + 1]) == v:
        return None  # several rows of the key in one file
    position = blocks.starts_list[group] + i
    mask = deleted_mask(ctx, lf.split, lf.index)
    if mask is not None and mask[position]:
        return -1
    return None if lf.merged else position


def _row(
    ctx: ReadContext, latest: _Latest, lf: LookupFile, names: list[str], position: int
) -> pa.Table | None:
    """The row at ``position`` of the file in the lookup's output schema (no row when it retracts)."""
    number = (id(lf), tuple(names))
    if number not in latest.sources:
        latest.sources[number] = row_source(ctx, lf.split, lf.index, names)
    source = latest.sources[number]
    if source is None:
        return None
    row = source.row(position)
    if row.column(VALUE_KIND)[0].as_py() in _RETRACTS:  # a read drops a retraction read alone
        return ctx.output_schema.empty_table()
    return pa.Table.from_arrays([row.column(n) for n in ctx.columns], schema=ctx.output_schema)


def _profile(table: TableHandle) -> _Profile | None:
    """The table's profile, made on first use; None when the lean path does not apply to it."""
    hit = _handles.get(id(table))
    if (
        hit is not None
        and hit[0]() is table
        and hit[1] is table.schema
        and hit[2].dynamic == table.dynamic_options
    ):
        profile = hit[2]
    else:
        key = (table.io, table.root, table.schema, tuple(sorted(table.dynamic_options.items())))
        profile = _profiles.get_or_load(key, lambda: _new_profile(table), lambda _: _PROFILE_BYTES)
        _handles.put(id(table), (weakref.ref(table), table.schema, profile), 1024)
    return profile if profile.applies else None


def _new_profile(table: TableHandle) -> _Profile:
    profile = _Profile(table.schema, dict(table.dynamic_options), table.options)
    profile.applies = _applies(table, profile)
    return profile


def _applies(table: TableHandle, profile: _Profile) -> bool:
    """Whether the lean path serves the table, setting the profile's key facts when it does."""
    schema, options = profile.schema, profile.options
    if len(schema.primary_keys) != 1 or schema.partition_keys:
        return False
    key = schema.primary_keys[0]
    key_type = schema.field(key).type
    arrow_type = to_arrow_type(key_type)
    bits = _INTEGER_RANGES.get(arrow_type)
    if (
        bits is None
        or options.bucket <= 0
        or options.get(CoreOptions.BUCKET_FUNCTION_TYPE) != "default"
        or list(schema.bucket_keys) != [key]
        or (options.get(FALLBACK_BRANCH) or "").strip()
    ):
        return False
    try:
        if travel_option(table) is not None:
            return False
    except ValueError:
        return False  # the general path says what is wrong
    profile.key, profile.key_types, profile.arrow_type, profile.bits = key, [key_type], arrow_type, bits
    profile.hash_type = bloom_type(options, [key_type], [key])
    profile.cache_bounds = (
        options.get(CoreOptions.LOOKUP_CACHE_MAX_MEMORY_SIZE),
        options.get(CoreOptions.LOOKUP_CACHE_MAX_DISK_SIZE),
        options.get(CoreOptions.LOOKUP_CACHE_FILE_RETENTION),
    )
    return True


def _context(
    table: TableHandle, profile: _Profile, columns: Sequence[str] | None
) -> tuple[ReadContext, list[str]]:
    """The read context of the key and ``columns`` (default: every column), and the columns it reads."""
    chosen = tuple(columns) if columns is not None else None
    hit = profile.contexts.get(chosen)
    if hit is None:
        rest = list(chosen) if chosen is not None else profile.schema.field_names
        wanted = (profile.key, *[c for c in rest if c != profile.key])
        ctx = ReadContext(table.io, table.root, profile.schema, profile.options, wanted)
        hit = ctx, ctx.read_columns(merge=True)
        profile.contexts[chosen] = hit
    return hit


def _load_latest(table: TableHandle, profile: _Profile, sid: int, content: bytes) -> _Latest | None:
    """The plan of snapshot ``sid`` (None when a commit moved on meanwhile, or buckets of several totals
    share the partition: the general path answers then)."""
    plan = lookup_plan(table, profile.options, None)
    if plan is None or plan.snapshot_id != sid:
        return None
    buckets = plan.partitions.get((), [])
    totals = {b.total_buckets for b in buckets}
    if len(totals) > 1 or any(t <= 0 for t in totals) or set(plan.partitions) - {()}:
        return None
    latest = _Latest(sid, content, plan, {b.bucket: b for b in buckets}, totals.pop() if totals else 1)
    profile.latest = latest
    return latest
