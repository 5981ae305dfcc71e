"""Rebasing an APPEND that lost to another writer of its buckets: the new level-0 (and input changelog)
files of those buckets are rewritten with sequence numbers above the bucket's current maximum, so
that commit order stays sequence order, and the commit is retried instead of refused."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.external_paths import located_path
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.paths import TablePaths, partition_directory
from lsmlake.core.schema import TableSchema
from lsmlake.errors import CommitConflictError
from lsmlake.format.avro_data import read_avro
from lsmlake.format.changelog_writer import changelog_options
from lsmlake.format.data_file_writer import FILE_SOURCE_APPEND, DataFileWriter
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, kv_arrow_schema
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta

BucketId = tuple[bytes, int]
REBASE_HEADROOM = 1 << 20
"""A rebased bucket's new files start this far above the bucket's top sequence number, not right after
it: writers that lose a race together rebase together, and without the headroom each commit of one of
them pushes the others' files below the top again, so a writer rewrites its files on every attempt.
With it, commits of writers still numbering from an older base land below the rebased files, and the
next attempt only re-publishes. Sequence numbers only order a bucket's rows; gaps mean nothing (int64
leaves room for 2**43 rebases)."""
KEPT_ROWS_BYTES = 64 * 1024 * 1024
"""A rebase keeps the rows of the writer's files it read, up to this many bytes in all, for the next one."""
# A data file name: <prefix><writer uuid>-<counter>.<extension>; the prefix is kept on a rewrite
# (postpone-bucket files carry their writer in it).
_NAME = re.compile(r"^(.*)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+\.(\w+)$")


def file_prefix(name: str) -> str:
    """The prefix a data file was written with (everything before its writer's uuid)."""
    match = _NAME.match(name)
    if match is None:
        raise CommitConflictError(f"cannot rebase {name}: not a data file name this library writes")
    return match.group(1)


def read_whole_file(io: FileIO, path: str, size: int | None = None) -> pa.Table:
    """Every column of one data file, as stored (system columns included); ``size``: its size in bytes,
    when known (a small file is then one GET)."""
    if path.endswith(".avro"):
        return read_avro(io, path, None)
    with io.open_input_file(path, size) as source:
        if path.endswith(".orc"):
            return orc.ORCFile(source).read()
        return pq.read_table(source)


def shift_sequence(rows: pa.Table, shift: int) -> pa.Table:
    """``rows`` with ``shift`` added to every ``_SEQUENCE_NUMBER``; the other columns are the same arrays."""
    i = rows.schema.get_field_index(SEQUENCE_NUMBER)
    shifted = pc.add(rows.column(i), pa.scalar(shift, pa.int64()))
    return rows.set_column(i, rows.schema.field(i), shifted)


@dataclass(frozen=True)
class FileRebaser:
    """Rewrites the level-0 files of one table with shifted sequence numbers."""

    io: FileIO
    paths: TablePaths
    schema: TableSchema
    options: CoreOptions

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        ptypes = [self.schema.field(k).type for k in self.schema.partition_keys]
        values = tuple(deserialize_row(partition, ptypes)) if ptypes else ()
        return self.paths.bucket_dir(partition_directory(self.schema, self.options, values), bucket)

    def read(self, directory: str, meta: DataFileMeta) -> pa.Table:
        """Every column of ``meta`` (a file of the bucket in ``directory``), as stored."""
        if meta.schema_id != self.schema.id:
            raise CommitConflictError(
                f"cannot rebase {meta.file_name}: written with schema {meta.schema_id} "
                f"(the commit's is {self.schema.id})"
            )
        rows = read_whole_file(self.io, self.path_of(directory, meta), meta.file_size)
        if meta.file_name.endswith(".avro"):  # Avro's types (int for TINYINT, ...) back to the file layout's
            rows = rows.cast(kv_arrow_schema(self.schema))
        return rows

    def path_of(self, directory: str, meta: DataFileMeta) -> str:
        """Where ``meta`` (a file of the bucket in ``directory``) is: under an external root or ``directory``."""
        return located_path(directory, meta.file_name, meta.external_path, local=self.io.local)

    def rewrite(
        self, directory: str, meta: DataFileMeta, shift: int, *, changelog: bool, rows: pa.Table | None = None
    ) -> list[DataFileMeta]:
        """``meta`` (its ``rows``, when already read) rewritten under a new name with its sequence
        numbers raised by ``shift``."""
        rows = shift_sequence(self.read(directory, meta) if rows is None else rows, shift)
        return self.write_like(directory, meta, rows, changelog=changelog)

    def write_like(
        self, directory: str, meta: DataFileMeta, rows: pa.Table, *, changelog: bool
    ) -> list[DataFileMeta]:
        """``rows`` (sorted, file layout) written into ``directory`` as ``meta`` was: same name prefix,
        format, level and file source, a data or an input changelog file."""
        options = changelog_options(self.options) if changelog else self.options
        fmt = posixpath.splitext(meta.file_name)[1].lstrip(".")
        writer = DataFileWriter(
            self.io, self.paths, self.schema, options, directory, file_prefix=file_prefix(meta.file_name)
        )
        if fmt != writer.settings(meta.level).format:
            # as written: a postpone-bucket file is avro in a parquet table (whatever its level's format says)
            per_level = CoreOptions.FILE_FORMAT_PER_LEVEL.key  # in either of its forms
            raw = {k: v for k, v in options.raw.items() if not (k == per_level or k.startswith(per_level + "."))}
            options = CoreOptions.of({**raw, CoreOptions.FILE_FORMAT.key: fmt}, primary_key_table=True)
            writer = DataFileWriter(
                self.io, self.paths, self.schema, options, directory, file_prefix=file_prefix(meta.file_name)
            )
        return writer.write(rows, level=meta.level, file_source=meta.file_source or FILE_SOURCE_APPEND)


