"""Levels of one bucket's LSM tree: level-0 files newest first, then one sorted run per level."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lsmlake.metadata.data_file import DataFileMeta


@dataclass(frozen=True)
class LevelSortedRun:
    """One sorted run (a level-0 file alone, or all files of a level >= 1) and its level."""

    level: int
    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


def _level0_order(f: DataFileMeta) -> tuple[int, int, int, str]:
    # newest first: max sequence descending, then min sequence, creation time and name
    return (-f.max_sequence_number, f.min_sequence_number, -(f.creation_time_millis or 0), f.file_name)


@dataclass(frozen=True)
class Levels:
    """The files of one bucket arranged by level; immutable, ``apply`` returns the next state."""

    level0: tuple[DataFileMeta, ...]
    runs: tuple[tuple[DataFileMeta, ...], ...]  # index i holds level i (index 0 unused)

    @staticmethod
    def of(files: Iterable[DataFileMeta], num_levels: int) -> Levels:
        files = list(files)
        top = max([f.level for f in files] + [num_levels - 1])
        level0 = tuple(sorted((f for f in files if f.level == 0), key=_level0_order))
        runs: list[tuple[DataFileMeta, ...]] = [()]
        for level in range(1, top + 1):
            # files of a level do not overlap; their key order is decoded where it matters
            runs.append(tuple(sorted((f for f in files if f.level == level), key=lambda f: f.file_name)))
        return Levels(level0, tuple(runs))

    @property
    def num_levels(self) -> int:
        return len(self.runs)

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    def all_files(self) -> list[DataFileMeta]:
        out = list(self.level0)
        for run in self.runs[1:]:
            out.extend(run)
        return out

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """Every run, newest to oldest: each level-0 file alone, then levels 1..max."""
        out = [LevelSortedRun(0, (f,)) for f in self.level0]
        out += [LevelSortedRun(level, run) for level, run in enumerate(self.runs) if level > 0 and run]
        return out

    def number_of_sorted_runs(self) -> int:
        return len(self.level0) + sum(1 for run in self.runs[1:] if run)

    def highest_non_empty_level(self) -> int:
        for level in range(self.max_level, 0, -1):
            if self.runs[level]:
                return level
        return 0 if self.level0 else -1

    def files_above(self, level: int) -> list[Sequence[DataFileMeta]]:
        """The runs of levels strictly above ``level``, lowest level first (where lookups go)."""
        return [run for lvl, run in enumerate(self.runs) if lvl > level and run]

    def apply(self, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta]) -> Levels:
        """The levels after a compaction replaced ``before`` with ``after``."""
        gone = {(f.file_name, f.level) for f in before}
        kept = [f for f in self.all_files() if (f.file_name, f.level) not in gone]
        return Levels.of(kept + list(after), self.num_levels)
