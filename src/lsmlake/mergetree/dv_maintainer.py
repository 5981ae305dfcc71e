"""The deletion vectors of one bucket: restored from its index file, updated by compaction, written back whole."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lsmlake.core.fileio import FileIO
from lsmlake.core.paths import TablePaths
from lsmlake.metadata.deletion_vector import DeletionVector, read_deletion_vectors, write_deletion_index
from lsmlake.metadata.index_manifest import DELETION_VECTORS_INDEX, IndexFileMeta


@dataclass
class BucketDeletionVectors:
    """Data file name -> deletion vector for one (partition, bucket); ``modified`` once anything changes."""

    vectors: dict[str, DeletionVector] = field(default_factory=dict)
    index_file: IndexFileMeta | None = None
    bitmap64: bool = False
    modified: bool = False

    @staticmethod
    def restore(
        io: FileIO, path: str | None, index_file: IndexFileMeta | None, *, bitmap64: bool
    ) -> BucketDeletionVectors:
        """Load the bucket's DV index file (``path``) as the committed state."""
        if index_file is None or path is None:
            return BucketDeletionVectors(bitmap64=bitmap64)
        vectors = read_deletion_vectors(io.read_bytes(path), index_file.dv_ranges or (), name=path)
        return BucketDeletionVectors(vectors, index_file, bitmap64)

    def get(self, file_name: str) -> DeletionVector | None:
        return self.vectors.get(file_name)

    def keep_mask(self, file_name: str, num_rows: int) -> np.ndarray:
        dv = self.vectors.get(file_name)
        if dv is None or dv.is_empty:
            return np.ones(num_rows, dtype=bool)
        return dv.keep_mask(num_rows)

    def add(self, file_name: str, positions: np.ndarray) -> None:
        """Mark rows of a data file deleted."""
        if len(positions) == 0:
            return
        new = DeletionVector.from_positions(positions)
        old = self.vectors.get(file_name)
        merged = new if old is None else old.union(new)
        if old is None or merged.cardinality != old.cardinality:
            self.vectors[file_name] = merged
            self.modified = True

    def remove(self, file_name: str) -> None:
        """Forget the vector of a file that compaction rewrote (its deleted rows were skipped on read)."""
        if self.vectors.pop(file_name, None) is not None:
            self.modified = True

    def write(
        self, io: FileIO, paths: TablePaths, location: Callable[[str], tuple[str, str | None]] | None = None
    ) -> tuple[IndexFileMeta | None, IndexFileMeta | None]:
        """Write all vectors into one new index file when modified; returns (new file, replaced file).
        ``location`` maps the new file's name to its path and external path (default: `index/`, none)."""
        if not self.modified:
            return None, None
        live = {name: dv for name, dv in self.vectors.items() if not dv.is_empty}
        replaced = self.index_file
        if not live:
            self.index_file, self.modified = None, False
            return None, replaced
        data, ranges = write_deletion_index(live, bitmap64=self.bitmap64)
        name = paths.new_index_file_name()
        path, external = (paths.index_file(name), None) if location is None else location(name)
        io.write_bytes(path, data)
        self.index_file = IndexFileMeta(
            index_type=DELETION_VECTORS_INDEX,
            file_name=name,
            file_size=len(data),
            row_count=len(ranges),
            dv_ranges=tuple(ranges),
            external_path=external,
        )
        self.modified = False
        return self.index_file, replaced
