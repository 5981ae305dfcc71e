"""Reading a table into a Ray Dataset: one read task per group of lsmlake splits.

The driver plans the scan once (manifests, pruning); each read task gets plain data - its splits,
the schema, options, projection and filter - and reads them with the same split readers as
``table.read()``: raw splits file by file with their deletion vectors, merge splits section by
section. Ray's optimizer may push a column selection and a filter into the read
(:meth:`LsmlakeDatasource.apply_projection`, :meth:`LsmlakeDatasource.apply_predicate`).
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import pyarrow as pa
import ray.data
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.errors import UnsupportedError
from lsmlake.expr import Predicate, and_
from lsmlake.ray._common import Storage, TableSource, accepts, open_source, worker_table
from lsmlake.ray._expr import to_predicate
from lsmlake.read.options import ReadOptions
from lsmlake.read.split_read import ReadContext, read_split
from lsmlake.read.table_read import Scan, scan_table
from lsmlake.scan.planner import ScanFilters
from lsmlake.scan.split import Split

# A split is cut into smaller read tasks only while a piece would still hold this much (in memory).
MIN_TASK_BYTES = 32 * 1024 * 1024
# The column Ray Data uses to keep the row count of a block read with no columns.
ROW_COUNT_STUB = "__bsp_stub"
# Bytes per value assumed for variable-width columns (strings, binary, nested) in size estimates.
VARIABLE_WIDTH_BYTES = 24


def _value_width(t: pa.DataType) -> float:
    if pa.types.is_boolean(t):
        return 0.125
    try:
        return max(int(t.bit_width) // 8, 1)
    except ValueError:  # variable width
        return VARIABLE_WIDTH_BYTES


def estimate_bytes(split: Split, schema: pa.Schema) -> int:
    """In-memory Arrow size of a split's output: rows (live when known, else physical) times row width."""
    rows = split.merged_row_count()
    rows = split.row_count if rows is None else rows
    width = sum(_value_width(f.type) for f in schema) or 1
    return int(rows * width)


def pieces(split: Split) -> list[Split]:
    """The split as independent smaller splits: a raw split file by file, a merge split section by section."""
    if split.raw_convertible:
        return [
            replace(split, files=(f,), deletion_files=(d,))
            for f, d in zip(split.files, split.deletion_files, strict=True)
        ]
    sections = split.sections or ()
    position = {f.identifier(): i for i, f in enumerate(split.files)}
    out = []
    for section in sections:
        files = tuple(f for run in section for f in run)
        dvs = tuple(split.deletion_files[position[f.identifier()]] for f in files)
        out.append(replace(split, files=files, deletion_files=dvs, sections=(section,)))
    return out


def _join(parts: Sequence[Split]) -> Split:
    """Pieces of one split back into one split."""
    first = parts[0]
    files = tuple(f for p in parts for f in p.files)
    dvs = tuple(d for p in parts for d in p.deletion_files)
    sections = None if first.raw_convertible else tuple(s for p in parts for s in (p.sections or ()))
    return replace(first, files=files, deletion_files=dvs, sections=sections)


def _halves(split: Split, schema: pa.Schema) -> tuple[Split, Split] | None:
    parts = pieces(split)
    if len(parts) < 2:
        return None
    sizes = [estimate_bytes(p, schema) for p in parts]
    total, running, cut = sum(sizes), 0, 1
    for i, size in enumerate(sizes[:-1]):
        running += size
        cut = i + 1
        if running * 2 >= total:
            break
    return _join(parts[:cut]), _join(parts[cut:])


def subdivide(splits: Sequence[Split], target: int, schema: pa.Schema) -> list[Split]:
    """Cut the largest splits in two until there are ``target`` units or no piece is worth cutting."""
    units = list(splits)
    while len(units) < target:
        order = sorted(range(len(units)), key=lambda i: -estimate_bytes(units[i], schema))
        for i in order:
            if estimate_bytes(units[i], schema) < 2 * MIN_TASK_BYTES:
                return units
            halves = _halves(units[i], schema)
            if halves is not None:
                units[i : i + 1] = list(halves)
                break
        else:
            return units
    return units


def pack(splits: Sequence[Split], tasks: int, schema: pa.Schema) -> list[list[Split]]:
    """At most ``tasks`` groups of splits, balanced by estimated size (largest first to the lightest)."""
    tasks = max(1, min(tasks, len(splits)))
    heap: list[tuple[int, int]] = [(0, i) for i in range(tasks)]
    groups: list[list[Split]] = [[] for _ in range(tasks)]
    for s in sorted(splits, key=lambda s: -estimate_bytes(s, schema)):
        load, i = heapq.heappop(heap)
        groups[i].append(s)
        heapq.heappush(heap, (load + estimate_bytes(s, schema), i))
    return [g for g in groups if g]


def _read_splits(
    storage: Storage,
    root: str,
    schema: TableSchema,
    options: CoreOptions,
    columns: tuple[str, ...],
    filters: ScanFilters,
    splits: Sequence[Split],
) -> Iterator[pa.Table]:
    """A read task's body (on a worker): each split's tables in the output schema."""
    ctx = ReadContext(storage.get(), root, schema, options, columns, filters)
    produced = False
    for split in splits:
        for table in read_split(ctx, split):
            produced = True
            if table.num_columns == 0:
                # Ray counts a column-less table as empty: keep the row count in a stub column (as
                # Ray's own Parquet reader does for ``count()``, which projects to no columns)
                table = table.append_column(ROW_COUNT_STUB, pa.nulls(table.num_rows))
            yield table
    if not produced:
        yield ctx.output_schema.empty_table()


