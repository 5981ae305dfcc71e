"""Split generation policy (Java's MergeTreeSplitGenerator / AppendOnlySplitGenerator), free of I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from lsmlake.mergetree.interval_partition import Bounds, interval_partition
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.scan.split import Section

T = TypeVar("T")

RAW_DV = "raw: no level-0 files and no delete rows; deletion vectors keep one live row per key"
RAW_FIRST_ROW = "raw: no level-0 files and no delete rows; first-row engine keeps one row per key"
RAW_ONE_LEVEL = "raw: all files on one level {level} without delete rows, so no key repeats"
RAW_SINGLE_FILE = "raw: the split holds a single file without delete rows"
RAW_APPEND = "raw: append table"
MERGE_LEVEL0 = "merge: level-0 files overlap other files"
MERGE_DELETE_ROWS = "merge: files hold delete rows that must be dropped"
MERGE_LEVELS = "merge: files on several levels overlap"
MERGE_UNKNOWN_DELETES = "merge: a file has an unknown delete row count (legacy writer)"


@dataclass(frozen=True)
class SplitGroup:
    """Files that form one split, whether they can be read without merging, and why."""

    files: tuple[DataFileMeta, ...]
    raw_convertible: bool
    rule: str
    sections: tuple[Section, ...] | None = None


def pack_for_ordered(items: Sequence[T], weight: Callable[[T], int], target: int) -> list[list[T]]:
    """Greedy order-keeping bin packing (Java's ``BinPacking.packForOrdered``)."""
    bins: list[list[T]] = []
    current: list[T] = []
    current_weight = 0
    for item in items:
        w = weight(item)
        if current and current_weight + w > target:
            bins.append(current)
            current, current_weight = [], 0
        current_weight += w
        current.append(item)
    if current:
        bins.append(current)
    return bins


def without_delete_rows(f: DataFileMeta) -> bool:
    """Java's rule: a file has no delete rows when its count is 0 or unknown (null, legacy files)."""
    return f.delete_row_count is None or f.delete_row_count == 0


def _merge_rule(files: Sequence[DataFileMeta]) -> str:
    if any(f.level == 0 for f in files):
        return MERGE_LEVEL0 if len(files) > 1 else MERGE_DELETE_ROWS
    if not all(without_delete_rows(f) for f in files):
        return MERGE_DELETE_ROWS
    return MERGE_LEVELS


def _as_sections(sections: Sequence[Sequence[Sequence[DataFileMeta]]]) -> tuple[Section, ...]:
    return tuple(tuple(tuple(run) for run in section) for section in sections)


def split_for_batch(
    files: Sequence[DataFileMeta],
    bounds: Bounds[DataFileMeta],
    *,
    target_size: int,
    open_file_cost: int,
    deletion_vectors: bool = False,
    merge_engine: str = "deduplicate",
) -> list[SplitGroup]:
    """Splits of one primary-key bucket, exactly as Java's ``MergeTreeSplitGenerator.splitForBatch``.

    A group Java marks raw is still merged here when one of its files has an unknown (null) delete
    row count: Java's raw read provider refuses such splits and falls back to the merge read.
    """
    if not files:
        return []
    raw = all(f.level != 0 and without_delete_rows(f) for f in files)
    levels = {f.level for f in files}
    if raw and (deletion_vectors or merge_engine == "first-row" or len(levels) == 1):
        if deletion_vectors:
            rule = RAW_DV
        elif merge_engine == "first-row":
            rule = RAW_FIRST_ROW
        else:
            rule = RAW_ONE_LEVEL.format(level=next(iter(levels)))
        bins = pack_for_ordered(files, lambda f: max(f.file_size, open_file_cost), target_size)
        return [_raw_or_fallback(tuple(b), rule, bounds) for b in bins]

    sections = interval_partition(files, bounds)
    packed = pack_for_ordered(
        range(len(sections)),
        lambda i: max(sum(f.file_size for run in sections[i] for f in run), open_file_cost),
        target_size,
    )
    out = []
    for group in packed:
        flat = tuple(f for i in group for run in sections[i] for f in run)
        if len(flat) == 1 and without_delete_rows(flat[0]):
            out.append(_raw_or_fallback(flat, RAW_SINGLE_FILE, bounds))
        else:
            out.append(SplitGroup(flat, False, _merge_rule(flat), _as_sections([sections[i] for i in group])))
    return out


def _raw_or_fallback(files: tuple[DataFileMeta, ...], rule: str, bounds: Bounds[DataFileMeta]) -> SplitGroup:
    if all(f.delete_row_count is not None for f in files):
        return SplitGroup(files, True, rule)
    return SplitGroup(files, False, MERGE_UNKNOWN_DELETES, _as_sections(interval_partition(files, bounds)))


def split_for_append(
    files: Sequence[DataFileMeta], *, target_size: int, open_file_cost: int
) -> list[SplitGroup]:
    """Splits of one append-table bucket: files by min sequence number, bin-packed, all raw."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    bins = pack_for_ordered(ordered, lambda f: max(f.file_size, open_file_cost), target_size)
    return [SplitGroup(tuple(b), True, RAW_APPEND) for b in bins]
