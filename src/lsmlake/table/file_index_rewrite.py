"""``CALL sys.rewrite_file_index``: every live data file's file index rebuilt for the table's current
`file-index.*` options and committed as one COMPACT snapshot, as Paimon's RewriteFileIndexProcedure does."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lsmlake.commit.compaction import commit_compaction
from lsmlake.core.schema import TableSchema
from lsmlake.format.file_index.container import INDEX_SUFFIX
from lsmlake.format.file_index.writer import FileIndexBuilder, FileIndexSpec
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.read.context import ReadContext
from lsmlake.read.file_rows import read_all_rows
from lsmlake.scan.split import Split
from lsmlake.schema_change.stats import StatsEvolution
from lsmlake.table.writer import partition_matcher, typed_partition_spec


@dataclass(frozen=True)
class RewriteResult:
    """The COMPACT snapshot published (None: no index changed), the files whose index changed, and the
    files left as they are: written under an older schema that is unreadable or gave an indexed column
    another type."""

    snapshot_id: int | None
    rewritten: int
    older_schema: int


def next_index_name(name: str) -> str:
    """The name of a rewritten index file, as Paimon's ``createNewFileIndexFilePath`` makes it:
    ``x.parquet.index`` -> ``x.parquet-1.index`` -> ``x.parquet-2.index`` ..."""
    dot, dash = name.rfind("."), name.rfind("-")
    if dash != -1 and dash < dot:
        number = name[dash + 1 : dot]
        if number.isdigit():
            return f"{name[: dash + 1]}{int(number) + 1}{INDEX_SUFFIX}"
    return f"{name[:dot]}-1{INDEX_SUFFIX}"


def rewrite_file_index(table: TableHandle, partitions: Sequence[Mapping[str, object]] = ()) -> RewriteResult:
    """Rebuild the file index of every live data file (of the partitions matching any of ``partitions``,
    default all) for the current options; a file whose index would not change is left alone, and with
    no `file-index.*` option the indexes are removed. Deletion vectors are kept: they name the files."""
    spec = FileIndexSpec.of(table.schema, table.options)
    snapshot = table.snapshot_manager.latest()
    if snapshot is None:
        return RewriteResult(None, 0, 0)
    restored = RestoredState.load(table.io, table.paths, snapshot)
    locator = FileLocator(table)
    chosen = _partition_filter(table, partitions)
    columns = tuple(spec.columns) if spec is not None else ()
    ctx = ReadContext(table.io, table.root, table.schema, table.options, columns)
    evolution = StatsEvolution(table.io, table.root, table.schema)
    messages, older = [], 0
    for (partition, bucket), entries in restored.files.items():
        if not chosen(partition):
            continue
        before, after = [], []
        for e in entries:
            file_schema = evolution.file_schema(e.file.schema_id)
            if file_schema is None or not _types_kept(table.schema, file_schema, spec):
                older += 1
                continue
            file_spec = _file_spec(table.schema, file_schema, spec)
            new = _reindexed(ctx, file_spec, locator, e)
            if new is not None:
                before.append(e.file)
                after.append(new)
        if before:
            total = entries[0].total_buckets
            messages.append(
                CommitMessage(
                    partition, bucket, total, compact_before=tuple(before), compact_after=tuple(after)
                )
            )
    if not messages:
        return RewriteResult(None, 0, older)
    sid = commit_compaction(table, messages)
    return RewriteResult(sid, sum(len(m.compact_after) for m in messages), older)


def _file_spec(
    schema: TableSchema, file_schema: TableSchema, spec: FileIndexSpec | None
) -> FileIndexSpec | None:
    """The indexes of a file written under ``file_schema``: the spec's columns by their names there (as
    Paimon names them), those the file lacks left out."""
    if spec is None or file_schema.id == schema.id:
        return spec
    by_id = {f.id: f for f in file_schema.fields}
    columns, types, renamed = {}, {}, {}
    for name, kinds in spec.columns.items():
        then = by_id.get(schema.field(name).id)
        if then is not None:
            columns[then.name], types[then.name], renamed[then.name] = kinds, then.type, name
    return FileIndexSpec(columns, types, spec.threshold, renamed) if columns else None


def _types_kept(schema: TableSchema, file_schema: TableSchema | None, spec: FileIndexSpec | None) -> bool:
    """Whether the file's schema is readable and gives every indexed column it has the current type."""
    if file_schema is None:
        return False
    if spec is None or file_schema.id == schema.id:
        return True
    by_id = {f.id: f for f in file_schema.fields}
    for name in spec.columns:
        now = schema.field(name)
        then = by_id.get(now.id)
        if then is not None and then.type.copy(nullable=True) != now.type.copy(nullable=True):
            return False
    return True


def _partition_filter(table: TableHandle, specs: Sequence[Mapping[str, object]]) -> Callable[[bytes], bool]:
    if not specs:
        return lambda _: True
    default = table.options.partition_default_name
    matchers = [
        partition_matcher(
            table.schema,
            typed_partition_spec(
                table.schema, {k: (None if v == default else v) for k, v in s.items()}, table_name=table.name
            ),
            [],
        )
        for s in specs
    ]
    return lambda partition: any(m(partition) for m in matchers)


def _reindexed(
    ctx: ReadContext, spec: FileIndexSpec | None, locator: FileLocator, e: ManifestEntry
) -> DataFileMeta | None:
    """The file's entry with a freshly built index (a new index file when it is over the threshold), or
    None when the index would not change."""
    f = e.file
    io = ctx.io
    data_path = locator.data_file(e.partition, e.bucket, f)
    directory = posixpath.dirname(data_path)
    indexes = [x for x in f.extra_files if x.endswith(INDEX_SUFFIX)]
    extras = tuple(x for x in f.extra_files if not x.endswith(INDEX_SUFFIX))
    embedded: bytes | None = None
    if spec is not None:
        split = Split(e.partition, (), e.bucket, directory, (f,), (None,), raw_convertible=True)
        builder = FileIndexBuilder(spec)
        names = {column: spec.table_names.get(column, column) for column in spec.columns}
        rows = read_all_rows(ctx, split, 0, list(names.values()), system=False)
        builder.add(rows.rename_columns(list(names)))
        data = builder.encode()
        if len(data) <= spec.threshold:
            embedded = data
        elif indexes and io.read_bytes(posixpath.join(directory, indexes[0])) == data:
            return (
                None
                if f.embedded_index is None and len(indexes) == 1
                else _with(f, (*extras, indexes[0]), None)
            )
        else:
            name = next_index_name(indexes[0]) if indexes else posixpath.basename(data_path) + INDEX_SUFFIX
            io.write_bytes(posixpath.join(directory, name), data)
            extras = (*extras, name)
    new = _with(f, extras, embedded)
    return None if new.extra_files == f.extra_files and new.embedded_index == f.embedded_index else new


def _with(f: DataFileMeta, extras: tuple[str, ...], embedded: bytes | None) -> DataFileMeta:
    return dataclasses.replace(f, extra_files=extras, embedded_index=embedded)
