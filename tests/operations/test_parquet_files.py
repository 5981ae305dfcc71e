"""Row-group pruning from cached Parquet footers: the right column's statistics, nested columns aside."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lsmlake.core.fileio import FileIO
from lsmlake.core.predicate import parse_filter
from lsmlake.core.types import DataField, DataType
from lsmlake.operations.parquet_files import column_ranges, read_row_groups


def test_pruning_reads_the_top_level_column_not_a_nested_namesake(tmp_path: Path) -> None:
    # the struct's child is also called "id" and comes first in the file: its statistics must not be used
    table = pa.table(
        {
            "s": pa.array([{"id": 1_000 + i} for i in range(40)]),
            "id": pa.array(range(40), pa.int64()),
        }
    )
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, row_group_size=10)
    io = FileIO.for_uri(str(tmp_path))[0]

    ranges = column_ranges(io, path, "id")
    assert ranges.mins.tolist() == [0, 10, 20, 30] and ranges.rows.tolist() == [10] * 4

    pred = parse_filter("id BETWEEN 12 AND 14", [DataField(1, "id", DataType("BIGINT"))])
    got, positions = read_row_groups(io, path, ["id"], pred)
    assert got.column("id").to_pylist() == list(range(10, 20))  # row group 1 only
    assert positions is not None and positions.tolist() == list(range(10, 20))
