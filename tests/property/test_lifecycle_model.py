"""Stateful model test of the table lifecycle: writes and deletes on the main table and on branches, tags,
branches created (from a tag or empty), renamed, deleted and fast-forwarded, rollback to a tag, ALTER of the
bucket count, rescale (the whole table or one partition) and consumers (reset, cleared, expired after a
commit once their file is older than `consumer.expiration-time`), against a model that knows each
branch's rows, each partition's bucket count (writes into a partition of another count are refused, as in
Paimon) and which tags, branches and consumers exist."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import lsmlake
from lsmlake.errors import CommitConflictError, InvalidPartitionSpecError, NoSuchSnapshotError
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.consumers import consumer_path, read_consumers
from lsmlake.metadata.restore import RestoredState
from lsmlake.schema_change import set_option
from lsmlake.table import Table

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int32(), nullable=False),
        ("v", pa.int64()),
    ]
)
PARTS = ("a", "b")
ROWS = st.lists(
    st.tuples(st.sampled_from(PARTS), st.integers(0, 9), st.integers(-99, 99)), min_size=1, max_size=8
)
Rows = dict[tuple[str, int], int]


@dataclass
class TagModel:
    sid: int
    rows: Rows
    counts: dict[str, int]
    bucket: int  # of the tagged snapshot's schema


@dataclass
class Ref:
    """The model of one branch (main included)."""

    rows: Rows = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # partition -> the bucket count of its files
    bucket: int = 2  # the branch's schema
    commit_bucket: int = 2  # the schema of its latest snapshot
    first_sid: int = 1
    tags: dict[str, TagModel] = field(default_factory=dict)  # a branch's own tags (its source tag)


class Lifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="lsmlake-lifecycle-")
        self.catalog = lsmlake.Catalog(self.root)
        self.catalog.create_database("db")
        self.table = self.catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["dt", "id"],
            partition_keys=["dt"],
            # no compaction of its own: a full one could leave a partition of deletes without files
            options={
                "bucket": "2",
                "num-sorted-run.compaction-trigger": "100",
                "consumer.expiration-time": "1 h",
            },
        )
        self.refs: dict[str, Ref] = {"main": Ref()}
        self.tags: dict[str, TagModel] = {}
        self.consumers: dict[str, int] = {}
        self.aged: set[str] = set()  # consumers whose file was last written two hours ago
        self.names = 0

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _open(self, ref: str) -> Table:
        t = self.catalog.get_table("db.t" if ref == "main" else f"db.t$branch_{ref}")
        assert isinstance(t, Table)
        return t

    def _latest_sid(self) -> int | None:
        return self._open("main").snapshot_manager.latest_id()

    def _fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    # ---- data ----

    def _commit_rows(self, ref: str, rows: list[tuple[str, int, int]], *, delete: bool) -> None:
        m = self.refs[ref]
        wrong = {p for p, _, _ in rows if m.counts.get(p, m.bucket) != m.bucket}
        data = pa.table(
            {
                "dt": [r[0] for r in rows],
                "id": pa.array([r[1] for r in rows], pa.int32()),
                "v": [r[2] for r in rows],
            },
            schema=SCHEMA,
        )
        t = self._open(ref)
        try:
            t.delete(data.select(["dt", "id"])) if delete else t.write(data)
        except CommitConflictError as e:
            assert wrong, f"refused a write into partitions of the table's count: {e}"
            return
        assert not wrong, f"wrote into partitions {wrong} of another bucket count than {m.bucket}"
        for p, i, v in rows:
            if delete:
                m.rows.pop((p, i), None)
            else:
                m.rows[(p, i)] = v
            m.counts[p] = m.bucket
        m.commit_bucket = m.bucket
        if ref == "main":
            self._after_main_commit()

    def _after_main_commit(self) -> None:
        """A writer's commit on main expires the consumers older than `consumer.expiration-time`."""
        for c in self.aged:
            self.consumers.pop(c, None)
        self.aged.clear()

    @rule(data=st.data(), rows=ROWS, delete=st.booleans())
    def write(self, data: st.DataObject, rows: list[tuple[str, int, int]], delete: bool) -> None:
        ref = data.draw(st.sampled_from(sorted(self.refs)))
        self._commit_rows(ref, rows, delete=delete)

    # ---- tags and branches ----

    @precondition(lambda self: self.refs["main"].counts and len(self.tags) < 4)
    @rule()
    def create_tag(self) -> None:
        name = self._fresh("t")
        self._open("main").create_tag(name)
        m = self.refs["main"]
        sid = self._latest_sid()
        assert sid is not None
        self.tags[name] = TagModel(sid, dict(m.rows), dict(m.counts), m.commit_bucket)

    @precondition(lambda self: len(self.refs) < 4)
    @rule(data=st.data(), from_tag=st.booleans())
    def create_branch(self, data: st.DataObject, from_tag: bool) -> None:
        name = self._fresh("b")
        main = self._open("main")
        if from_tag and self.tags:
            tag = data.draw(st.sampled_from(sorted(self.tags)))
            main.create_branch(name, tag=tag)
            t = self.tags[tag]
            self.refs[name] = Ref(dict(t.rows), dict(t.counts), t.bucket, t.bucket, t.sid, {tag: t})
        else:
            main.create_branch(name)
            bucket = self.refs["main"].bucket
            self.refs[name] = Ref(bucket=bucket, commit_bucket=bucket)

    @precondition(lambda self: len(self.refs) > 1)
    @rule(data=st.data())
    def rename_branch(self, data: st.DataObject) -> None:
        old = data.draw(st.sampled_from(sorted(set(self.refs) - {"main"})))
        new = self._fresh("r")
        self._open("main").rename_branch(old, new)
        self.refs[new] = self.refs.pop(old)

    @precondition(lambda self: len(self.refs) > 1)
    @rule(data=st.data())
    def delete_branch(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(set(self.refs) - {"main"})))
        self._open("main").delete_branch(name)
        del self.refs[name]

    @precondition(lambda self: len(self.refs) > 1)
    @rule(data=st.data())
    def fast_forward(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(set(self.refs) - {"main"})))
        b = self.refs[name]
        branch_has_snapshot = self._open(name).snapshot_manager.latest_id() is not None
        try:
            self._open("main").fast_forward(name)
        except NoSuchSnapshotError:
            assert not branch_has_snapshot
            return
        assert branch_has_snapshot
        self.refs["main"] = replace(b, rows=dict(b.rows), counts=dict(b.counts), tags={})
        # main's tags on the snapshots the branch replaced go; the branch's own (its source tag) come in
        self.tags = {n: t for n, t in self.tags.items() if t.sid < b.first_sid} | b.tags

    @precondition(lambda self: bool(self.tags))
    @rule(data=st.data())
    def rollback_to_tag(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.tags)))
        t = self.tags[name]
        self._open("main").rollback_to(tag=name)
        m = self.refs["main"]
        m.rows, m.counts, m.commit_bucket = dict(t.rows), dict(t.counts), t.bucket
        self.tags = {n: x for n, x in self.tags.items() if x.sid <= t.sid}

    # ---- bucket count ----

    @rule(n=st.integers(1, 4))
    def alter_bucket(self, n: int) -> None:
        self._open("main").alter(set_option("bucket", str(n)))
        self.refs["main"].bucket = n

    @rule(n=st.none() | st.integers(1, 4), part=st.none() | st.sampled_from(PARTS))
    def rescale(self, n: int | None, part: str | None) -> None:
        m = self.refs["main"]
        count = m.bucket if n is None else n
        t = self._open("main")
        if self._latest_sid() is None:
            return
        try:
            t.rescale(n, None if part is None else {"dt": part})
        except InvalidPartitionSpecError:
            assert part is not None and part not in m.counts
            return
        assert part is None or part in m.counts
        live = {p for p, _ in m.rows}
        for p in [part] if part is not None else sorted(live):
            if p in live:
                m.counts[p] = count
            else:
                m.counts.pop(p, None)  # an overwrite of a partition without rows empties it
        if part is not None or live:
            m.commit_bucket = m.bucket
            self._after_main_commit()

    # ---- partitions and whole-table maintenance ----

    @rule(part=st.sampled_from(PARTS))
    def drop_partition(self, part: str) -> None:
        sid = self._open("main").drop_partitions({"dt": part})
        m = self.refs["main"]
        assert (sid is None) == (part not in m.counts)
        if sid is not None:
            m.rows = {k: v for k, v in m.rows.items() if k[0] != part}
            m.counts.pop(part)
            m.commit_bucket = m.bucket

    @rule()
    def compact_manifests(self) -> None:
        self._open("main").compact_manifests()  # changes no row

    @rule(part=st.sampled_from(PARTS))
    def mark_partition_done(self, part: str) -> None:
        (path,) = self._open("main").mark_partitions_done({"dt": part})
        assert path.endswith(f"dt={part}/_SUCCESS")

    @precondition(lambda self: self._latest_sid() is not None)
    @rule()
    def purge_files(self) -> None:
        self._open("main").purge_files()
        m = self.refs["main"]
        self.refs = {"main": Ref(bucket=m.bucket, commit_bucket=m.bucket)}
        self.tags, self.consumers, self.aged = {}, {}, set()

    # ---- consumers ----

    @rule(cid=st.sampled_from(["c1", "c2", "x1"]), sid=st.integers(1, 12))
    def reset_consumer(self, cid: str, sid: int) -> None:
        t = self._open("main")
        exists = sid in t.snapshot_manager.snapshot_ids()
        try:
            t.reset_consumer(cid, sid)
        except NoSuchSnapshotError:
            assert not exists
            return
        assert exists
        self.consumers[cid] = sid
        self.aged.discard(cid)

    @precondition(lambda self: bool(self.consumers))
    @rule(data=st.data())
    def age_consumer(self, data: st.DataObject) -> None:
        cid = data.draw(st.sampled_from(sorted(self.consumers)))
        t = self._open("main")
        then = time.time() - 2 * 3600
        os.utime(consumer_path(t.root, cid), (then, then))
        self.aged.add(cid)

    @rule(including=st.sampled_from([None, "c.*", "x1"]), excluding=st.sampled_from([None, "c2"]))
    def clear_consumers(self, including: str | None, excluding: str | None) -> None:
        cleared = self._open("main").clear_consumers(including, excluding)
        gone = {
            c
            for c in self.consumers
            if re.fullmatch(including or ".*", c) and not (excluding and re.fullmatch(excluding, c))
        }
        assert sorted(cleared) == sorted(gone)
        for c in gone:
            del self.consumers[c]
            self.aged.discard(c)

    # ---- what must hold after every step ----

    @invariant()
    def matches_the_model(self) -> None:
        lsmlake.clear_caches()
        main = self._open("main")
        assert main.list_branches() == sorted(set(self.refs) - {"main"})
        assert sorted(x.name for x in main.list_tags()) == sorted(self.tags)
        assert read_consumers(main.io, main.root) == self.consumers
        for name, m in self.refs.items():
            t = self._open(name)
            got = t.read()
            rows = dict(
                zip(
                    zip(got.column("dt").to_pylist(), got.column("id").to_pylist(), strict=True),
                    got.column("v").to_pylist(),
                    strict=True,
                )
            )
            assert rows == m.rows, name
            assert t.options.bucket == m.bucket, name
            assert _counts(t) == m.counts, name


def _counts(t: Table) -> dict[str, int]:
    snapshot = t.snapshot_manager.latest()
    if snapshot is None:
        return {}
    locator = FileLocator(t)
    out: dict[str, set[int]] = {}
    for (partition, _), entries in RestoredState.load(t.io, t.paths, snapshot).files.items():
        out.setdefault(str(locator.partition_values(partition)[0]), set()).update(
            e.total_buckets for e in entries
        )
    assert all(len(v) == 1 for v in out.values()), f"a partition with files of two bucket counts: {out}"
    return {p: next(iter(v)) for p, v in out.items()}


Lifecycle.TestCase.settings = settings(
    max_examples=30, stateful_step_count=18, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_lifecycle_matches_the_model = Lifecycle.TestCase