def lowest_sequences(messages: Sequence[CommitMessage]) -> dict[BucketId, int]:
    """The lowest sequence number of each bucket's new (and input changelog) files."""
    out: dict[BucketId, int] = {}
    for m in messages:
        for f in (*m.new_files, *m.changelog_files):
            key = (m.partition, m.bucket)
            out[key] = min(out.get(key, f.min_sequence_number), f.min_sequence_number)
    return out


@dataclass
class AppendRebase:
    """The APPEND part of one write, rebased as often as other writers get ahead of it.

    ``current`` is what the next attempt publishes; each rewrite starts from the original files (the
    writer's), shifting a bucket as a whole so the order of its rows is kept:
    ``new = old - lowest + top + 1 + REBASE_HEADROOM`` where ``top`` is the bucket's highest sequence
    number now."""

    rebaser: FileRebaser
    originals: list[CommitMessage]
    current: list[CommitMessage] = field(init=False)
    shifts: dict[BucketId, int] = field(default_factory=dict)
    copies: dict[BucketId, list[str]] = field(default_factory=dict)
    rewrites: int = 0  # how many times a bucket was rewritten above another writer's commits
    stale: list[str] = field(default_factory=list)  # copies an earlier rebase wrote, to delete at the end
    _rows: dict[str, pa.Table] = field(default_factory=dict)  # original files' rows, kept for the next rebase
    _rows_bytes: int = 0

    def __post_init__(self) -> None:
        self.current = list(self.originals)
        self.lowest = lowest_sequences(self.originals)

    @property
    def rebased_buckets(self) -> set[BucketId]:
        return set(self.shifts)

    def above(self, tops: Mapping[BucketId, int]) -> list[CommitMessage]:
        """The messages with every bucket's new files above ``tops`` (rewritten only where needed)."""
        for key, low in self.lowest.items():
            top = tops.get(key)
            if top is None or low + self.shifts.get(key, 0) > top:
                continue
            self._shift_bucket(key, top + 1 - low + REBASE_HEADROOM)
        return self.current

    def _shift_bucket(self, key: BucketId, shift: int) -> None:
        directory = self.rebaser.bucket_dir(*key)
        written: list[str] = []
        try:
            for i, m in enumerate(self.originals):
                if (m.partition, m.bucket) != key:
                    continue
                new_files = self._rewrite_all(directory, m.new_files, shift, written, changelog=False)
                changelog = self._rewrite_all(directory, m.changelog_files, shift, written, changelog=True)
                self.current[i] = replace(m, new_files=new_files, changelog_files=changelog)
        except BaseException:
            self._delete(written)
            raise
        self.stale += self.copies.pop(key, [])  # deleted with the commit's other leftovers, after the race
        self.copies[key] = written
        self.shifts[key] = shift
        self.rewrites += 1

    def _rewrite_all(
        self,
        directory: str,
        files: Sequence[DataFileMeta],
        shift: int,
        written: list[str],
        *,
        changelog: bool,
    ) -> tuple[DataFileMeta, ...]:
        out: list[DataFileMeta] = []
        for f in files:
            metas = self.rebaser.rewrite(
                directory, f, shift, changelog=changelog, rows=self._original(directory, f)
            )
            written += [self.rebaser.path_of(directory, m) for m in metas]
            out += metas
        return tuple(out)

    def _original(self, directory: str, meta: DataFileMeta) -> pa.Table:
        """The rows of one of the writer's files, read once: a commit that loses again rebases it again."""
        rows = self._rows.get(meta.file_name)
        if rows is None:
            rows = self.rebaser.read(directory, meta)
            if self._rows_bytes + rows.nbytes <= KEPT_ROWS_BYTES:
                self._rows[meta.file_name] = rows
                self._rows_bytes += rows.nbytes
        return rows

    def superseded(self) -> list[str]:
        """Paths of the original files of the rebased buckets (no snapshot references them)."""
        out = []
        for m in self.originals:
            if (m.partition, m.bucket) in self.shifts:
                directory = self.rebaser.bucket_dir(m.partition, m.bucket)
                out += [self.rebaser.path_of(directory, f) for f in (*m.new_files, *m.changelog_files)]
        return out

    def discard_copies(self) -> list[str]:
        """Every rewritten file, for the caller to delete (the commit did not publish them)."""
        out = [p for paths in self.copies.values() for p in paths] + self.stale
        self.copies.clear()
        self.stale = []
        return out

    def _delete(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.rebaser.io.delete_file(path)
