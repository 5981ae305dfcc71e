"""Compaction policy on level layouts, without I/O."""

from __future__ import annotations

from layouts import make_file

from lsmlake.mergetree.compact_strategy import (
    CompactUnit,
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    GentleTrigger,
    UniversalCompaction,
    drop_delete,
    gentle_max_interval,
    is_worth_running,
    pick_full_compaction,
)
from lsmlake.mergetree.levels import Levels

MB = 1024 * 1024


def level0(seq: int, size_mb: int = 1):  # type: ignore[no-untyped-def]
    f = make_file(seq, seq, level=0, size=size_mb * MB, name=f"l0-{seq}")
    return f.__class__(**{**f.__dict__, "min_sequence_number": seq, "max_sequence_number": seq})


def test_levels_order_newest_first() -> None:
    levels = Levels.of([level0(1), level0(3), level0(2), make_file(1, 9, level=5, name="big")], 6)
    runs = levels.level_sorted_runs()
    assert [r.files[0].file_name for r in runs] == ["l0-3", "l0-2", "l0-1", "big"]
    assert levels.highest_non_empty_level() == 5 and levels.number_of_sorted_runs() == 4


def test_below_trigger_nothing_then_size_amplification_takes_all() -> None:
    strategy = UniversalCompaction()
    assert strategy.pick(6, Levels.of([level0(i) for i in range(4)], 6).level_sorted_runs()) is None
    unit = strategy.pick(6, Levels.of([level0(i) for i in range(5)], 6).level_sorted_runs())
    assert unit is not None and unit.output_level == 5 and len(unit.files) == 5


def test_size_ratio_picks_newest_similar_runs() -> None:
    files = [level0(i) for i in range(4)] + [make_file(0, 9, level=5, size=1000 * MB, name="base")]
    unit = UniversalCompaction().pick(6, Levels.of(files, 6).level_sorted_runs())
    assert unit is not None
    assert {f.file_name for f in unit.files} == {"l0-0", "l0-1", "l0-2", "l0-3"}
    assert unit.output_level == 4  # one below the next unpicked run


def test_run_count_forces_compaction() -> None:
    # sizes grow so fast that size ratio never triggers, but there are too many runs
    files = [level0(i, size_mb=4**i) for i in range(6)] + [
        make_file(0, 9, level=5, size=10**6 * MB, name="b")
    ]
    unit = UniversalCompaction(run_trigger=5).pick(6, Levels.of(files, 6).level_sorted_runs())
    assert unit is not None and len(unit.files) >= 3 and unit.output_level > 0


def test_force_up_level0_as_in_the_seed_example() -> None:
    files = [level0(7), make_file(0, 100, level=5, size=500 * MB, name="f1")]
    runs = Levels.of(files, 6).level_sorted_runs()
    assert UniversalCompaction().pick(6, runs) is None
    unit = ForceUpLevel0Compaction(UniversalCompaction()).pick(6, runs)
    assert unit is not None and unit.output_level == 4 and [f.file_name for f in unit.files] == ["l0-7"]


def test_gentle_forces_level0_up_every_max_interval_th_idle_pick() -> None:
    files = [level0(7), make_file(0, 100, level=5, size=500 * MB, name="f1")]
    runs = Levels.of(files, 6).level_sorted_runs()
    strategy = ForceUpLevel0Compaction(UniversalCompaction(), GentleTrigger(3))
    picks = [strategy.pick(6, runs) for _ in range(7)]
    assert [p is not None for p in picks] == [False, False, True, False, False, True, False]
    # a pick universal compaction makes itself does not count
    busy = Levels.of([level0(i) for i in range(5)], 6).level_sorted_runs()
    counting = GentleTrigger(2)
    assert ForceUpLevel0Compaction(UniversalCompaction(), counting).pick(6, busy) is not None
    assert counting.count == 0
    # Paimon's default: twice the run trigger, never below it
    assert (
        gentle_max_interval(None, 5) == 10
        and gentle_max_interval(2, 5) == 5
        and gentle_max_interval(7, 5) == 7
    )


def test_level0_swallows_until_a_non_zero_level() -> None:
    files = [level0(2), level0(1), make_file(0, 9, level=3, size=1000 * MB, name="l3")]
    unit = ForceUpLevel0Compaction(UniversalCompaction()).pick(6, Levels.of(files, 6).level_sorted_runs())
    assert unit is not None and unit.output_level == 2 and len(unit.files) == 2


def test_full_compaction() -> None:
    files = [level0(1), make_file(0, 9, level=2, name="a"), make_file(10, 19, level=5, name="b")]
    unit = pick_full_compaction(6, Levels.of(files, 6).level_sorted_runs())
    assert unit is not None and unit.output_level == 5 and len(unit.files) == 3
    lone = Levels.of([make_file(0, 9, level=5, name="b")], 6).level_sorted_runs()
    assert pick_full_compaction(6, lone) is None
    unit = pick_full_compaction(6, lone, files_with_deletion_vectors=frozenset({"b"}))
    assert unit is not None and [f.file_name for f in unit.files] == ["b"]


def test_unit_filter_and_drop_delete() -> None:
    f = make_file(0, 9, level=5, name="x")
    assert not is_worth_running(CompactUnit(5, (f,)))
    assert is_worth_running(CompactUnit(4, (f,)))
    assert drop_delete(5, 5, deletion_vectors=False) and not drop_delete(3, 5, deletion_vectors=False)
    assert drop_delete(3, 5, deletion_vectors=True) and not drop_delete(0, 5, deletion_vectors=True)


def test_early_full_compaction_thresholds() -> None:
    files = [level0(1), make_file(0, 9, level=5, size=100 * MB, name="b")]
    runs = Levels.of(files, 6).level_sorted_runs()
    assert EarlyFullCompaction().pick(6, runs) is None
    assert EarlyFullCompaction(total_size_threshold=200 * MB).pick(6, runs) is not None
    assert EarlyFullCompaction(incremental_size_threshold=MB // 2).pick(6, runs) is not None
    assert EarlyFullCompaction(interval_ms=1000, last_full_millis=0, now_millis=500).pick(6, runs) is None
    unit = EarlyFullCompaction(interval_ms=1000, last_full_millis=0, now_millis=5000).pick(6, runs)
    assert unit is not None and unit.output_level == 5 and len(unit.files) == 2
    assert UniversalCompaction(early_full=EarlyFullCompaction(total_size_threshold=1 << 40)).pick(6, runs)
