"""What a split reader needs besides the split: table, schema, options, projection and filters."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import PathGuard
from lsmlake.core.schema import TableSchema, read_schema, schema_file_name
from lsmlake.core.types import to_arrow_type
from lsmlake.errors import NoSuchColumnError, UnsupportedError
from lsmlake.mergetree.merge_function import MergeFunction, merge_function_for, read_columns
from lsmlake.scan.planner import ScanFilters

ROW_KIND_COLUMN = "rowkind"
"""The leading column of audit-log, binlog and stream reads: +I, -U, +U or -D."""


def load_schema(ctx: ReadContext, schema_id: int) -> TableSchema:
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
    mapping_cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    keep_row_kind: bool = False
    """Audit-log reads: keep retract results and put a ``rowkind`` column (+I, -U, +U, -D) first."""
    batch_rows: int | None = None
    """Streaming reads: read files in pieces of about this many rows and merge overlapping sections
    in key-range steps, so memory follows the batch, not the file (None: whole files and sections)."""
    decode_threads: bool = True
    """Let pyarrow decode a file's columns in parallel; off when splits already run on every reader
    thread (handing columns to pyarrow's pool then only costs CPU)."""

    def __post_init__(self) -> None:
        known = set(self.schema.field_names)
        for name in self.columns:
            if name not in known:
                raise NoSuchColumnError(
                    f"unknown column {name!r}; table columns are {self.schema.field_names}"
                )

    @cached_property
    def guard(self) -> PathGuard:
        """Where the files this read opens may lie: under the table or its external roots."""
        return PathGuard.of(self.io, self.root, self.options)

    @cached_property
    def output_schema(self) -> pa.Schema:
        """The projected table columns."""
        return output_schema(self.schema, self.columns)

    @cached_property
    def result_schema(self) -> pa.Schema:
        """What a split read returns, empty or not: the output schema, behind ``rowkind`` for audit reads."""
        if not self.keep_row_kind:
            return self.output_schema
        return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), False), *self.output_schema])

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
