"""Row-group pruning from cached Parquet footers: the right column's statistics, nested columns aside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from lsmlake.core.fileio import FileIO
from lsmlake.core.types import DataField, DataType
from lsmlake.expr import Compare, parse_filter
from lsmlake.format.parquet_files import ColumnRanges, _leaf_mask, column_ranges, read_row_groups


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


def _kinds_file(tmp_path: Path, kinds: list[int]) -> tuple[FileIO, str]:
    """A file of 40 rows in row groups of 10: ``id`` 0..39 and an int8 row kind."""
    table = pa.table({"id": pa.array(range(40), pa.int64()), "_VALUE_KIND": pa.array(kinds, pa.int8())})
    path = str(tmp_path / "k.parquet")
    pq.write_table(table, path, row_group_size=10)
    return FileIO.for_uri(str(tmp_path))[0], path


def test_a_column_the_statistics_prove_constant_is_filled_in(tmp_path: Path, monkeypatch: Any) -> None:
    io, path = _kinds_file(tmp_path, [0] * 40)
    assert column_ranges(io, path, "_VALUE_KIND").constant([0, 1, 2, 3]) == 0
    decoded: list[list[str]] = []
    original = pq.ParquetFile.read_row_groups

    def spy(self: pq.ParquetFile, groups: Any, columns: list[str], **kw: Any) -> pa.Table:
        decoded.append(list(columns))
        return original(self, groups, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    got, positions = read_row_groups(io, path, ["_VALUE_KIND", "id"], None, constants=["_VALUE_KIND"])
    assert decoded == [["id"]]
    assert got.column_names == ["_VALUE_KIND", "id"] and positions is None
    assert got.schema.field("_VALUE_KIND").type == pa.int8()
    assert got.column("_VALUE_KIND").to_pylist() == [0] * 40 and got.column("id").to_pylist() == list(
        range(40)
    )
    # only the constant asked for: the row count still comes from the row groups read
    only, _ = read_row_groups(io, path, ["_VALUE_KIND"], None, constants=["_VALUE_KIND"])
    assert only.num_rows == 40 and only.column_names == ["_VALUE_KIND"]


def test_a_column_is_constant_only_if_every_row_group_read_holds_one_value(tmp_path: Path) -> None:
    kinds = [0] * 10 + [3] * 10 + [0] * 5 + [2] * 5 + [0] * 10  # groups: 0, 3, {0, 2}, 0
    io, path = _kinds_file(tmp_path, kinds)
    ranges = column_ranges(io, path, "_VALUE_KIND")
    assert ranges.constant([0, 3]) == 0 and ranges.constant([1]) == 3
    assert ranges.constant([0, 1]) is None and ranges.constant([2]) is None
    pred = parse_filter("id >= 20", [DataField(1, "id", DataType("BIGINT"))])
    got, positions = read_row_groups(io, path, ["id", "_VALUE_KIND"], pred, constants=["_VALUE_KIND"])
    assert got.column("_VALUE_KIND").to_pylist() == kinds[20:]  # mixed group 2: decoded
    assert positions is not None and positions.tolist() == list(range(20, 40))
    pred = parse_filter("id >= 30", [DataField(1, "id", DataType("BIGINT"))])
    got, _ = read_row_groups(io, path, ["id", "_VALUE_KIND"], pred, constants=["_VALUE_KIND"])
    assert got.column("_VALUE_KIND").to_pylist() == [0] * 10


def test_without_statistics_a_constant_column_is_decoded(tmp_path: Path) -> None:
    table = pa.table({"id": pa.array(range(20), pa.int64()), "_VALUE_KIND": pa.array([3] * 20, pa.int8())})
    path = str(tmp_path / "n.parquet")
    pq.write_table(table, path, row_group_size=10, write_statistics=["id"])
    io = FileIO.for_uri(str(tmp_path))[0]
    assert column_ranges(io, path, "_VALUE_KIND").constant([0, 1]) is None
    got, _ = read_row_groups(io, path, ["_VALUE_KIND"], None, constants=["_VALUE_KIND"])
    assert got.column("_VALUE_KIND").to_pylist() == [3] * 20


def test_typed_and_object_statistics_prune_alike(tmp_path: Path) -> None:
    table = pa.table({"i": pa.array(range(40), pa.int64()), "f": pa.array([x / 2 for x in range(40)])})
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=10)  # i: 0-9 | 10-19 | 20-29 | 30-39, f = i / 2
    io = FileIO.for_uri(str(tmp_path))[0]
    fields = [DataField(1, "i", DataType("BIGINT")), DataField(2, "f", DataType("DOUBLE"))]
    assert column_ranges(io, path, "i").typed_bounds is not None
    cases = {
        "i >= 25": [2, 3],
        "i < 10": [0],
        "i = 19": [1],
        "f > 14.6": [3],
        "f <= 5": [0, 1],
    }
    # literals the typed arrays cannot take are compared as Python objects
    leaves = {
        "i > 9.5": (Compare("i", ">", 9.5), [1, 2, 3]),
        "i < 2**70": (Compare("i", "<", 2**70), [0, 1, 2, 3]),
        "i > -(2**70)": (Compare("i", ">", -(2**70)), [0, 1, 2, 3]),
        "f >= 5 (int)": (Compare("f", ">=", 5), [1, 2, 3]),
    }
    filters: dict[str, tuple[Any, list[int]]] = {t: (parse_filter(t, fields), g) for t, g in cases.items()}
    for text, (predicate, groups) in {**filters, **leaves}.items():
        got, _ = read_row_groups(io, path, ["i"], predicate)
        expected = [i for g in groups for i in range(10 * g, 10 * g + 10)]
        assert got.column("i").to_pylist() == expected, text


class _Ranges:
    """A footer stand-in that serves fixed column ranges."""

    def __init__(self, ranges: ColumnRanges) -> None:
        self._ranges = ranges

    def ranges(self, name: str) -> ColumnRanges:
        return self._ranges


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-20, 20), st.integers(0, 10), st.sampled_from(["known", "unknown", "all-null"])
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["=", "<", "<=", ">", ">="]),
    st.integers(-25, 35),
)
def test_typed_pruning_matches_pruning_by_objects(
    groups: list[tuple[int, int, str]], op: str, lit: int
) -> None:
    n = len(groups)
    mins, maxs = np.empty(n, dtype=object), np.empty(n, dtype=object)
    known = np.array([g[2] == "known" for g in groups])
    all_null = np.array([g[2] == "all-null" for g in groups])
    for i, (lo, width, _) in enumerate(groups):
        if known[i]:
            mins[i], maxs[i] = lo, lo + width
    ranges = ColumnRanges(mins, maxs, known, all_null, ~all_null, np.full(n, 10, dtype=np.int64))
    typed = _leaf_mask(_Ranges(ranges), Compare("c", op, lit))  # type: ignore[arg-type]
    assert ranges.typed_bounds is not None or not known.any()
    values = [range(lo, lo + width + 1) for lo, width, _ in groups]
    truth = [  # a group may match unless its statistics rule every value out
        g[2] == "unknown" or (g[2] == "known" and any(_compare(v, op, lit) for v in vals))
        for g, vals in zip(groups, values, strict=True)
    ]
    assert typed is not None and typed.tolist() == truth


def _compare(v: int, op: str, lit: int) -> bool:
    return {"=": v == lit, "<": v < lit, "<=": v <= lit, ">": v > lit, ">=": v >= lit}[op]


def test_the_manifest_size_vouches_for_a_cached_footer(tmp_path: Path, monkeypatch: Any) -> None:
    import lsmlake.format.parquet_files as parquet_files

    io, path = _kinds_file(tmp_path, [0] * 40)
    size = Path(path).stat().st_size
    stats: list[str] = []
    real = parquet_files._local_size
    monkeypatch.setattr(parquet_files, "_local_size", lambda io, p: stats.append(p) or real(io, p))
    read_row_groups(io, path, ["id"], None, file_size=size)  # first read: from the file system
    read_row_groups(io, path, ["id"], None, file_size=size)  # cached, same size: no stat
    assert len(stats) == 1
    read_row_groups(io, path, ["id"], None, file_size=size + 1)  # the manifest disagrees: checked
    read_row_groups(io, path, ["id"], None)
    assert len(stats) == 3
    # rewritten in place with another size: the check notices and the footer is read again
    pq.write_table(pa.table({"id": pa.array(range(5), pa.int64())}), path)
    got, _ = read_row_groups(io, path, ["id"], None)
    assert got.column("id").to_pylist() == list(range(5))
