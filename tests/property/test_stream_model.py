"""Random upserts, deletes and compactions: the streamed changelog, applied to an empty dict, equals the table."""

from __future__ import annotations

import tempfile

import pyarrow as pa
from change_model import Model, apply_all, as_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.int64())])
KEYS = st.integers(0, 30)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.lists(st.tuples(KEYS, st.integers(-5, 5)), min_size=1, max_size=20)),
        st.tuples(st.just("delete"), st.lists(KEYS, min_size=1, max_size=6)),
        st.tuples(st.just("compact"), st.booleans()),
    ),
    min_size=1,
    max_size=10,
)
# (changelog-producer, deletion vectors); lookup / full-compaction publish changelog in COMPACT snapshots
CONFIGS = st.sampled_from(
    [("none", False), ("none", True), ("input", False), ("lookup", False), ("full-compaction", False)]
)


def _apply_op(table: lsmlake.Table, op: tuple[str, object]) -> None:
    kind, arg = op
    if kind == "write":
        rows = dict(arg)  # type: ignore[call-overload]
        table.write(pa.table({"k": list(rows), "v": list(rows.values())}, schema=SCHEMA))
    elif kind == "delete":
        table.delete(pa.table({"k": sorted(set(arg))}, schema=pa.schema([SCHEMA.field("k")])))  # type: ignore[call-overload]
    else:
        table.compact(full=bool(arg))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, config=CONFIGS, buckets=st.sampled_from([1, 2, -1]))
def test_streamed_changes_rebuild_the_table(
    ops: list[tuple[str, object]], config: tuple[str, bool], buckets: int
) -> None:
    producer, dv = config
    with tempfile.TemporaryDirectory() as wh:
        cat = lsmlake.Catalog(wh)
        cat.create_database("db")
        options = {"bucket": str(buckets), "changelog-producer": producer}
        if dv:
            options["deletion-vectors.enabled"] = "true"
        table = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
        live: Model = {}
        op_ends: set[int] = set()
        # registered before the first commit: mode latest on an empty table starts at snapshot 1
        assert list(table.stream(mode="latest", consumer_id="follower", stop_when_caught_up=True)) == []
        for op in ops:
            _apply_op(table, op)
            latest = table.latest_snapshot()
            if latest is not None:
                op_ends.add(latest.id)
            # a follower that resumes by consumer id after every commit sees the table as it is now
            follower = table.stream(mode="latest", consumer_id="follower", stop_when_caught_up=True)
            apply_all(live, follower, "k")
            assert live == as_model(table.read(), "k")
        # a replay of the whole history matches the table at every snapshot it passes
        latest = table.latest_snapshot()
        if latest is None:
            return
        replay = table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True)
        by_snapshot: dict[int, list[pa.Table]] = {}
        for changes in replay:
            assert replay.snapshot_id is not None
            by_snapshot.setdefault(replay.snapshot_id, []).append(changes)
        model: Model = {}
        for sid in range(1, latest.id + 1):
            apply_all(model, by_snapshot.get(sid, []), "k")
            # DV tables hide level-0 files from batch reads until the write's own compaction lifts them
            if (producer in ("none", "input") and not dv) or sid in op_ends:
                assert model == as_model(table.read(snapshot_id=sid), "k"), sid
