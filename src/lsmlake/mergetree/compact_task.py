"""How to carry out one compaction unit: which sections merge, which files move up unchanged (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from lsmlake.core.types import DataType
from lsmlake.mergetree.compact_strategy import CompactUnit
from lsmlake.mergetree.interval_partition import partition_files
from lsmlake.metadata.data_file import DataFileMeta

Section = list[list[DataFileMeta]]


class UpgradeKind(Enum):
    """What moving one file to the output level costs."""

    RELABEL = "relabel"  # metadata only: same file, new level
    LOOKUP_RELABEL = "lookup+relabel"  # read its keys to mark older rows deleted, keep the file
    REWRITE = "rewrite"  # read and write it again (drops its delete rows)


@dataclass(frozen=True)
class Rewrite:
    """Merge these sections into new files at the output level."""

    sections: tuple[tuple[tuple[DataFileMeta, ...], ...], ...]

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for section in self.sections for run in section for f in run]


@dataclass(frozen=True)
class Upgrade:
    """Move one file to the output level."""

    file: DataFileMeta
    kind: UpgradeKind


Step = Rewrite | Upgrade


def may_contain_deletes(f: DataFileMeta) -> bool:
    return f.delete_row_count is None or f.delete_row_count > 0


@dataclass(frozen=True)
class TaskPlanner:
    """Paimon's MergeTreeCompactTask decisions, plus the lookup rewriter's upgrade strategy."""

    key_types: tuple[DataType, ...]
    max_level: int
    compaction_file_size: int
    lookup: bool  # deletion vectors (or another lookup mode) are on
    deduplicate_without_sequence_field: bool
    expired: Callable[[DataFileMeta], bool] | None = None
    """Whether a file holds rows record-level expiry drops: such a file is rewritten, never moved up."""
    level_format: Callable[[int], str] | None = None
    """The format of files written for a level (``file.format.per.level``): a lookup compaction rewrites a
    level-0 file instead of moving it to a level of another format (Paimon's lookup rewriter)."""
    force_rewrite: bool = False
    """``compaction.force-rewrite-all-files``: a file that would move up (or stay) is rewritten on its own."""

    def plan(self, unit: CompactUnit) -> list[Step]:
        if unit.file_rewrite:
            return [Rewrite((((f,),),)) for f in unit.files]
        steps: list[Step] = []
        candidate: list[Section] = []
        for section in partition_files(list(unit.files), self.key_types):
            if len(section) > 1:
                candidate.append(section)
                continue
            for f in section[0]:
                if f.file_size < self.compaction_file_size:
                    candidate.append([[f]])
                else:
                    self._flush(candidate, unit.output_level, steps)
                    steps.extend(self._upgrade(f, unit.output_level))
        self._flush(candidate, unit.output_level, steps)
        return steps

    def _flush(self, candidate: list[Section], output_level: int, steps: list[Step]) -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for f in candidate[0][0]:
                steps.extend(self._upgrade(f, output_level))
        else:
            steps.append(Rewrite(tuple(tuple(tuple(run) for run in s) for s in candidate)))
        candidate.clear()

    def _upgrade(self, f: DataFileMeta, output_level: int) -> list[Step]:
        if (
            (output_level == self.max_level and may_contain_deletes(f))
            or self.force_rewrite
            or (self.expired is not None and self.expired(f))
        ):
            return [Rewrite((((f,),),))]
        kind = self.upgrade_kind(f, output_level)
        if kind is UpgradeKind.REWRITE:
            return [Rewrite((((f,),),))]
        if kind is UpgradeKind.RELABEL and f.level == output_level:
            return []
        return [Upgrade(f, kind)]

    def upgrade_kind(self, f: DataFileMeta, output_level: int) -> UpgradeKind:
        if not self.lookup or f.level != 0:
            return UpgradeKind.RELABEL
        if self.level_format is not None and self.level_format(0) != self.level_format(output_level):
            return UpgradeKind.REWRITE
        if may_contain_deletes(f):
            return UpgradeKind.REWRITE  # deletes must not reach levels >= 1
        if output_level == self.max_level or self.deduplicate_without_sequence_field:
            return UpgradeKind.LOOKUP_RELABEL
        return UpgradeKind.REWRITE


def rewrite_needs_lookup(files: Sequence[DataFileMeta], output_level: int, *, lookup: bool) -> bool:
    """A rewrite looks keys up in higher levels when it brings level-0 rows to a non-zero level."""
    return lookup and output_level != 0 and any(f.level == 0 for f in files)
