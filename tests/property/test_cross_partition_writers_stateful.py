"""Stateful model test: several writers of a cross-partition deduplicate table move, create and delete
the same keys and commit in random order, with compactions and expiries in between, deletion vectors
and write-only on or off. Every commit is acknowledged (rebased, not refused) unless the snapshots it
must check have expired, reads equal the writes applied in commit order, and every key is live in one
partition."""

from __future__ import annotations

import shutil
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import lsmlake
from lsmlake.errors import CommitConflictError

SCHEMA = pa.schema(
    [pa.field("k", pa.int32(), nullable=False), pa.field("p", pa.int32(), nullable=False), ("v", pa.int64())]
)
KEY_SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False)])
KEYS = st.integers(0, 7)
UPSERTS = st.lists(st.tuples(KEYS, st.integers(0, 2)), min_size=1, max_size=6)
Op = tuple[str, list[tuple[int, int, int]] | list[int]]
# refusals left: the writer's compaction read a file expired since, or a snapshot after its base expired
STALE = ("is gone", "has expired")


class CrossPartitionWriters(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="lsmlake-xpart-writers-")
        self.model: dict[int, tuple[int, int]] = {}
        self.writers: dict[int, tuple[lsmlake.TableWriter, list[Op]]] = {}
        self.step = 0

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @initialize(
        dv=st.booleans(),
        write_only=st.booleans(),
        changelog=st.sampled_from(["none", "input"]),
        rows=st.sampled_from(["1", "1000"]),
    )
    def create(self, dv: bool, write_only: bool, changelog: str, rows: str) -> None:
        cat = lsmlake.Catalog(self.root)
        cat.create_database("db")
        self.table = cat.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["k"],
            partition_keys=["p"],
            options={
                "bucket": "-1",
                "dynamic-bucket.target-row-num": rows,
                "deletion-vectors.enabled": str(dv).lower(),
                "write-only": str(write_only).lower(),
                "changelog-producer": changelog,
                "snapshot.num-retained.min": "1",
                "snapshot.time-retained": "1 ms",
            },
        )
        # batch reads of a deletion-vector table skip level 0, which only compaction empties under
        # write-only; merge-on-read reads every level
        self.skips_level0 = dv and write_only
        self.every_level = self.table.with_options({"deletion-vectors.merge-on-read": "true"})

    def _stage_upserts(self, w: int, upserts: list[tuple[int, int]]) -> None:
        writer, ops = self.writers.setdefault(w, (self.table.writer(), []))
        rows = []
        for k, p in upserts:
            self.step += 1
            rows.append((k, p, self.step))
        writer.write(
            pa.table(
                {"k": [r[0] for r in rows], "p": [r[1] for r in rows], "v": [r[2] for r in rows]},
                schema=SCHEMA,
            )
        )
        ops.append(("upsert", rows))

    @rule(w=st.integers(0, 2), upserts=UPSERTS)
    def stage_upserts(self, w: int, upserts: list[tuple[int, int]]) -> None:
        self._stage_upserts(w, upserts)

    @rule(w=st.integers(0, 2), keys=st.lists(KEYS, min_size=1, max_size=3))
    def stage_deletes(self, w: int, keys: list[int]) -> None:
        writer, ops = self.writers.setdefault(w, (self.table.writer(), []))
        writer.delete(pa.table({"k": keys}, schema=KEY_SCHEMA))
        ops.append(("delete", keys))

    @rule(batches=st.lists(UPSERTS, min_size=2, max_size=3), data=st.data())
    def race(self, batches: list[list[tuple[int, int]]], data: st.DataObject) -> None:
        """Writers restore the same snapshot, write (often the same keys), commit in any order."""
        racers = range(10, 10 + len(batches))
        for w, upserts in zip(racers, batches, strict=True):
            self._stage_upserts(w, upserts)
        for w in data.draw(st.permutations(list(racers))):
            self._commit(w)

    @precondition(lambda self: bool(self.writers))
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        self._commit(data.draw(st.sampled_from(sorted(self.writers))))

    def _commit(self, w: int) -> None:
        writer, ops = self.writers.pop(w)
        try:
            writer.commit()
        except CommitConflictError as e:
            assert any(s in str(e) for s in STALE), str(e)
            return
        for kind, arg in ops:
            for item in arg:
                if kind == "upsert":
                    k, p, v = item  # type: ignore[misc]
                    self.model[k] = (p, v)
                else:
                    self.model.pop(item, None)  # type: ignore[call-overload]

    @rule(full=st.booleans())
    def compact(self, full: bool) -> None:
        self.table.compact(full=full)
        if full and self.skips_level0:  # nothing left in level 0: batch reads see every key again
            rows = self.table.read().to_pylist()
            assert {r["k"]: (r["p"], r["v"]) for r in rows} == self.model

    @rule()
    def expire(self) -> None:
        self.table.expire_snapshots(retain_min=1, older_than_ms=2**62)

    @invariant()
    def reads_equal_the_model(self) -> None:
        if not hasattr(self, "table"):
            return
        tables = [self.every_level] if self.skips_level0 else [self.table, self.every_level]
        for table in tables:
            rows = table.read().to_pylist()
            assert len({r["k"] for r in rows}) == len(rows)  # every key live in one partition
            assert {r["k"]: (r["p"], r["v"]) for r in rows} == self.model


CrossPartitionWriters.TestCase.settings = settings(
    max_examples=30, stateful_step_count=12, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_cross_partition_writers = CrossPartitionWriters.TestCase
