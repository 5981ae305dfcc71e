"""Stateful model test of the snapshot procedures: rollback by timestamp and by snapshot id, the tag
procedures (create from a timestamp, rename, replace), snapshot expiry and remove_unexisting_files, against
a model of each snapshot's commit time and rows, which snapshots exist and which snapshot each tag holds."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import lsmlake
from lsmlake.errors import AlreadyExistsError, MissingFileError, NoSuchSnapshotError, NoSuchTagError
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.restore import RestoredState
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.read.lookup_plan import bucket_of
from lsmlake.table import Table

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int32(), nullable=False),
        ("v", pa.int64()),
    ]
)
PARTS = ("a", "b")
BUCKETS = 2
ROWS = st.lists(
    st.tuples(st.sampled_from(PARTS), st.integers(0, 9), st.integers(-99, 99)), min_size=1, max_size=8
)
Rows = dict[tuple[str, int], int]
FAR = 10**15  # epoch ms past any commit


@dataclass
class Snap:
    time_millis: int
    rows: Rows | None  # None: a file it needs was deleted from storage, so reading it must fail


class Procedures(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="lsmlake-procedures-")
        self.catalog = lsmlake.Catalog(self.root)
        self.catalog.create_database("db")
        self.catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["dt", "id"],
            partition_keys=["dt"],
            # no compaction and no expiry of its own: the model expires snapshots explicitly
            options={
                "bucket": str(BUCKETS),
                "num-sorted-run.compaction-trigger": "100",
                "snapshot.num-retained.min": "1000",
                "snapshot.num-retained.max": "1000",
            },
        )
        self.rows: Rows = {}
        self.ever: set[tuple[tuple[str, int], int]] = set()  # every (key, value) ever written
        self.hist: dict[int, Snap] = {}  # the snapshots that exist or a tag holds
        self.live: list[int] = []  # the snapshot files that exist
        self.tags: dict[str, int] = {}
        self.names = 0

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _open(self) -> Table:
        t = self.catalog.get_table("db.t")
        assert isinstance(t, Table)
        return t

    def _fresh(self) -> str:
        self.names += 1
        return f"t{self.names}"

    def _record_commit(self, t: Table, before: int | None) -> None:
        """The snapshot the last operation committed (if any) holds ``self.rows``."""
        snapshot = t.snapshot_manager.latest()
        assert snapshot is not None
        if snapshot.id == before:
            return
        assert before is None or snapshot.id == before + 1
        self.live.append(snapshot.id)
        self.hist[snapshot.id] = Snap(snapshot.time_millis, dict(self.rows))

    def _known(self) -> list[int]:
        """Snapshot ids whose rows the model knows (existing or tag-held)."""
        return sorted(i for i, s in self.hist.items() if s.rows is not None)

    def _prune(self) -> None:
        held = set(self.live) | set(self.tags.values())
        self.hist = {i: s for i, s in self.hist.items() if i in held}

    def _rolled_back(self, target: int) -> None:
        restored = target not in self.live
        self.live = [i for i in self.live if i <= target]
        if restored:
            self.live = [target]  # restored from its tag as the earliest (and latest) snapshot
        self.tags = {n: i for n, i in self.tags.items() if i <= target}
        rows = self.hist[target].rows
        assert rows is not None
        self.rows = dict(rows)
        self._prune()

    # ---- data ----

    @rule(rows=ROWS, delete=st.booleans())
    def write(self, rows: list[tuple[str, int, int]], delete: bool) -> None:
        data = pa.table(
            {
                "dt": [r[0] for r in rows],
                "id": pa.array([r[1] for r in rows], pa.int32()),
                "v": [r[2] for r in rows],
            },
            schema=SCHEMA,
        )
        t = self._open()
        before = t.snapshot_manager.latest_id()
        time.sleep(0.002)  # distinct commit milliseconds, so a timestamp names one snapshot
        t.delete(data.select(["dt", "id"])) if delete else t.write(data)
        for p, i, v in rows:
            if delete:
                self.rows.pop((p, i), None)
            else:
                self.rows[(p, i)] = v
                self.ever.add(((p, i), v))
        self._record_commit(t, before)

    # ---- rollback ----

    @precondition(lambda self: bool(self.hist))
    @rule(data=st.data(), delta=st.sampled_from([-1, 0, 1]), before_all=st.integers(0, 4))
    def rollback_to_timestamp(self, data: st.DataObject, delta: int, before_all: int) -> None:
        t = self._open()
        if before_all == 0:
            ts = self.hist[self.live[0]].time_millis - 1 if self.live else 0
            with pytest.raises(NoSuchSnapshotError, match="at or before"):
                t.rollback_to_timestamp(ts)
            return
        base = data.draw(st.sampled_from(sorted(self.hist)))
        ts = self.hist[base].time_millis + delta
        # the newest existing snapshot committed at or before ts (a tag-held expired one is not looked at)
        at_or_before = [i for i in self.live if self.hist[i].time_millis <= ts]
        if not at_or_before:
            with pytest.raises(NoSuchSnapshotError):
                t.rollback_to_timestamp(ts)
            return
        target = at_or_before[-1]
        if self.hist[target].rows is None:
            return  # its rows are unknown: rolling back there would leave a table that cannot be read
        result = t.rollback_to_timestamp(ts)
        assert result.snapshot_id == target
        self._rolled_back(target)

    @precondition(lambda self: bool(self._known()))
    @rule(data=st.data(), missing=st.integers(0, 5))
    def rollback_to_snapshot(self, data: st.DataObject, missing: int) -> None:
        t = self._open()
        if missing == 0:  # a snapshot that neither exists nor is held by a tag
            gone = max(self.hist) + 1 + data.draw(st.integers(0, 3))
            with pytest.raises(NoSuchSnapshotError, match="does not exist"):
                t.rollback_to(gone)
            return
        target = data.draw(st.sampled_from(self._known()))
        result = t.rollback_to(target)
        assert result.snapshot_id == target
        self._rolled_back(target)

    # ---- tags ----

    @precondition(lambda self: bool(self.live) and len(self.tags) < 5)
    @rule(data=st.data())
    def create_tag(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(self.live))
        name = self._fresh()
        tag = self._open().create_tag(name, sid)
        assert tag.snapshot.id == sid
        self.tags[name] = sid

    @precondition(lambda self: bool(self.hist) and len(self.tags) < 5)
    @rule(data=st.data(), delta=st.sampled_from([-1, 0, 1]), after_all=st.integers(0, 4))
    def create_tag_from_timestamp(self, data: st.DataObject, delta: int, after_all: int) -> None:
        t = self._open()
        name = self._fresh()
        if after_all == 0:
            with pytest.raises(NoSuchSnapshotError, match="at or after"):
                t.create_tag_from_timestamp(name, FAR)
            assert name not in {x.name for x in t.list_tags()}
            return
        base = data.draw(st.sampled_from(sorted(self.hist)))
        ts = self.hist[base].time_millis + delta
        # the oldest snapshot committed at or after ts, existing or held by a tag
        candidates = sorted(set(self.live) | set(self.tags.values()))
        at_or_after = [i for i in candidates if self.hist[i].time_millis >= ts]
        if not at_or_after:
            with pytest.raises(NoSuchSnapshotError):
                t.create_tag_from_timestamp(name, ts)
            return
        tag = t.create_tag_from_timestamp(name, ts)
        assert tag.snapshot.id == at_or_after[0], (ts, at_or_after)
        self.tags[name] = at_or_after[0]

    @precondition(lambda self: bool(self.tags))
    @rule(data=st.data(), onto_existing=st.integers(0, 3))
    def rename_tag(self, data: st.DataObject, onto_existing: int) -> None:
        old = data.draw(st.sampled_from(sorted(self.tags)))
        t = self._open()
        if onto_existing == 0:
            other = data.draw(st.sampled_from(sorted(self.tags)))
            with pytest.raises(AlreadyExistsError):
                t.rename_tag(old, other)
            return
        new = self._fresh()
        t.rename_tag(old, new)
        self.tags[new] = self.tags.pop(old)

    @precondition(lambda self: bool(self.tags) and bool(self.live))
    @rule(data=st.data(), latest=st.booleans(), missing=st.integers(0, 5))
    def replace_tag(self, data: st.DataObject, latest: bool, missing: int) -> None:
        t = self._open()
        if missing == 0:
            with pytest.raises(NoSuchTagError, match="does not exist"):
                t.replace_tag(self._fresh())
            return
        name = data.draw(st.sampled_from(sorted(self.tags)))
        sid = None if latest else data.draw(st.sampled_from(self.live))
        tag = t.replace_tag(name, sid)
        expected = self.live[-1] if sid is None else sid
        assert tag.snapshot.id == expected
        self.tags[name] = expected
        self._prune()

    # ---- expiry and lost files ----

    @precondition(lambda self: len(self.live) > 1)
    @rule(keep=st.integers(1, 3))
    def expire_snapshots(self, keep: int) -> None:
        self._open().expire_snapshots(retain_min=keep, retain_max=keep, older_than_ms=FAR)
        self.live = self.live[-keep:]
        self._prune()

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def remove_unexisting_files(self, data: st.DataObject) -> None:
        t = self._open()
        latest = t.snapshot_manager.latest()
        assert latest is not None
        files = _data_files(t, latest)
        if not files:
            return
        path = data.draw(st.sampled_from(sorted(files, key=files.__getitem__)))
        part, bucket, _ = files[path]
        # every snapshot (existing or tag-held) that needs the file can no longer be read
        tagged = {x.snapshot.id: x.snapshot for x in t.list_tags()}
        for sid, snap in self.hist.items():
            s = t.snapshot_manager.snapshot(sid) if sid in self.live else tagged[sid]
            if path in _data_files(t, s):
                snap.rows = None
        t.io.delete_file(path)
        time.sleep(0.002)
        assert t.remove_unexisting_files(dry_run=True) == [path]
        assert t.snapshot_manager.latest_id() == latest.id
        assert t.remove_unexisting_files() == [path]
        got = _rows(t.read())
        lost = {k for k in set(self.rows) | set(got) if (k[0], _bucket(t, k[1])) == (part, bucket)}
        # rows of every other partition and bucket are untouched
        assert {k: v for k, v in got.items() if k not in lost} == {
            k: v for k, v in self.rows.items() if k not in lost
        }
        # the file's bucket shows rows that were written (an older version can surface, a deleted key
        # come back when the file held its delete), never made-up ones
        assert {(k, v) for k, v in got.items() if k in lost} <= self.ever
        self.rows = got
        self._record_commit(t, latest.id)
        assert t.remove_unexisting_files() == []

    # ---- what must hold after every step ----

    @invariant()
    def matches_the_model(self) -> None:
        lsmlake.clear_caches()
        t = self._open()
        assert t.snapshot_manager.snapshot_ids() == self.live
        assert {x.name: x.snapshot.id for x in t.list_tags()} == self.tags
        assert _rows(t.read()) == self.rows
        for sid in self.live:
            _check_read(t, self.hist[sid].rows, snapshot_id=sid)
        for name, sid in self.tags.items():
            _check_read(t, self.hist[sid].rows, tag=name)


def _check_read(t: Table, rows: Rows | None, **at: object) -> None:
    if rows is None:
        with pytest.raises(MissingFileError, match="does not exist"):  # never a silent short read
            t.read(**at)  # type: ignore[arg-type]
    else:
        assert _rows(t.read(**at)) == rows, at  # type: ignore[arg-type]


def _rows(got: pa.Table) -> Rows:
    return dict(
        zip(
            zip(got.column("dt").to_pylist(), got.column("id").to_pylist(), strict=True),
            got.column("v").to_pylist(),
            strict=True,
        )
    )


def _bucket(t: Table, key: int) -> int:
    ids = bucket_of(pa.table({"id": pa.array([key], pa.int32())}), t, t.options, BUCKETS)
    assert ids is not None
    return int(ids[0])


def _data_files(t: Table, snapshot: Snapshot) -> dict[str, tuple[str, int, int]]:
    """The live data files of a snapshot: path -> (partition, bucket, min sequence number), a key that
    orders them the same way in every run (their names are random)."""
    locator = FileLocator(t)
    out = {}
    for (partition, bucket), entries in RestoredState.load(t.io, t.paths, snapshot).files.items():
        p = str(locator.partition_values(partition)[0])
        for e in entries:
            out[locator.data_file(partition, bucket, e.file)] = (p, bucket, e.file.min_sequence_number)
    return out


Procedures.TestCase.settings = settings(
    max_examples=30, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_procedures_match_the_model = Procedures.TestCase
