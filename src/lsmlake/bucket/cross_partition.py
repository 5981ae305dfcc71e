"""Cross-partition upsert (``bucket = -1``, primary key without every partition key; Java's KEY_DYNAMIC).

A global index maps each key to the (partition, bucket) holding it, bootstrapped from the live data of
the snapshot the writer restored, level-0 files included (Java's ``GlobalIndexAssigner``). A key
arriving in another partition than the one holding it is handled by the merge engine as Java does:
``deduplicate`` deletes it from the old partition and inserts it in the new one,
``partial-update``/``aggregation`` update it in the old partition, ``first-row`` ignores the new
record. New keys go to the lowest bucket of their partition holding fewer than
``dynamic-bucket.target-row-num`` keys. Batches are processed as whole columns: rows are sorted by
key so each row sees the location its predecessor left, all with numpy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.bucket.assigner import AssignerConfig
from lsmlake.bucket.dynamic import split_by_bucket
from lsmlake.bucket.routing import RowGroup, route_rows
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import to_arrow_type
from lsmlake.mergetree.kv_layout import RowKind
from lsmlake.metadata.index_manifest import IndexFileMeta
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.read.split_read import ReadContext, read_split_table
from lsmlake.scan.planner import plan_scan

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
PART, BUCKET, ROW = "__part", "__bucket", "__row"


def is_cross_partition(schema: TableSchema, options: CoreOptions) -> bool:
    """Whether a table upserts across partitions (dynamic bucket, PK missing a partition key)."""
    pk = set(schema.primary_keys)
    return options.bucket == -1 and bool(pk) and any(k not in pk for k in schema.partition_keys)


def _same_as_previous(keys: pa.Table) -> npt.NDArray[np.bool_]:
    """For rows sorted by key: whether each row's key equals the previous row's."""
    n = keys.num_rows
    same = np.zeros(n, dtype=bool)
    if n < 2:
        return same
    eq = np.ones(n - 1, dtype=bool)
    for col in keys.columns:
        arr = col.combine_chunks()
        eq &= pc.equal(arr.slice(1), arr.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    same[1:] = eq
    return same


def _last_before(mask: npt.NDArray[np.bool_], group_start: I64) -> I64:
    """For each position, the last position < it where ``mask`` holds within its group, else -1."""
    n = len(mask)
    pos = np.where(mask, np.arange(n), -1)
    prev = np.empty(n, dtype=np.int64)
    prev[0] = -1
    prev[1:] = np.maximum.accumulate(pos)[:-1]
    return np.where(prev >= group_start, prev, -1)


class CrossPartitionRouter:
    """Routes one writer's rows of a cross-partition-upsert table and keeps its global key index."""

    def __init__(
        self,
        io: FileIO,
        root: str,
        schema: TableSchema,
        options: CoreOptions,
        snapshot: Callable[[], Snapshot | None],
    ) -> None:
        self.io, self.root, self.schema, self.options = io, root, schema, options
        self.key_names = list(schema.trimmed_primary_keys)
        self.part_names = list(schema.partition_keys)
        self.target = AssignerConfig.of(options).target_row_num
        engine = options.merge_engine
        self.mode = "old" if engine in ("partial-update", "aggregation") else engine
        self._snapshot = snapshot
        self._index: pa.Table | None = None
        self._part_ids: dict[bytes, int] = {}
        self._part_rows: list[pa.Table] = []
        self._counts: list[dict[int, int]] = []
        self.written_paths: list[str] = []
        # keys deleted while no partition held them (by the restored snapshot): the committer deletes
        # them where another writer put them since (serial order), so they are kept here
        self.unplaced_deletes: list[pa.Table] = []

    # -- partitions and the index
    def _part_id(self, partition: bytes, row: pa.Table) -> int:
        pid = self._part_ids.get(partition)
        if pid is None:
            pid = self._part_ids[partition] = len(self._part_rows)
            self._part_rows.append(row.select(self.part_names).slice(0, 1))
            self._counts.append({})
        return pid

    def _empty_index(self) -> pa.Table:
        fields = [pa.field(k, self._arrow_type(k)) for k in self.key_names]
        return pa.schema([*fields, pa.field(PART, pa.int32()), pa.field(BUCKET, pa.int32())]).empty_table()

    def _arrow_type(self, name: str) -> pa.DataType:
        return to_arrow_type(self.schema.field(name).type)

    def index(self) -> pa.Table:
        """The key -> (partition id, bucket) table, bootstrapped from the restored snapshot on first use."""
        if self._index is None:
            self._index = self._bootstrap()
        return self._index

    def _bootstrap(self) -> pa.Table:
        snapshot = self._snapshot()
        parts = [self._empty_index()]
        if snapshot is not None:
            # every level: keys only in level-0 files (which batch reads of deletion-vector and first-row
            # tables skip, e.g. under write-only) are live, and missing them would put a moved key in
            # two partitions
            plan = plan_scan(
                self.io, self.root, self.schema, self.options, snapshot_id=snapshot.id, all_levels=True
            )
            ctx = ReadContext(
                self.io, self.root, self.schema, self.options, tuple(self.key_names + self.part_names)
            )
            for split in plan.splits:
                rows = read_split_table(ctx, split)
                if not rows.num_rows:
                    continue
                pid = self._part_id(split.partition, rows)
                counts = self._counts[pid]
                counts[split.bucket] = counts.get(split.bucket, 0) + rows.num_rows
                n = rows.num_rows
                parts.append(
                    rows.select(self.key_names)
                    .append_column(PART, pa.array(np.full(n, pid, dtype=np.int32)))
                    .append_column(BUCKET, pa.array(np.full(n, split.bucket, dtype=np.int32)))
                )
        return pa.concat_tables([p.cast(parts[0].schema) for p in parts])

    def _new_buckets(self, pid: int, n: int) -> I32:
        """Buckets for ``n`` new keys of one partition: fill the lowest non-full buckets, then open new ones."""
        counts, out, done = self._counts[pid], np.empty(n, dtype=np.int32), 0
        bucket = 0
        while done < n:
            room = self.target - counts.get(bucket, 0)
            if room > 0:
                take = min(room, n - done)
                out[done : done + take] = bucket
                counts[bucket] = counts.get(bucket, 0) + take
                done += take
            bucket += 1
        return out

    # -- routing
    def route(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray, list[RowGroup]]:
        n = rows.num_rows
        if n == 0:
            return rows, kinds, []
        index = self.index()
        own = np.empty(n, dtype=np.int64)
        for g in route_rows(rows, self.schema, 0):
            own[g.indices] = self._part_id(g.partition, rows.take(pa.array(g.indices[:1])))
        keys = rows.select(self.key_names).append_column(ROW, pa.array(np.arange(n)))
        found = keys.join(index, self.key_names, join_type="inner").select([ROW, PART, BUCKET])
        idx_part = np.full(n, -1, dtype=np.int64)
        idx_bucket = np.full(n, -1, dtype=np.int64)
        at = found.column(ROW).to_numpy()
        idx_part[at] = found.column(PART).to_numpy()
        idx_bucket[at] = found.column(BUCKET).to_numpy()

        order = pc.sort_indices(keys, [(k, "ascending") for k in [*self.key_names, ROW]]).to_numpy()
        same = _same_as_previous(keys.select(self.key_names).take(pa.array(order)))
        starts = np.flatnonzero(~same)
        group_start = np.repeat(starts, np.diff(np.append(starts, n)))
        s_own, s_ipart, s_ibucket = own[order], idx_part[order], idx_bucket[order]
        s_kinds = kinds[order]
        deleting = (s_kinds == RowKind.DELETE) | (s_kinds == RowKind.UPDATE_BEFORE)
        if self.mode == "deduplicate":
            plan = self._dedup(s_own, s_ipart, s_ibucket, ~deleting, group_start)
        else:
            plan = self._anchored(s_own, s_ipart, s_ibucket, ~deleting, starts)
        part, bucket, extra_part, extra_bucket = plan
        dropped = deleting & (part < 0)  # deletes of keys held nowhere: no row is written for them
        if dropped.any():
            self.unplaced_deletes.append(keys.select(self.key_names).take(pa.array(order[dropped])))
        final_part, final_bucket = self._finals(part, bucket, s_ipart, s_ibucket, starts, n)
        self._update_index(
            keys.select(self.key_names).take(pa.array(order[starts])), final_part, final_bucket
        )
        return self._emit(rows, kinds, order, part, bucket, extra_part, extra_bucket)

    def _dedup(
        self, own: I64, ipart: I64, ibucket: I64, upsert: npt.NDArray[np.bool_], group_start: I64
    ) -> tuple[I64, I64, I64, I64]:
        """Upserts go to their own partition (delete at the previous one); deletes to the key's location."""
        n = len(own)
        last_up = _last_before(upsert, group_start)
        has_up = last_up >= 0
        prev_part = np.where(has_up, own[np.maximum(last_up, 0)], ipart)
        run_start = upsert & (prev_part != own)
        root = _last_before(run_start, group_start)
        is_root = run_start.copy()
        new_bucket = np.full(n, -1, dtype=np.int64)
        for pid in np.unique(own[run_start]).tolist():
            at = np.flatnonzero(run_start & (own == pid))
            new_bucket[at] = self._new_buckets(pid, len(at))
        # an upsert's bucket: its own run start's new bucket, or the index bucket when the chain begins there
        root_incl = np.where(is_root, np.arange(n), root)
        bucket = np.where(root_incl >= 0, new_bucket[np.maximum(root_incl, 0)], ibucket)
        prev_bucket = np.where(has_up, bucket[np.maximum(last_up, 0)], ibucket)
        part = np.where(upsert, own, prev_part)
        bucket = np.where(upsert, bucket, prev_bucket)
        part = np.where(~upsert & (prev_part < 0), -1, part)  # deleting a key nobody holds: drop
        moved = upsert & (prev_part >= 0) & (prev_part != own)
        extra_part = np.where(moved, prev_part, -1)
        extra_bucket = np.where(moved, prev_bucket, -1)
        return part, bucket, extra_part, extra_bucket

    def _anchored(
        self,
        own: I64,
        ipart: I64,
        ibucket: I64,
        upsert: npt.NDArray[np.bool_],
        starts: I64,
    ) -> tuple[I64, I64, I64, I64]:
        """Every row of a key goes to where the key already lives (or where its first upsert lands)."""
        n = len(own)
        group = np.searchsorted(starts, np.arange(n), side="right") - 1
        first_up = np.full(len(starts), n, dtype=np.int64)
        ups = np.flatnonzero(upsert)
        np.minimum.at(first_up, group[ups], ups)
        first_up[first_up == n] = -1
        g_ipart, g_ibucket = ipart[starts], ibucket[starts]
        needs_new = (g_ipart < 0) & (first_up >= 0)
        g_part, g_bucket = g_ipart.copy(), g_ibucket.copy()
        g_part[needs_new] = own[first_up[needs_new]]
        for pid in np.unique(g_part[needs_new]).tolist():
            at = np.flatnonzero(needs_new & (g_part == pid))
            g_bucket[at] = self._new_buckets(pid, len(at))
        part, bucket = g_part[group], g_bucket[group]
        if self.mode == "first-row":
            part = np.where(own == part, part, -1)  # a record for a key held elsewhere is ignored
        none = np.full(n, -1, dtype=np.int64)
        return part, bucket, none, none

    @staticmethod
    def _finals(part: I64, bucket: I64, ipart: I64, ibucket: I64, starts: I64, n: int) -> tuple[I64, I64]:
        """Each key's location after the batch: the last row that went somewhere, else where it was."""
        pos = np.where(part >= 0, np.arange(n), -1)
        last = np.maximum.accumulate(pos)[np.append(starts[1:], n) - 1]
        ok = last >= starts
        safe = np.maximum(last, 0)
        return np.where(ok, part[safe], ipart[starts]), np.where(ok, bucket[safe], ibucket[starts])

    def _update_index(self, keys: pa.Table, part: I64, bucket: I64) -> None:
        keep = part >= 0
        assert self._index is not None
        old = self._index.join(keys, self.key_names, join_type="left anti")
        new = keys.filter(pa.array(keep))
        new = new.append_column(PART, pa.array(part[keep].astype(np.int32)))
        new = new.append_column(BUCKET, pa.array(bucket[keep].astype(np.int32)))
        self._index = pa.concat_tables(
            [old.select(new.column_names), new.cast(old.select(new.column_names).schema)]
        )

    def _emit(
        self,
        rows: pa.Table,
        kinds: np.ndarray,
        order: I64,
        part: I64,
        bucket: I64,
        extra_part: I64,
        extra_bucket: I64,
    ) -> tuple[pa.Table, np.ndarray, list[RowGroup]]:
        """The output rows in arrival order: each moved key's delete right before the row that moves it."""
        n = rows.num_rows
        src = np.concatenate([order, order])
        tparts = np.concatenate([extra_part, part])
        tbuckets = np.concatenate([extra_bucket, bucket])
        tkinds = np.concatenate([np.full(n, int(RowKind.DELETE), dtype=kinds.dtype), kinds[order]])
        rank = np.concatenate([order * 2, order * 2 + 1])
        live = tparts >= 0
        seq = np.argsort(rank[live], kind="stable")
        src, tparts, tbuckets, tkinds = (a[live][seq] for a in (src, tparts, tbuckets, tkinds))
        out = rows.take(pa.array(src))
        values = pa.concat_tables(self._part_rows)
        for name in self.part_names:
            col = values.column(name).take(pa.array(tparts))
            out = out.set_column(
                out.schema.get_field_index(name), name, col.cast(out.schema.field(name).type)
            )
        groups: list[RowGroup] = []
        for g in route_rows(out, self.schema, 0):
            groups.extend(split_by_bucket(g, tbuckets[g.indices]))
        return out, tkinds, groups

    def prepare_commit(self) -> dict[tuple[bytes, int], IndexFileMeta]:
        """Cross-partition tables keep no HASH index files (Java bootstraps from data instead)."""
        return {}
