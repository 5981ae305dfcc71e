"""Off-peak hours, force-rewrite-all-files and file-rewrite units in the pure compaction policy."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from layouts import make_file

from lsmlake.core.types import DataType
from lsmlake.mergetree.compact_strategy import (
    CompactUnit,
    OffPeakHours,
    UniversalCompaction,
    pick_full_compaction,
)
from lsmlake.mergetree.compact_task import Rewrite, TaskPlanner, Upgrade
from lsmlake.mergetree.levels import Levels

MB = 1024 * 1024
HOURS = st.integers(0, 23)


def _level0(seq: int, size_mb: int):  # type: ignore[no-untyped-def]
    f = make_file(seq, seq, level=0, size=size_mb * MB, name=f"l0-{seq}")
    return f.__class__(**{**f.__dict__, "min_sequence_number": seq, "max_sequence_number": seq})


def test_off_peak_hours_are_off_when_unset_or_empty() -> None:
    assert OffPeakHours.of(-1, 5, 10) is None
    assert OffPeakHours.of(3, -1, 10) is None
    assert OffPeakHours.of(7, 7, 10) is None
    hours = OffPeakHours.of(22, 2, 10)
    assert hours is not None
    assert [h for h in range(24) if hours.extra_ratio(h)] == [0, 1, 22, 23]


@given(start=HOURS, end=HOURS, hour=HOURS, ratio=st.integers(1, 500))
def test_off_peak_hours_are_the_hours_walked_from_start_to_end(
    start: int, end: int, hour: int, ratio: int
) -> None:
    # model: walk the clock from the start hour up to (not including) the end hour
    walked = {(start + i) % 24 for i in range((end - start) % 24)}
    hours = OffPeakHours.of(start, end, ratio)
    got = 0 if hours is None else hours.extra_ratio(hour)
    assert got == (ratio if hour in walked else 0)


def _layout() -> list:  # type: ignore[type-arg]
    """Three 1 MB level-0 runs, a 5 MB level-4 run and a 1000 MB top run."""
    return [
        _level0(3, 1),
        _level0(2, 1),
        _level0(1, 1),
        make_file(0, 50, level=4, size=5 * MB, name="mid"),
        make_file(0, 99, level=5, size=1000 * MB, name="top"),
    ]


def test_off_peak_ratio_takes_a_larger_run_into_the_unit() -> None:
    runs = Levels.of(_layout(), 6).level_sorted_runs()
    peak = UniversalCompaction(run_trigger=3).pick(6, runs)
    assert peak is not None and peak.output_level == 3
    assert {f.file_name for f in peak.files} == {"l0-1", "l0-2", "l0-3"}
    # 3 MB * (100 + 1 + 100) / 100 = 6.03 MB >= 5 MB: the level-4 run joins, the unit goes to level 4
    off_peak = UniversalCompaction(run_trigger=3, off_peak_ratio=100).pick(6, runs)
    assert off_peak is not None and off_peak.output_level == 4
    assert {f.file_name for f in off_peak.files} == {"l0-1", "l0-2", "l0-3", "mid"}


@given(
    sizes=st.lists(st.integers(1, 64), min_size=1, max_size=8),
    levels=st.lists(st.integers(1, 4), max_size=3, unique=True),
    ratio=st.integers(0, 300),
    trigger=st.integers(2, 6),
)
def test_off_peak_never_picks_fewer_runs(
    sizes: list[int], levels: list[int], ratio: int, trigger: int
) -> None:
    files = [_level0(i + 1, s) for i, s in enumerate(sizes)]
    files += [make_file(0, 9, level=lv, size=(4**lv) * MB, name=f"L{lv}") for lv in sorted(levels)]
    runs = Levels.of(files, 6).level_sorted_runs()
    base = UniversalCompaction(run_trigger=trigger, max_size_amp=10**6)
    more = UniversalCompaction(run_trigger=trigger, max_size_amp=10**6, off_peak_ratio=ratio)
    if base.pick(6, runs) is not None:
        assert more.pick(6, runs) is not None
    # the size-ratio walk from the newest run takes every run it took before, and maybe more
    base_unit = base.pick_for_size_ratio(5, runs, 1, force=False)
    more_unit = more.pick_for_size_ratio(5, runs, 1, force=False)
    if base_unit is not None:
        assert more_unit is not None
        assert set(base_unit.files) <= set(more_unit.files)
        assert more_unit.output_level >= base_unit.output_level


def test_full_compaction_of_a_top_run_rewrites_all_files_when_forced() -> None:
    top = [
        make_file(0, 9, level=5, size=64 * MB, name="a"),
        make_file(10, 19, level=5, size=64 * MB, name="b"),
    ]
    runs = Levels.of(top, 6).level_sorted_runs()
    assert pick_full_compaction(6, runs) is None
    only_dv = pick_full_compaction(6, runs, files_with_deletion_vectors=frozenset({"b"}))
    assert only_dv == CompactUnit(5, (top[1],), file_rewrite=True)
    forced = pick_full_compaction(6, runs, force_rewrite_all=True)
    assert forced == CompactUnit(5, tuple(top), file_rewrite=True)


def _planner(**kw: bool) -> TaskPlanner:
    return TaskPlanner((DataType("INT", False),), 5, int(0.7 * 128 * MB), False, True, **kw)


def test_a_file_rewrite_unit_rewrites_each_file_alone() -> None:
    files = (make_file(0, 9, level=5, size=MB, name="a"), make_file(10, 19, level=5, size=MB, name="b"))
    steps = _planner().plan(CompactUnit(5, files, file_rewrite=True))
    assert steps == [Rewrite((((files[0],),),)), Rewrite((((files[1],),),))]
    # the same small files in an ordinary unit are merged together in one rewrite
    assert _planner().plan(CompactUnit(5, files)) == [Rewrite((((files[0],),), ((files[1],),)))]


def test_force_rewrite_turns_every_upgrade_into_a_rewrite() -> None:
    big = (
        make_file(0, 9, level=1, size=128 * MB, name="x"),
        make_file(10, 19, level=2, size=128 * MB, name="y"),
    )
    unit = CompactUnit(3, big)
    plain = _planner().plan(unit)
    assert all(isinstance(s, Upgrade) for s in plain) and len(plain) == 2
    forced = _planner(force_rewrite=True).plan(unit)
    assert forced == [Rewrite((((big[0],),),)), Rewrite((((big[1],),),))]
    # a file already at the output level stays put unless forced
    at_output = CompactUnit(2, (big[1],))
    assert _planner().plan(at_output) == []
    assert _planner(force_rewrite=True).plan(at_output) == [Rewrite((((big[1],),),))]
