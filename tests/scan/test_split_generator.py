"""MergeTreeSplitGenerator.splitForBatch policy over text-notation layouts, without I/O."""

from __future__ import annotations

from dataclasses import replace

import pytest
from layouts import MB, bounds, parse_layout, render_files, render_sections

from lsmlake.scan import split_generator as sg
from lsmlake.scan.split_generator import SplitGroup, pack_for_ordered, split_for_append, split_for_batch


def plan(
    layout: str, *, target: int = 128, cost: int = 4, dv: bool = False, engine: str = "deduplicate"
) -> list[SplitGroup]:
    return split_for_batch(
        parse_layout(layout),
        bounds,
        target_size=target * MB,
        open_file_cost=cost * MB,
        deletion_vectors=dv,
        merge_engine=engine,
    )


def show(groups: list[SplitGroup]) -> list[str]:
    """Each split as ``raw: <files>`` or ``merge: <sections>``."""
    return [
        f"raw: {render_files(g.files)}"
        if g.raw_convertible
        else f"merge: {render_sections(g.sections or ())}"
        for g in groups
    ]


def test_pack_for_ordered_keeps_order_and_closes_bins_before_overflow() -> None:
    assert pack_for_ordered([5, 5, 1, 9, 2, 2, 2], lambda x: x, 10) == [[5, 5], [1, 9], [2, 2, 2]]
    assert pack_for_ordered([20, 1], lambda x: x, 10) == [[20], [1]]  # an oversized item gets a bin
    assert pack_for_ordered([], lambda x: x, 10) == []


def test_one_level_without_deletes_is_raw_and_packed_by_file() -> None:
    groups = plan("L5: [1,2] [3,4] [5,6]", target=8)
    assert show(groups) == ["raw: [1,2] [3,4]", "raw: [5,6]"]  # weight max(1 MB, 4 MB) each
    assert groups[0].rule == sg.RAW_ONE_LEVEL.format(level=5)


def test_open_file_cost_and_size_weights() -> None:
    assert show(plan("L5: [1,2]:6 [3,4]:1 [5,6]:1", target=10)) == ["raw: [1,2] [3,4]", "raw: [5,6]"]
    assert show(plan("L5: [1,2]:6 [3,4]:1 [5,6]:1", target=10, cost=1)) == ["raw: [1,2] [3,4] [5,6]"]


def test_deletion_vectors_make_overlapping_levels_raw() -> None:
    groups = plan("L1: [1,9] | L4: [1,5] [6,9]", dv=True)
    assert show(groups) == ["raw: [1,9] [1,5] [6,9]"]  # list order, no interval partition
    assert groups[0].rule == sg.RAW_DV


def test_first_row_makes_overlapping_levels_raw() -> None:
    groups = plan("L1: [1,9] | L4: [1,5] [6,9]", engine="first-row")
    assert [g.raw_convertible for g in groups] == [True]
    assert groups[0].rule == sg.RAW_FIRST_ROW


def test_several_levels_without_dv_merge_by_section() -> None:
    groups = plan("L1: [1,9] | L4: [1,5] [6,9] [20,30]", target=7)
    # sections weigh max(sum of sizes, open cost): 4 MB each, so two bins of 7 MB
    assert show(groups) == ["merge: {[1,5] [6,9] / [1,9]}", "raw: [20,30]"]
    assert groups[0].rule == sg.MERGE_LEVELS
    assert groups[1].rule == sg.RAW_SINGLE_FILE


def test_sections_are_packed_whole() -> None:
    groups = plan("L0: [1,2] [3,4] | L1: [5,180]:5 [200,600] | L2: [5,190]:5 [210,700]", target=12)
    # section weights 4, 4, 10, 4 MB: bins [4+4], [10], [4]
    assert show(groups) == [
        "merge: {[1,2]} {[3,4]}",
        "merge: {[5,180] / [5,190]}",
        "merge: {[200,600] / [210,700]}",
    ]
    assert groups[0].rule == sg.MERGE_LEVEL0


def test_level0_forces_merge_even_with_deletion_vectors() -> None:
    groups = plan("L0: [1,3] | L1: [2,8]", dv=True)
    assert show(groups) == ["merge: {[1,3] / [2,8]}"]
    assert groups[0].rule == sg.MERGE_LEVEL0


def test_single_level0_file_without_deletes_is_raw() -> None:
    assert show(plan("L0: [1,3]")) == ["raw: [1,3]"]


def test_delete_rows_force_merge() -> None:
    groups = plan("L5: [1,2]! [3,4]", target=4)
    # one level, but a file holds delete rows: sections, and the lone file with deletes merges
    assert show(groups) == ["merge: {[1,2]}", "raw: [3,4]"]
    assert groups[0].rule == sg.MERGE_DELETE_ROWS
    assert show(plan("L5: [1,2]! [3,4]", dv=True, target=4)) == ["merge: {[1,2]}", "raw: [3,4]"]


def test_unknown_delete_count_is_raw_for_java_but_read_by_merge() -> None:
    # Java's generator counts a null delete count as 0 (raw), but its raw read provider refuses
    # the split, so lsmlake plans the same files and marks the split for the merge read.
    groups = plan("L5: [1,2]? [3,4]", target=8)
    assert [render_files(g.files) for g in groups] == ["[1,2] [3,4]"]
    assert not groups[0].raw_convertible
    assert groups[0].rule == sg.MERGE_UNKNOWN_DELETES
    assert render_sections(groups[0].sections or ()) == "{[1,2]} {[3,4]}"
    assert show(plan("L5: [1,2]? [3,4]", target=4)) == ["merge: {[1,2]}", "raw: [3,4]"]
    # a lone L0 file with an unknown count
    assert show(plan("L0: [1,2]?")) == ["merge: {[1,2]}"]


def test_empty_bucket() -> None:
    assert plan("") == []


@pytest.mark.parametrize("dv", [False, True])
def test_every_file_lands_in_exactly_one_split(dv: bool) -> None:
    files = parse_layout("L0: [1,50] [40,60]! | L1: [1,10] [11,20] [30,90] | L3: [5,6] [95,99]?")
    groups = split_for_batch(files, bounds, target_size=6 * MB, open_file_cost=4 * MB, deletion_vectors=dv)
    names = [f.file_name for g in groups for f in g.files]
    assert sorted(names) == sorted(f.file_name for f in files)
    for g in groups:
        if not g.raw_convertible:
            assert g.sections is not None
            in_sections = [f.file_name for s in g.sections for run in s for f in run]
            assert in_sections == [f.file_name for f in g.files]


def test_append_splits_sort_by_sequence_and_are_raw() -> None:
    layout = parse_layout("[0,0] [0,0] [0,0]")
    files = [replace(f, min_sequence_number=seq) for f, seq in zip(layout, [7, 1, 4], strict=True)]
    groups = split_for_append(files, target_size=8 * MB, open_file_cost=4 * MB)
    assert [[f.min_sequence_number for f in g.files] for g in groups] == [[1, 4], [7]]
    assert all(g.raw_convertible and g.rule == sg.RAW_APPEND for g in groups)
