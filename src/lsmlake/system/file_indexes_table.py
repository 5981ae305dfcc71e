"""`$file_indexes`: one row per (live data file, column, index type) of the snapshot's file indexes."""

from __future__ import annotations

import posixpath
from typing import Any

import pyarrow as pa

from lsmlake.format.file_index.container import INDEX_SUFFIX, read_container
from lsmlake.metadata.live_files import live_entries
from lsmlake.system.common import SystemContext, rows_to_table

FILE_INDEXES_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.string()),
        pa.field("bucket", pa.int32(), nullable=False),
        pa.field("file_path", pa.string(), nullable=False),
        pa.field("file_size_in_bytes", pa.int64(), nullable=False),
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("column_name", pa.string(), nullable=False),
        pa.field("index_type", pa.string(), nullable=False),
        pa.field("storage_type", pa.string(), nullable=False),
        pa.field("index_file_path", pa.string()),
        pa.field("index_size_in_bytes", pa.int64(), nullable=False),
        pa.field("index_container_size_in_bytes", pa.int64(), nullable=False),
        pa.field("is_empty", pa.bool_(), nullable=False),
    ]
)


def file_indexes_table(ctx: SystemContext) -> pa.Table:
    """Every index of every live data file: embedded in its manifest entry (EMBEDDED) or a `.index` (FILE)."""
    rows: list[tuple[Any, ...]] = []
    for e in live_entries(ctx.io, ctx.table.paths, ctx.snapshot()):
        f = e.file
        data_path = ctx.locator.data_file(e.partition, e.bucket, f)
        index_names = [x for x in f.extra_files if x.endswith(INDEX_SUFFIX)]
        if f.embedded_index is not None:
            container, storage, index_path = f.embedded_index, "EMBEDDED", None
        elif index_names:
            index_path = posixpath.join(posixpath.dirname(data_path), index_names[0])
            container, storage = ctx.io.read_bytes(index_path), "FILE"
        else:
            continue
        head = (
            ctx.partition_row(e.partition),
            e.bucket,
            ctx.io.uri(data_path),
            f.file_size,
            f.row_count,
            f.schema_id,
        )
        for blob in read_container(container, source=index_path or f"embedded file index of {f.file_name}"):
            size = 0 if blob.data is None else len(blob.data)
            where = None if index_path is None else ctx.io.uri(index_path)
            rows.append(
                (*head, blob.column, blob.index_type, storage, where, size, len(container), blob.data is None)
            )
    rows.sort(key=lambda r: (r[0] or "", r[1], r[2], r[6], r[7]))
    return rows_to_table(FILE_INDEXES_SCHEMA, rows)
