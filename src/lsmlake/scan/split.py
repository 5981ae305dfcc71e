"""Splits: the frozen, picklable unit of work a scan plans and a reader consumes."""

from __future__ import annotations

from dataclasses import dataclass

from lsmlake.metadata.data_file import DataFileMeta

Section = tuple[tuple[DataFileMeta, ...], ...]
"""One IntervalPartition section: its sorted runs, each a key-ordered tuple of files."""


@dataclass(frozen=True)
class DeletionFile:
    """Where one data file's deletion vector lives: index file path, block offset, length, cardinality."""

    path: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True)
class Split:
    """Files of one (partition, bucket) read together, raw (no merge) or merged section by section.

    ``deletion_files`` is aligned with ``files`` (None where a file has no deletion vector).
    ``sections`` is set for merge splits only: the files grouped into key-disjoint sections of
    sorted runs. ``rule`` says why the split is raw or merged (for ``explain``).
    """

    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    bucket_path: str
    files: tuple[DataFileMeta, ...]
    deletion_files: tuple[DeletionFile | None, ...]
    raw_convertible: bool
    sections: tuple[Section, ...] | None = None
    total_buckets: int = -1
    snapshot_id: int | None = None
    rule: str = ""
    row_selections: tuple[tuple[str, bytes], ...] = ()
    """(data file, serialized roaring bitmap) for files whose file indexes select only some rows for the
    filter: a raw read skips the others (a superset of the matching rows; the filter is still applied)."""

    def __post_init__(self) -> None:
        if len(self.deletion_files) != len(self.files):
            raise ValueError(
                f"split of bucket {self.bucket}: {len(self.deletion_files)} deletion files for "
                f"{len(self.files)} data files"
            )
        if not self.raw_convertible and self.sections is None:
            raise ValueError(f"merge split of bucket {self.bucket} needs its sections")
        if self.row_selections and not self.raw_convertible:
            raise ValueError(f"merge split of bucket {self.bucket}: row selections apply to raw reads only")

    @property
    def row_count(self) -> int:
        """Physical rows in the split's files (deleted and retracted rows included)."""
        return sum(f.row_count for f in self.files)

    @property
    def file_size(self) -> int:
        return sum(f.file_size for f in self.files)

    def merged_row_count(self) -> int | None:
        """Exact live rows when raw and every deletion-vector cardinality is known, else None."""
        if not self.raw_convertible:
            return None
        total = 0
        for f, d in zip(self.files, self.deletion_files, strict=True):
            if d is None:
                total += f.row_count
            elif d.cardinality is None:
                return None
            else:
                total += f.row_count - d.cardinality
        return total