def _metadata(num_rows: int | None, size_bytes: int, schema: pa.Schema) -> BlockMetadata:
    fields: dict[str, Any] = {
        "num_rows": num_rows,
        "size_bytes": size_bytes,
        "input_files": None,
        "exec_stats": None,
        "schema": schema,
    }
    return BlockMetadata(**{k: v for k, v in fields.items() if accepts(BlockMetadata, k)})


class LsmlakeDatasource(Datasource):
    """A Ray Data datasource over one snapshot of an lsmlake table (see :func:`read_table`)."""

    def __init__(
        self,
        source: TableSource,
        *,
        filter: str | Predicate | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        table, self._storage = open_source(source)
        self._table = worker_table(table, self._storage)
        self._projection_map: dict[str, str] | None = None
        self._plan(
            scan_table(self._table, ReadOptions(filter=filter, columns=columns, snapshot_id=snapshot_id))
        )

    def _plan(self, scan: Scan) -> None:
        if scan.fallback is not None:
            raise UnsupportedError(
                f"table {scan.table.name} sets scan.fallback-branch: read it with Table.read, Ray reads "
                "the table's own partitions only"
            )
        self._read_table = scan.table  # a past snapshot is read with its own schema
        self._snapshot = scan.snapshot
        self._predicate = scan.predicate
        self._columns = tuple(scan.context.columns)
        self._filters = scan.context.filters
        self._output_schema = scan.schema
        self._splits = scan.splits()
        self.snapshot_id = scan.snapshot_id

    # -- what Ray asks
    def get_name(self) -> str:
        return f"Lsmlake({self._table.name})"

    @property
    def schema(self) -> pa.Schema:
        """The schema of the rows the read returns."""
        return self._output_schema

    def splits(self) -> list[Split]:
        return list(self._splits)

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(estimate_bytes(s, self._output_schema) for s in self._splits)

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        schema = self._output_schema
        parallelism = max(1, int(parallelism))
        units = self._splits
        if len(units) < parallelism:
            units = subdivide(units, parallelism, schema)
        groups = pack(units, parallelism, schema) if units else [[]]
        exact_counts = self._predicate is None
        tasks = []
        for group in groups:
            counts = [s.merged_row_count() for s in group]
            rows = sum(c for c in counts if c is not None) if exact_counts and None not in counts else None
            size = sum(estimate_bytes(s, schema) for s in group)
            read_fn = partial(
                _read_splits,
                self._storage,
                self._read_table.root,
                self._read_table.schema,
                self._read_table.options,
                self._columns,
                self._filters,
                tuple(group),
            )
            extra: dict[str, Any] = {}
            if accepts(ReadTask, "schema"):
                extra["schema"] = schema
            if per_task_row_limit is not None and accepts(ReadTask, "per_task_row_limit"):
                extra["per_task_row_limit"] = per_task_row_limit
            tasks.append(ReadTask(read_fn, _metadata(rows, size, schema), **extra))
        return tasks

    # -- pushdown (Ray >= 2.50's optimizer calls these; older Rays never do)
    def supports_projection_pushdown(self) -> bool:
        return True

    def supports_predicate_pushdown(self) -> bool:
        return True

    def get_projection_map(self) -> dict[str, str] | None:
        return self._projection_map

    def apply_projection(self, projection_map: dict[str, str] | None) -> LsmlakeDatasource:
        if projection_map is None:
            return self
        wanted = set(projection_map)
        clone = copy.copy(self)
        clone._columns = tuple(c for c in self._columns if c in wanted)
        clone._output_schema = pa.schema([self._output_schema.field(c) for c in clone._columns])
        clone._projection_map = {c: c for c in clone._columns}
        return clone

    def apply_predicate(self, predicate_expr: Any) -> LsmlakeDatasource:
        """Re-plan with the filter added when it translates exactly; else ``self`` (Ray keeps its filter)."""
        pushed = to_predicate(predicate_expr)
        if pushed is None or self.snapshot_id is None:  # nothing pushed, or an empty table: nothing to prune
            return self
        clone = copy.copy(self)
        try:
            predicate = and_(self._predicate, pushed)
            clone._plan(
                Scan(self._read_table, ReadOptions(predicate, self._columns), snapshot=self._snapshot)
            )
        except (ValueError, TypeError):  # e.g. a literal that does not fit the column's type
            return self
        clone._output_schema = self._output_schema
        current = getattr(self, "_predicate_expr", None)
        clone._predicate_expr = predicate_expr if current is None else current & predicate_expr
        return clone


def read_table(
    source: TableSource,
    *,
    filter: str | Predicate | None = None,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    parallelism: int | None = None,
    **read_args: Any,
) -> ray.data.Dataset:
    """A Ray Dataset of the table's rows (merged, deletes applied) that pass ``filter``.

    ``source`` is a :class:`~lsmlake.Table` or ``(warehouse, "db.table"[, storage options])``.
    ``filter`` (SQL WHERE text or a Predicate) prunes manifests and files on the driver and is
    applied exactly by the read tasks; ``columns`` projects. The snapshot is the latest unless
    ``snapshot_id``. ``parallelism`` asks for that many read tasks: splits are packed together when
    there are more, and large splits cut (file by file, section by section) when there are fewer.
    Other keyword arguments go to :func:`ray.data.read_datasource` (``concurrency``, ``num_cpus``...).
    """
    datasource = LsmlakeDatasource(source, filter=filter, columns=columns, snapshot_id=snapshot_id)
    if parallelism is not None:
        if accepts(ray.data.read_datasource, "override_num_blocks"):
            read_args["override_num_blocks"] = parallelism
        else:
            read_args["parallelism"] = parallelism
    dataset: ray.data.Dataset = ray.data.read_datasource(datasource, **read_args)
    return dataset
