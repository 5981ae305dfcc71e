"""What a key lookup searches, per snapshot: each (partition, bucket)'s files with their key ranges and
bloom filters, and whether a read merges a key's rows found there; built once and cached."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.binary_row import Timestamp, deserialize_row, encode_row, hash_row_bytes, serialize_row
from lsmlake.core.bucket import bucket_for_hash, bucket_ids
from lsmlake.core.caches import MB, ByteLRU
from lsmlake.core.options import CoreOptions
from lsmlake.core.types import DataType
from lsmlake.format.file_index.bloom import BloomFilter, bloom_supported, hash_values
from lsmlake.format.file_index.keys import FLOAT_ROOTS, array_keys, is_bytes_type
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.context import ReadContext, load_schema
from lsmlake.scan.file_index_prune import columns_unchanged, file_index_blobs
from lsmlake.scan.planner import plan_scan, resolve_snapshot
from lsmlake.scan.split import Split

BLOOM_FILTER = "bloom-filter"
FEW_KEYS = 16


@dataclass
class LookupFile:
    """One live data file: its split and index there, its key range, and whether a read merges a key's
    rows in it with the key's rows in other files (its section of a merge split has several runs)."""

    split: Split
    index: int
    merged: bool
    low: list[Any]
    high: list[Any]
    bloom: BloomFilter | bool | None = True
    """The file's bloom filter on the (single) key column; None: it has none; True: not loaded yet."""

    @property
    def level(self) -> int:
        return self.split.files[self.index].level


@dataclass(frozen=True)
class Bucket:
    """One (partition, bucket) of the snapshot: its files, newest level first."""

    partition_values: tuple[object, ...]
    bucket: int
    total_buckets: int
    files: tuple[LookupFile, ...]


@dataclass(frozen=True)
class LookupPlan:
    """A snapshot's buckets by partition values, for one table schema and options."""

    snapshot_id: int
    partitions: dict[tuple[object, ...], list[Bucket]] = field(default_factory=dict)


_plans: ByteLRU[LookupPlan] = ByteLRU("lookup plans", 64 * MB)


def lookup_plan(table: TableHandle, options: CoreOptions, snapshot: Snapshot | None) -> LookupPlan | None:
    """The lookup plan of ``snapshot`` (a time travel's, read under ``table``'s schema), else of the
    latest snapshot (None for a table without snapshots). The latest is cached by its file's bytes: a
    rollback can publish a different snapshot under an id seen before, so the id alone does not name
    the contents; the cache keys hold the schema itself, not its id, as a table dropped and created
    again under its name starts over at schema 0."""
    opts = tuple(sorted(options.raw.items()))
    if snapshot is not None:
        return _plans.get_or_load(
            (table.io, table.root, snapshot, table.schema, opts),
            lambda: _build(table, options, snapshot),
            _weight,
        )
    manager = SnapshotManager(table.io, table.root, catalog_env=table.catalog_env)
    sid = manager.latest_id()
    if sid is None:
        return None
    try:
        content = table.io.read_bytes(manager.snapshot_path(sid))
    except FileNotFoundError:
        content = b""  # resolve_snapshot below says what is missing
    key = (table.io, table.root, sid, content, table.schema, opts)
    hit = _plans.get(key) if content else None
    if hit is not None:
        return hit
    latest = resolve_snapshot(table.io, table.root, sid, options)  # checks the scan options too
    if latest is None:
        return None
    plan = _build(table, options, latest)
    _plans.put(key, plan, _weight(plan) + len(content))
    return plan


def _weight(plan: LookupPlan) -> int:
    return 2048 * sum(len(b.files) + 1 for buckets in plan.partitions.values() for b in buckets)


def _build(table: TableHandle, options: CoreOptions, snapshot: Snapshot) -> LookupPlan:
    schema = table.schema
    types = [schema.field(k).type for k in schema.trimmed_primary_keys]
    plan = plan_scan(table.io, table.root, schema, options, snapshot=snapshot)
    per_bucket: dict[tuple[tuple[object, ...], int], tuple[int, list[LookupFile]]] = {}
    for split in plan.splits:
        merged = set()
        for section in split.sections or ():
            if len(section) > 1:
                merged |= {f.identifier() for run in section for f in run}
        _, files = per_bucket.setdefault((split.partition_values, split.bucket), (split.total_buckets, []))
        for i, f in enumerate(split.files):
            low, high = deserialize_row(f.min_key, types), deserialize_row(f.max_key, types)
            files.append(LookupFile(split, i, f.identifier() in merged, low, high))
    out = LookupPlan(snapshot.id)
    for (values, bucket), (total, files) in per_bucket.items():
        files.sort(key=lambda lf: (lf.level, -lf.split.files[lf.index].max_sequence_number))
        out.partitions.setdefault(values, []).append(Bucket(values, bucket, total, tuple(files)))
    return out


# --------------------------------------------------------------------------- routing


def partition_ids(
    keys: pa.Table, names: Sequence[str], types_by_name: Mapping[str, DataType]
) -> tuple[np.ndarray[Any, Any], list[tuple[object, ...]]]:
    """Each row's partition number, and each partition's values as a scan's splits hold them (in order
    of first appearance)."""
    if not names:
        return np.zeros(keys.num_rows, dtype=np.int64), [()]
    code = np.zeros(keys.num_rows, dtype=np.int64)
    for name in names:
        encoded = pc.dictionary_encode(keys.column(name), null_encoding="encode").combine_chunks()
        code = code * (len(encoded.dictionary) + 1) + encoded.indices.to_numpy(zero_copy_only=False)
    _, first, ids = np.unique(code, return_index=True, return_inverse=True)
    values = [tuple(keys.column(n)[int(i)].as_py() for n in names) for i in first]
    # as a scan decodes them from the partition's binary row (a timestamp is not a datetime there)
    types = [types_by_name[n] for n in names]
    values = [tuple(deserialize_row(serialize_row(list(v), types), types)) for v in values]
    return np.asarray(ids, dtype=np.int64).reshape(-1), values


