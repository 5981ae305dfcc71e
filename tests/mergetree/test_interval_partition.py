"""IntervalPartition over text-notation layouts: sections, minimal sorted runs, BinaryRow keys."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from layouts import bounds, make_file, parse_layout, render_sections

from lsmlake.core.binary_row import serialize_row
from lsmlake.core.types import DataType
from lsmlake.mergetree.interval_partition import KeyBounds, interval_partition, partition_files
from lsmlake.metadata.data_file import DataFileMeta


def partition(layout: str) -> str:
    return render_sections(interval_partition(parse_layout(layout), bounds))


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("[1,2]", "{[1,2]}"),
        ("[1,2] [3,4] | [5,9]", "{[1,2]} {[3,4]} {[5,9]}"),
        ("[5,9] | [3,4] [1,2]", "{[1,2]} {[3,4]} {[5,9]}"),
        # touching keys overlap: a run needs strictly increasing keys
        ("[1,5] [5,9]", "{[1,5] / [5,9]}"),
        ("[100,200] [100,400] [100,300] [100,500]", "{[100,200] / [100,300] / [100,400] / [100,500]}"),
        ("[100,500] [300,500] [200,500] [400,500]", "{[100,500] / [200,500] / [300,500] / [400,500]}"),
        # Paimon's section example: two sections of two runs each
        ("[0,9] [5,7] [9,15] [16,22] [16,28] [24,32]", "{[0,9] / [5,7] [9,15]} {[16,22] [24,32] / [16,28]}"),
        # the split-generator doc example
        (
            "[1,2] [3,4] [5,180] [5,190] [200,600] [210,700]",
            "{[1,2]} {[3,4]} {[5,180] / [5,190]} {[200,600] / [210,700]}",
        ),
        # a wide level-0 file pulls everything into one section
        ("L0: [1,100] | L1: [1,10] [20,30] [40,50]", "{[1,10] [20,30] [40,50] / [1,100]}"),
    ],
)
def test_partition(layout: str, expected: str) -> None:
    assert partition(layout) == expected


def test_empty() -> None:
    assert interval_partition([], bounds) == []


def _depth(intervals: list[tuple[int, int]]) -> int:
    points = {p for iv in intervals for p in iv}
    return max(sum(1 for lo, hi in intervals if lo <= p <= hi) for p in points)


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), min_size=1, max_size=40))
def test_invariants(raw: list[tuple[int, int]]) -> None:
    files = [make_file(lo, lo + width, name=f"f{i}") for i, (lo, width) in enumerate(raw)]
    sections = interval_partition(files, bounds)
    seen = [f.file_name for s in sections for run in s for f in run]
    assert sorted(seen) == sorted(f.file_name for f in files)
    previous_max = None
    for section in sections:
        lows = [bounds(f)[0] for run in section for f in run]
        highs = [bounds(f)[1] for run in section for f in run]
        if previous_max is not None:
            assert min(lows) > previous_max  # sections are key-disjoint and ascending
        previous_max = max(highs)
        for run in section:
            for a, b in itertools.pairwise(run):
                assert bounds(a)[1] < bounds(b)[0]  # sorted runs never overlap
        # the greedy partition is minimal: as many runs as the deepest overlap
        assert len(section) == _depth([bounds(f) for run in section for f in run])


def test_binary_row_keys_compare_like_java() -> None:
    types = [DataType("VARCHAR", False, length=2147483647), DataType("INT", False)]

    def f(name: str, lo: tuple[str, int], hi: tuple[str, int]) -> DataFileMeta:
        return replace(
            make_file(0, 0, name=name),
            min_key=serialize_row(list(lo), types),
            max_key=serialize_row(list(hi), types),
        )

    a = f("a", ("Alice", 1), ("Bob", 0))
    b = f("b", ("Bob", 1), ("Zed", 0))  # ("Bob", 1) > ("Bob", 0): disjoint from a
    c = f("c", ("Alex", 0), ("Alice", 1))  # touches a's min key: overlaps
    d = f("d", ("\u00e9t\u00e9", 0), ("\u00e9t\u00e9", 9))  # UTF-8 bytes sort after ASCII
    sections = partition_files([d, b, a, c], types)
    names = [[sorted(g.file_name for g in run) for run in s] for s in sections]
    assert names == [[["c"], ["a"]], [["b"]], [["d"]]] or names == [[["a"], ["c"]], [["b"]], [["d"]]]
    kb = KeyBounds(types)
    assert kb(a)[0] < kb(a)[1]
