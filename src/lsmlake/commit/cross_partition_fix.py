"""Rebasing a cross-partition deduplicate upsert onto another writer that wrote some of its keys.

The upsert placed each key by where it lived in its base snapshot. For a key the other writer also
wrote, the serial order (the other writer's commit, then this one) differs in one place only: where the
key lives before this upsert. So wherever the key is live now (``here``), unless this upsert has rows of
the key in that bucket already (its delete or update there supersedes the other writer's row), a DELETE
of the key is added to ``here``, ordered before this upsert's own rows of that bucket: the key ends up
live exactly where this upsert puts it, as if it had run after the other writer. Other merge engines
(which keep a key in its first partition) and user sequence fields are refused instead.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.commit.key_overlap import KeyReader, KeysSinceBase
from lsmlake.commit.rebase import FileRebaser, read_whole_file
from lsmlake.format.changelog_writer import changelog_options
from lsmlake.format.data_file_writer import DataFileWriter
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, RowKind, kv_arrow_schema
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.snapshot import Snapshot

BucketId = tuple[bytes, int]
WHERE = "__where"  # a bucket's index in a list of (partition, bucket)


def _matching(rows: pa.Table, keys: pa.Table, names: list[str], *, anti: bool = False) -> pa.Table:
    """The rows whose ``names`` columns are (``anti``: are not) a row of ``keys``; the join sees only
    the key columns and a row number, so any value column type is fine."""
    numbered = rows.select(names).append_column("__row", pa.array(np.arange(rows.num_rows)))
    kind = "left anti" if anti else "left semi"
    hits = numbered.join(keys.select(names).cast(numbered.select(names).schema), names, join_type=kind)
    return rows.take(pa.array(np.sort(hits.column("__row").to_numpy())))


def _last_per_group(rows: pa.Table, group: list[str]) -> pa.Table:
    """Per group of ``group`` columns, the row with the highest sequence number."""
    order = pc.sort_indices(rows, [(c, "ascending") for c in [*group, SEQUENCE_NUMBER]])
    rows = rows.take(order)
    n = rows.num_rows
    last = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for c in group:
            col = rows.column(c).combine_chunks()
            same &= pc.equal(col.slice(0, n - 1), col.slice(1)).to_numpy(zero_copy_only=False)
        last[:-1] = ~same
    return rows.filter(pa.array(last))


@dataclass
class CrossPartitionFix:
    """The APPEND messages of one cross-partition upsert, with the deletes serial order needs."""

    rebaser: FileRebaser
    keys: KeysSinceBase
    originals: list[CommitMessage]
    current: list[CommitMessage] = field(init=False)
    written: list[str] = field(default_factory=list)
    targets: set[BucketId] = field(default_factory=set)  # buckets given deletes and no rows of this write
    basis: tuple[int, ...] | None = None  # the other writers' snapshots ``current`` answers
    deleted_keys: int = 0

    def __post_init__(self) -> None:
        self.current = list(self.originals)
        self.reader: KeyReader = self.keys.reader

    def messages_for(self, latest: Snapshot, base: int | None) -> list[CommitMessage]:
        """The messages to publish on top of ``latest`` (raises CommitConflictError if it cannot)."""
        shared, theirs = self.keys.shared(latest, base, self.originals)
        if shared is None:
            if self.basis is not None:
                self.discard()
                self.current, self.basis, self.targets, self.deleted_keys = (
                    list(self.originals),
                    None,
                    set(),
                    0,
                )
            return self.current
        options = self.rebaser.options
        if options.merge_engine != "deduplicate" or options.sequence_fields:
            self.keys.refuse(shared, base)
        if self.basis == theirs:
            return self.current
        self.discard()
        self.current = self._with_deletes(shared, latest)
        self.basis = theirs
        return self.current

    def _with_deletes(self, shared: pa.Table, latest: Snapshot) -> list[CommitMessage]:
        names = self.reader.names
        touched = self.keys.touched_since_base
        entries = live_entries(
            self.rebaser.io,
            self.rebaser.paths,
            latest,
            entry_filter=lambda e: (e.partition, e.bucket) in touched,
        )
        buckets = sorted({(e.partition, e.bucket) for e in entries})
        at = {b: i for i, b in enumerate(buckets)}
        parts = []
        for e in entries:
            path = self.rebaser.path_of(self.rebaser.bucket_dir(e.partition, e.bucket), e.file)
            rows = read_whole_file(self.rebaser.io, path)
            rows = _matching(rows, shared, names)
            if rows.num_rows:
                parts.append(
                    rows.append_column(
                        WHERE, pa.array(np.full(rows.num_rows, at[(e.partition, e.bucket)], np.int32))
                    )
                )
        if not parts:
            self.targets, self.deleted_keys = set(), 0
            return list(self.originals)
        last = _last_per_group(pa.concat_tables(parts, promote_options="permissive"), [*names, WHERE])
        kinds = last.column(VALUE_KIND).to_numpy(zero_copy_only=False)
        live = last.filter(pa.array((kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)))
        mine = self._my_keys_by_bucket(at)
        if mine is not None and live.num_rows:
            live = _matching(live, mine, [*names, WHERE], anti=True)
        return self._add_deletes(live, buckets)

    def _my_keys_by_bucket(self, at: dict[BucketId, int]) -> pa.Table | None:
        parts = []
        for m in self.originals:
            where = at.get((m.partition, m.bucket))
            if where is None:
                continue
            keys = self.reader.distinct((m.partition, m.bucket, f) for f in m.new_files)
            if keys is not None:
                parts.append(keys.append_column(WHERE, pa.array(np.full(keys.num_rows, where, np.int32))))
        return pa.concat_tables(parts) if parts else None

    def _add_deletes(self, live: pa.Table, buckets: list[BucketId]) -> list[CommitMessage]:
        out = list(self.originals)
        self.targets, self.deleted_keys = set(), live.num_rows
        if not live.num_rows:
            return out
        where = live.column(WHERE).to_numpy(zero_copy_only=False)
        live = live.drop_columns([WHERE])
        kind = pa.array(np.full(live.num_rows, int(RowKind.DELETE), np.int8))
        live = live.set_column(live.schema.get_field_index(VALUE_KIND), live.schema.field(VALUE_KIND), kind)
        totals = {m.partition: m.total_buckets for m in self.originals}
        for w in np.unique(where).tolist():
            key = buckets[w]
            rows = live.filter(pa.array(where == w)).sort_by([(n, "ascending") for n in self.reader.names])
            index = next((i for i, m in enumerate(out) if (m.partition, m.bucket) == key), None)
            own = [f.min_sequence_number for f in out[index].new_files] if index is not None else []
            # before this write's own rows of the bucket; the rebase lifts them all above its maximum
            first = min(own) - rows.num_rows if own else 0
            if not own:
                self.targets.add(key)
            sequence = pa.array(np.arange(first, first + rows.num_rows, dtype=np.int64))
            rows = rows.set_column(rows.schema.get_field_index(SEQUENCE_NUMBER), SEQUENCE_NUMBER, sequence)
            files, changelog = self._write(key, rows)
            if index is None:
                out.append(
                    CommitMessage(
                        key[0], key[1], totals.get(key[0], -1), new_files=files, changelog_files=changelog
                    )
                )
            else:
                m = out[index]
                out[index] = replace(
                    m, new_files=(*files, *m.new_files), changelog_files=(*changelog, *m.changelog_files)
                )
        return out

    def _write(
        self, key: BucketId, rows: pa.Table
    ) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]:
        directory = self.rebaser.bucket_dir(*key)
        io, paths, schema, options = (
            self.rebaser.io,
            self.rebaser.paths,
            self.rebaser.schema,
            self.rebaser.options,
        )
        layout = kv_arrow_schema(schema)
        rows = rows.select(layout.names).cast(layout)
        files = DataFileWriter(io, paths, schema, options, directory).write(rows, level=0)
        changelog: list[DataFileMeta] = []
        if options.changelog_producer == "input":  # the deletes are input, as the router's own are
            changelog = DataFileWriter(io, paths, schema, changelog_options(options), directory).write(
                rows, level=0
            )
        self.written += [self.rebaser.path_of(directory, f) for f in (*files, *changelog)]
        return tuple(files), tuple(changelog)

    def superseded(self, published: Sequence[CommitMessage]) -> list[str]:
        """Files this object wrote that ``published`` does not reference."""
        names = {f.file_name for m in published for f in (*m.new_files, *m.changelog_files)}
        return [p for p in self.written if posixpath.basename(p) not in names]

    def discard(self) -> None:
        for path in self.written:
            self.rebaser.io.delete_file(path)
        self.written = []
