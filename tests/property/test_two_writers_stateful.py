"""Stateful model test: two writers interleaving writes and commits, compactions, expiries and reads."""

from __future__ import annotations

import shutil
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import lsmlake
from lsmlake.errors import CommitConflictError

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.int64())])
ROWS = st.lists(st.tuples(st.integers(0, 30), st.integers(-9, 9)), min_size=1, max_size=12)


class TwoWriters(RuleBasedStateMachine):
    """Two writers of one bucket: the second to commit on a bucket it restored stale is rebased above the
    first (refused only when a file it restored has expired since); the table follows commit order."""

    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="lsmlake-stateful-")
        cat = lsmlake.Catalog(self.root)
        cat.create_database("db")
        self.table = cat.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["k"],
            options={
                "bucket": "1",
                "deletion-vectors.enabled": "true",
                "snapshot.num-retained.min": "1",
                "snapshot.time-retained": "1 ms",
            },
        )
        self.model: dict[int, int] = {}
        self.writers: dict[int, tuple[lsmlake.TableWriter, dict[int, int], int]] = {}
        self.appends = 0  # data commits so far: a writer that restored before one of them is stale

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(w=st.sampled_from([0, 1]), rows=ROWS)
    def stage(self, w: int, rows: list[tuple[int, int]]) -> None:
        if w not in self.writers:
            self.writers[w] = (self.table.writer(), {}, self.appends)
        writer, staged, _ = self.writers[w]
        writer.write(pa.table({"k": [k for k, _ in rows], "v": [v for _, v in rows]}, schema=SCHEMA))
        staged.update(dict(rows))

    @precondition(lambda self: bool(self.writers))
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        w = data.draw(st.sampled_from(sorted(self.writers)))
        writer, staged, seen = self.writers.pop(w)
        try:
            writer.commit()
        except CommitConflictError:
            assert seen < self.appends, "refused although nobody else wrote the bucket"
            return
        self.model.update(staged)
        self.appends += 1

    @rule(keys=st.lists(st.integers(0, 30), min_size=1, max_size=5))
    def delete(self, keys: list[int]) -> None:
        self.table.delete(pa.table({"k": keys}, schema=pa.schema([("k", pa.int32())])))
        for k in keys:
            self.model.pop(k, None)
        self.appends += 1

    @rule(full=st.booleans())
    def compact(self, full: bool) -> None:
        self.table.compact(full=full)

    @rule()
    def expire(self) -> None:
        self.table.expire_snapshots(retain_min=1, older_than_ms=2**62)

    @invariant()
    def reads_equal_model(self) -> None:
        got = self.table.read().to_pylist()
        assert {r["k"]: r["v"] for r in got} == self.model
        assert all(s.raw_convertible for s in self.table.scan().splits())


TwoWriters.TestCase.settings = settings(
    max_examples=60, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_two_writers = TwoWriters.TestCase
