"""What to compact: Paimon's universal compaction, force-up-level-0 and full compaction (pure policy)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lsmlake.mergetree.levels import LevelSortedRun
from lsmlake.metadata.data_file import DataFileMeta


@dataclass(frozen=True)
class CompactUnit:
    """Files to merge together and the level their result goes to; a ``file_rewrite`` unit rewrites each
    file on its own (Paimon's FileRewriteCompactTask: a full compaction of a bucket already at the top)."""

    output_level: int
    files: tuple[DataFileMeta, ...]
    file_rewrite: bool = False

    @staticmethod
    def of_runs(output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        return CompactUnit(output_level, tuple(f for r in runs for f in r.files))


@dataclass(frozen=True)
class EarlyFullCompaction:
    """Full compaction ahead of the universal rules, on time or size thresholds (all off by default)."""

    interval_ms: int | None = None  # compaction.optimization-interval
    total_size_threshold: int | None = None  # compaction.total-size-threshold
    incremental_size_threshold: int | None = None  # compaction.incremental-size-threshold
    last_full_millis: int | None = None  # estimated from the newest max-level file
    now_millis: int = 0

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) <= 1:
            return None
        max_level = num_levels - 1
        if self.interval_ms is not None and (
            self.last_full_millis is None or self.now_millis - self.last_full_millis > self.interval_ms
        ):
            return CompactUnit.of_runs(max_level, runs)
        if (
            self.total_size_threshold is not None
            and sum(r.total_size for r in runs) < self.total_size_threshold
        ):
            return CompactUnit.of_runs(max_level, runs)
        if (
            self.incremental_size_threshold is not None
            and sum(r.total_size for r in runs if r.level != max_level) > self.incremental_size_threshold
        ):
            return CompactUnit.of_runs(max_level, runs)
        return None


@dataclass(frozen=True)
class OffPeakHours:
    """Hours of the local day in which universal compaction merges with a larger size ratio (Paimon's
    OffPeakHours): ``start`` inclusive, ``end`` exclusive, wrapping past midnight when ``end < start``."""

    start: int  # compaction.offpeak.start.hour
    end: int  # compaction.offpeak.end.hour
    ratio: int  # compaction.offpeak-ratio

    @staticmethod
    def of(start: int, end: int, ratio: int) -> OffPeakHours | None:
        """None when off-peak hours are off: either hour is -1, or they are equal."""
        if start == -1 or end == -1 or start == end:
            return None
        return OffPeakHours(start, end, ratio)

    def extra_ratio(self, hour: int) -> int:
        """The ratio added to ``compaction.size-ratio`` at ``hour`` (0 outside off-peak hours)."""
        if self.start <= self.end:
            return self.ratio if self.start <= hour < self.end else 0
        return self.ratio if hour < self.end or self.start <= hour else 0


@dataclass(frozen=True)
class UniversalCompaction:
    """RocksDB-style universal compaction as Paimon configures it."""

    max_size_amp: int = 200  # compaction.max-size-amplification-percent
    size_ratio: int = 1  # compaction.size-ratio
    run_trigger: int = 5  # num-sorted-run.compaction-trigger
    early_full: EarlyFullCompaction | None = None
    off_peak_ratio: int = 0
    """What ``OffPeakHours.extra_ratio`` gave for the hour of this pick (the caller reads the clock)."""

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        if self.early_full is not None:
            unit = self.early_full.pick(num_levels, runs)
            if unit is not None:
                return unit
        if len(runs) >= self.run_trigger:
            unit = self._size_amplification(max_level, runs)
            if unit is not None:
                return unit
            unit = self.pick_for_size_ratio(max_level, runs, 1, force=False)
            if unit is not None:
                return unit
        if len(runs) > self.run_trigger:
            return self.pick_for_size_ratio(max_level, runs, len(runs) - self.run_trigger + 1, force=False)
        return None

    def _size_amplification(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        candidate = sum(r.total_size for r in runs[:-1])
        earliest = runs[-1].total_size
        if candidate * 100 > self.max_size_amp * earliest:
            return CompactUnit.of_runs(max_level, runs)
        return None

    def pick_for_size_ratio(
        self, max_level: int, runs: Sequence[LevelSortedRun], count: int, *, force: bool
    ) -> CompactUnit | None:
        size = sum(r.total_size for r in runs[:count])
        triggered = force or count > 1
        for run in runs[count:]:
            # Java's double arithmetic, step by step (the same rounding at any size)
            bound = float(size) * (100.0 + self.size_ratio + self.off_peak_ratio) / 100.0
            if bound < float(run.total_size) and (not triggered or run.level > 1):
                break
            size += run.total_size
            count += 1
            triggered = True
        return create_unit(max_level, runs, count) if triggered else None


def create_unit(max_level: int, runs: Sequence[LevelSortedRun], count: int) -> CompactUnit:
    """The unit of the newest ``count`` runs; level 0 is never an output level."""
    if count == len(runs):
        return CompactUnit.of_runs(max_level, runs)
    output = max(0, runs[count].level - 1)
    if output == 0:
        while count < len(runs):
            nxt = runs[count]
            count += 1
            if nxt.level != 0:
                output = nxt.level
                break
    if count == len(runs):
        output = max_level
    return CompactUnit.of_runs(output, runs[:count])


class GentleTrigger:
    """``lookup-compact = gentle``: one writer's count of compactions universal compaction left alone; every
    ``max_interval``-th of them forces level 0 up (Paimon's compactTriggerCount)."""

    def __init__(self, max_interval: int) -> None:
        self.max_interval = max_interval
        self.count = 0

    def fire(self) -> bool:
        self.count += 1
        if self.count == self.max_interval:
            self.count = 0
            return True
        return False


def gentle_max_interval(configured: int | None, run_trigger: int) -> int:
    """Paimon's lookupCompactMaxInterval."""
    interval = configured if configured is not None else 2 * run_trigger
    return max(run_trigger, interval)


@dataclass(frozen=True)
class ForceUpLevel0Compaction:
    """Universal compaction, and when it picks nothing, every level-0 file goes up anyway (lookup tables);
    with a ``gentle`` trigger only when it fires."""

    universal: UniversalCompaction
    gentle: GentleTrigger | None = None

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        unit = self.universal.pick(num_levels, runs)
        if unit is not None:
            return unit
        if self.gentle is not None and not self.gentle.fire():
            return None
        leading_level0 = 0
        for run in runs:
            if run.level > 0:
                break
            leading_level0 += 1
        if leading_level0 == 0:
            return None
        return self.universal.pick_for_size_ratio(num_levels - 1, runs, leading_level0, force=True)


def pick_full_compaction(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    *,
    files_with_deletion_vectors: frozenset[str] = frozenset(),
    expired: Callable[[DataFileMeta], bool] | None = None,
    force_rewrite_all: bool = False,
) -> CompactUnit | None:
    """Everything to the max level; a lone max-level run only rewrites, file by file, its files that carry
    deletion vectors or rows record-level expiry drops (``expired``), or all of them with
    ``force_rewrite_all`` (``compaction.force-rewrite-all-files``)."""
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        files = tuple(
            f
            for f in runs[0].files
            if force_rewrite_all
            or (expired is not None and expired(f))
            or f.file_name in files_with_deletion_vectors
        )
        return CompactUnit(max_level, files, file_rewrite=True) if files else None
    return CompactUnit.of_runs(max_level, runs)


def is_worth_running(unit: CompactUnit | None) -> bool:
    """Discard empty units and a single file already at the output level (as Paimon's manager does)."""
    if unit is None or not unit.files:
        return False
    return not (len(unit.files) == 1 and unit.files[0].level == unit.output_level)


def drop_delete(output_level: int, highest_non_empty_level: int, *, deletion_vectors: bool) -> bool:
    """Whether a compaction may drop delete rows: nothing older can exist below its output."""
    return output_level != 0 and (output_level >= highest_non_empty_level or deletion_vectors)