def bucket_of(
    keys: pa.Table, table: TableHandle, options: CoreOptions, total_buckets: int
) -> np.ndarray[Any, Any] | None:
    """Each key row's bucket in a fixed-bucket table, by Paimon's hash; None when keys can be in any bucket
    (dynamic or postponed buckets, or a bucket function other than the default)."""
    schema = table.schema
    if (
        options.bucket <= 0
        or total_buckets <= 0
        or options.get(CoreOptions.BUCKET_FUNCTION_TYPE) != "default"
        or not set(schema.bucket_keys) <= set(keys.column_names)
    ):
        return None
    types = [schema.field(k).type for k in schema.bucket_keys]
    if keys.num_rows <= FEW_KEYS:  # a handful: hashing each row's bytes beats the column set-up
        columns = [keys.column(k).to_pylist() for k in schema.bucket_keys]
        hashes = [hash_row_bytes(encode_row(list(r), types)) for r in zip(*columns, strict=True)]
        return np.array([bucket_for_hash(h, total_buckets) for h in hashes], dtype=np.int32)
    ids: np.ndarray[Any, Any] = bucket_ids([keys.column(k) for k in schema.bucket_keys], types, total_buckets)
    return ids


def within(keys: pa.Table, low: Sequence[Any], high: Sequence[Any]) -> np.ndarray[Any, Any]:
    """Which key rows lie in [low, high], compared column by column (the files' key order)."""
    inside: np.ndarray[Any, Any] = _at_least(keys, low) & _at_least(keys, high, reverse=True)
    return inside


def _at_least(keys: pa.Table, bound: Sequence[Any], *, reverse: bool = False) -> np.ndarray[Any, Any]:
    n = keys.num_rows
    result = np.zeros(n, dtype=bool)
    equal = np.ones(n, dtype=bool)
    for column, value in zip(keys.columns, bound, strict=True):
        if pa.types.is_floating(column.type):  # NaN compares false in Arrow
            if value != value:  # a NaN bound: files sort NaN first (lsmlake) or last (Java): no bound
                return result | equal
            values = column.to_numpy()
            left, right = float_order(values), float_order(np.array([value]))[0]
            beyond, same = (left < right) if reverse else (left > right), left == right
            beyond |= np.isnan(values)  # a NaN key may sort at either end: inside every range
        else:
            scalar = _scalar(value, column.type)
            beyond = pc.less(column, scalar) if reverse else pc.greater(column, scalar)
            beyond = np.asarray(beyond.to_numpy(zero_copy_only=False), dtype=bool)
            same = np.asarray(pc.equal(column, scalar).to_numpy(zero_copy_only=False), dtype=bool)
        result |= equal & beyond
        equal &= same
    return result | equal


def float_order(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Floating-point keys as int64 in ``Double.compare``'s order (NaN above +infinity), except that -0.0
    and 0.0 tie: a range test is then never too narrow."""
    d = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 + 0.0 is 0.0
    bits = d.view(np.int64).copy()
    bits[np.isnan(d)] = 0x7FF8000000000000  # one NaN, above +infinity's bits
    ordered: np.ndarray[Any, Any] = bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)
    return ordered


def _scalar(value: Any, t: pa.DataType) -> pa.Scalar:
    """A key bound decoded from a file's min/max key as an Arrow scalar of the key column's type."""
    if isinstance(value, Timestamp):  # exact at the column's precision: the bound is one of its values
        return pa.scalar(value.epoch_nanos, pa.timestamp("ns", tz=t.tz)).cast(t)
    return pa.scalar(value, t)


def bloom_type(options: CoreOptions, types: Sequence[DataType], key_names: Sequence[str]) -> DataType | None:
    """The key's type when a bloom filter on it can be used: one key column the table indexes with one,
    of a type whose hashed values are exact (not CHAR, not floating point), and index reads on."""
    if len(types) != 1 or not options.get(CoreOptions.FILE_INDEX_READ_ENABLED):
        return None
    t = types[0]
    if not bloom_supported(t) or t.root == "CHAR" or t.root in FLOAT_ROOTS:
        return None
    return t


def load_bloom(ctx: ReadContext, lf: LookupFile, column: str) -> BloomFilter | None:
    """The file's bloom filter on ``column`` (None: none, or written under a schema where the column had
    another name or type)."""
    f = lf.split.files[lf.index]
    if isinstance(lf.bloom, bool):
        lf.bloom = None
        schema = ctx.schema
        written = schema if f.schema_id == schema.id else load_schema(ctx, f.schema_id)
        if columns_unchanged(schema, written, [column]) and (f.embedded_index is not None or f.extra_files):
            found = file_index_blobs(ctx.io, f, lf.split.bucket_path)
            blobs = found[0] if found is not None else []
            for b in blobs:
                if b.column == column and b.index_type == BLOOM_FILTER and b.data is not None:
                    lf.bloom = BloomFilter(b.data, source=found[1] if found else f.file_name)
    return lf.bloom


def key_hashes(column: pa.ChunkedArray | pa.Array, t: DataType) -> np.ndarray[Any, Any]:
    """The bloom-filter hash of each (non-null) key value."""
    values, _ = array_keys(column, t)
    hashed: np.ndarray[Any, Any] = hash_values(values.to_pylist() if is_bytes_type(t) else values, t)
    return hashed
