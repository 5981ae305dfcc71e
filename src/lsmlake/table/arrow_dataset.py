"""A table as the ``pyarrow.dataset.Dataset`` DuckDB scans: each query's projection and filter become an
lsmlake scan (planning prunes with the filter, the read applies it exactly), streamed as Arrow batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from lsmlake.expr import FilterInput
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.options import ReadOptions
from lsmlake.read.table_read import Scan


class TableScanner:
    """What ``TableDataset.scanner`` returns: one planned lsmlake scan, read as batches on demand."""

    def __init__(self, scan: Scan) -> None:
        self.scan = scan

    @property
    def projected_schema(self) -> pa.Schema:
        return self.scan.schema

    def to_reader(self) -> pa.RecordBatchReader:
        return self.scan.to_batches()

    def to_batches(self) -> pa.RecordBatchReader:
        return self.scan.to_batches()

    def to_table(self) -> pa.Table:
        return self.scan.to_arrow()

    def count_rows(self) -> int:
        return sum(b.num_rows for b in self.scan.to_batches())


class TableDataset(ds.Dataset):  # type: ignore[misc]
    """Only the part of the ``Dataset`` interface Arrow-scanning engines use: ``schema`` and
    ``scanner(columns=..., filter=...)``. DuckDB checks for the ``Dataset`` type, pushes the query's
    columns and WHERE conjuncts (as a pyarrow expression) into ``scanner``, then reads ``to_reader()``.

    Not a real Arrow dataset (there is no file fragment that is correct on its own: merge reads and
    deletion vectors), so pyarrow's own dataset functions do not apply to it. ``scans`` lists the scans
    made so far (their ``plan_summary`` shows what planning pruned)."""

    table: TableHandle
    options: ReadOptions
    scans: list[Scan]

    def __new__(cls, table: TableHandle, options: ReadOptions | None = None) -> TableDataset:
        self: TableDataset = ds.Dataset.__new__(cls)  # pyarrow's constructor refuses direct calls
        self.table = table
        self.options = options if options is not None else ReadOptions()
        self.scans = []
        return self

    def __init__(self, table: TableHandle, options: ReadOptions | None = None) -> None:
        pass  # set up in __new__

    @property
    def schema(self) -> pa.Schema:
        return Scan(self.table, self.options).schema

    def scanner(
        self, *, columns: Sequence[str] | None = None, filter: FilterInput = None, **_: Any
    ) -> TableScanner:
        """A scan of the rows passing ``filter`` (pyarrow expression, DNF or SQL text), ``columns`` only."""
        base = self.options
        if base.filter is not None and filter is not None:
            raise ValueError("a TableDataset with a filter of its own takes no scanner filter")
        options = ReadOptions(
            filter=filter if filter is not None else base.filter,
            columns=list(columns) if columns is not None else base.columns,
            snapshot_id=base.snapshot_id,
            tag=base.tag,
            as_of_millis=base.as_of_millis,
            limit=base.limit,
        )
        scan = Scan(self.table, options)
        self.scans.append(scan)
        return TableScanner(scan)

    def to_batches(self, **kwargs: Any) -> pa.RecordBatchReader:
        return self.scanner(**kwargs).to_reader()

    def to_table(self, **kwargs: Any) -> pa.Table:
        return self.scanner(**kwargs).to_table()

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.scanner().to_reader().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"TableDataset({self.table.name!r})"
