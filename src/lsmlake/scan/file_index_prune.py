"""Planning's file-index step: drop the data files whose indexes prove no live row can match the filter."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence

from pyroaring import BitMap

from lsmlake.core.external_paths import located_path
from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import split_location
from lsmlake.core.schema import TableSchema
from lsmlake.expr.tree import Predicate
from lsmlake.format.file_index.container import INDEX_SUFFIX, IndexBlob, read_container
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.deletion_vector import read_deletion_vector
from lsmlake.scan.file_index_eval import candidate_rows, parse_indexes
from lsmlake.scan.split import DeletionFile
from lsmlake.schema_change.stats import StatsEvolution


def file_index_blobs(io: FileIO, f: DataFileMeta, bucket_path: str) -> tuple[list[IndexBlob], str] | None:
    """A data file's index blobs (embedded in its manifest entry, or its `.index` file) and where they
    came from; None when it has no file index."""
    if f.embedded_index is not None:
        source = f"embedded file index of {f.file_name}"
        return read_container(f.embedded_index, source=source), source
    names = [x for x in f.extra_files if x.endswith(INDEX_SUFFIX)]
    if not names:
        return None
    # `_EXTRA_FILES` sit next to the data file: under its external root when it has one
    base = posixpath.dirname(located_path(bucket_path, f.file_name, f.external_path, local=io.local))
    path = posixpath.join(base, names[0])
    return read_container(io.read_bytes(path), source=path), path


def columns_unchanged(schema: TableSchema, file_schema: TableSchema | None, names: Iterable[str]) -> bool:
    """Whether every column of ``names`` has the same name and type in ``file_schema`` (matched by field
    id) as in ``schema``: then the file indexes written under ``file_schema`` answer for it."""
    if file_schema is None:
        return False
    if file_schema.id == schema.id:
        return True
    by_id = {f.id: f for f in file_schema.fields}
    for name in names:
        now = schema.field(name)
        then = by_id.get(now.id)
        if then is None or then.name != name or then.type.copy(nullable=True) != now.type.copy(nullable=True):
            return False
    return True


class FileIndexPruner:
    """Per-scan state: the filter, the schema's column types, and the DV index files read so far."""

    def __init__(
        self,
        io: FileIO,
        schema: TableSchema,
        predicate: Predicate | None,
        evolution: StatsEvolution | None = None,
    ) -> None:
        self.io, self.schema, self.predicate = io, schema, predicate
        self.evolution = evolution
        """Where the schemas of older files come from (without it, their indexes are not used)."""
        self.types = {f.name: f.type for f in schema.fields}
        self._dv_files: dict[str, bytes] = {}
        self.pruned: list[tuple[str, str]] = []
        """(data file, the index types that pruned it)."""
        self.selections: dict[str, bytes] = {}
        """Serialized candidate rows of the files kept with fewer candidates than rows."""
        self.selected: list[tuple[str, int, int]] = []
        """(data file, live candidate rows, live rows) of each file in ``selections``."""

    def _blobs(self, f: DataFileMeta, bucket_path: str) -> tuple[list[IndexBlob], str] | None:
        return file_index_blobs(self.io, f, bucket_path)

    def _deleted(self, dv: DeletionFile | None) -> BitMap:
        if dv is None:
            return BitMap()
        data = self._dv_files.get(dv.path)
        if data is None:
            # a DV index file under an external root is named by its URI (the roots are on the table's storage)
            found = split_location(dv.path, local=self.io.local)
            path = found[1] if isinstance(found, tuple) else dv.path
            data = self._dv_files[dv.path] = self.io.read_bytes(path)
        return BitMap(read_deletion_vector(data, dv.offset, dv.length, name=dv.path).positions)

    def candidates(self, f: DataFileMeta, bucket_path: str) -> tuple[BitMap, list[IndexBlob]] | None:
        """The rows of ``f`` its indexes say may satisfy the filter (a superset of those that do) and the
        blobs that said so; None when they cannot tell (no index, or a file of an older schema in which a
        column of the filter had another name or type)."""
        if self.predicate is None:
            return None
        if f.schema_id != self.schema.id:  # an older file: usable while the filter's columns are unchanged
            older = self.evolution.file_schema(f.schema_id) if self.evolution is not None else None
            if not columns_unchanged(self.schema, older, self.predicate.fields()):
                return None
        found = self._blobs(f, bucket_path)
        if found is None:
            return None
        blobs, source = found
        rows = candidate_rows(self.predicate, parse_indexes(blobs, self.types, f.row_count, source=source))
        return None if rows is None else (rows, blobs)

    def may_match(self, f: DataFileMeta, bucket_path: str, dv: DeletionFile | None) -> bool:
        """False when the file's indexes leave no live candidate row. A file kept with fewer candidate
        rows than it has gets them in ``selections`` (a row mask for reading it raw)."""
        found = self.candidates(f, bucket_path)
        if found is None:
            return True
        rows, blobs = found
        deleted = self._deleted(dv)
        if rows and not rows.issubset(deleted):
            if len(rows) < f.row_count:
                self.selections[f.file_name] = rows.serialize()
                self.selected.append((f.file_name, len(rows - deleted), f.row_count - len(deleted)))
            return True
        assert self.predicate is not None
        kinds = sorted({b.index_type for b in blobs if b.column in self.predicate.fields()})
        self.pruned.append((f.file_name, ",".join(kinds)))
        return False

    def filter(
        self, files: Sequence[DataFileMeta], bucket_path: str, dvs: Mapping[str, DeletionFile], *, pk: bool
    ) -> list[DataFileMeta]:
        """The files that may match; on primary-key tables only files read alone (level > 0) are dropped."""
        return [
            f for f in files if (pk and f.level == 0) or self.may_match(f, bucket_path, dvs.get(f.file_name))
        ]
