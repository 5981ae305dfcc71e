"""Changelog producers against a model: the changelog, replayed into a dict, equals the table."""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.scan.planner import ScanFilters
from lsmlake.stream.incremental import change_context, change_splits, read_changes

SCHEMA = pa.schema([("k", pa.int32()), ("s", pa.string()), ("v", pa.int64())])
KEY_SCHEMA = pa.schema([("k", pa.int32())])
KEYS = st.integers(0, 30)
WRITE = st.tuples(st.just("write"), st.lists(st.tuples(KEYS, st.integers(-5, 5)), min_size=1, max_size=20))
DELETE = st.tuples(st.just("delete"), st.lists(KEYS, min_size=1, max_size=8))
COMPACT = st.tuples(st.just("compact"), st.booleans())

Row = tuple[Any, ...]


def changelog_of(table: lsmlake.Table, snapshot: Snapshot) -> list[dict[str, Any]]:
    """The snapshot's changelog rows in file order, each with its ``rowkind``."""
    ctx = change_context(table.io, table.root, table.schema, table.options, None, ScanFilters())
    splits = change_splits(table.io, table.root, table.schema, table.options, snapshot, "changelog")
    return [r for t in read_changes(ctx, splits) for r in t.to_pylist()]


def replay(model: dict[int, Row], rows: list[dict[str, Any]], *, strict: bool = True) -> None:
    """Apply changelog rows; ``strict``: a retraction must name the current row, +I a new key, +U
    follow its -U (compaction changelog). Input changelog is the raw input: upserts and deletes."""
    retracted: int | None = None
    for r in rows:
        key, value, kind = r["k"], (r["k"], r["s"], r["v"]), r["rowkind"]
        if not strict:
            if kind in ("-U", "-D"):
                model.pop(key, None)
            else:
                model[key] = value
        elif kind in ("-U", "-D"):
            assert model.get(key) == value, f"{kind} {value} but the current row is {model.get(key)}"
            del model[key]
            retracted = key if kind == "-U" else None
        elif kind == "+I":
            assert key not in model, f"+I {value} for an existing key"
            model[key] = value
        else:
            assert retracted == key, f"+U {value} without its -U"
            model[key] = value
            retracted = None


def table_rows(table: lsmlake.Table, snapshot_id: int) -> dict[int, Row]:
    rows = table.read(snapshot_id=snapshot_id).to_pylist()
    return {r["k"]: (r["k"], r["s"], r["v"]) for r in rows}


def run_ops(table: lsmlake.Table, ops: list[Any]) -> list[int]:
    """Apply the operations; the ids of the snapshots that end a commit."""
    ends = []
    for step, (op, arg) in enumerate(ops):
        if op == "write":
            table.write(
                pa.table(
                    {
                        "k": [k for k, _ in arg],
                        "s": [f"s{step}-{k}" for k, _ in arg],
                        "v": [v for _, v in arg],
                    },
                    schema=SCHEMA,
                )
            )
        elif op == "delete":
            table.delete(pa.table({"k": arg}, schema=KEY_SCHEMA))
        else:
            table.compact(full=arg)
        latest = table.latest_snapshot()
        if latest is not None and latest.id not in ends:
            ends.append(latest.id)
    return ends


def check_against_table(
    table: lsmlake.Table, ends: list[int], *, every_snapshot: bool, strict: bool = True
) -> None:
    """Replaying every snapshot's changelog gives the table at each commit end (or every snapshot)."""
    model: dict[int, Row] = {}
    manager = table.snapshot_manager
    for sid in manager.snapshot_ids():
        replay(model, changelog_of(table, manager.snapshot(sid)), strict=strict)
        if every_snapshot or sid in ends:
            assert model == table_rows(table, sid), f"snapshot {sid}"


def new_table(warehouse: str, options: dict[str, str]) -> lsmlake.Table:
    cat = lsmlake.Catalog(warehouse)
    cat.create_database("db")
    base = {"bucket": "2", "num-sorted-run.compaction-trigger": "3"}
    return cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={**base, **options})


SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(ops=st.lists(st.one_of(WRITE, DELETE, COMPACT), min_size=1, max_size=8), dv=st.booleans())
def test_input_changelog_is_the_input(ops: list[Any], dv: bool) -> None:
    with tempfile.TemporaryDirectory() as wh:
        t = new_table(wh, {"changelog-producer": "input", "deletion-vectors.enabled": str(dv).lower()})
        ends = run_ops(t, ops)
        # every APPEND snapshot carries exactly the rows written, with their kinds, in key order
        data_ops = iter(op for op in ops if op[0] != "compact")
        for s in map(t.snapshot_manager.snapshot, t.snapshot_manager.snapshot_ids()):
            if s.commit_kind != "APPEND":
                assert s.changelog_manifest_list is None
                continue
            op, arg = next(data_ops)
            rows = changelog_of(t, s)
            assert s.changelog_record_count == len(rows)
            if op == "write":
                expected = sorted((k, v, "+I") for k, v in arg)
                assert sorted((r["k"], r["v"], r["rowkind"]) for r in rows) == expected
            else:
                assert sorted((r["k"], r["rowkind"]) for r in rows) == sorted((k, "-D") for k in arg)
        # with deletion vectors level-0 rows are invisible until compacted (the COMPACT snapshot)
        check_against_table(t, ends, every_snapshot=not dv, strict=False)


@SETTINGS
@given(
    ops=st.lists(st.one_of(WRITE, DELETE, COMPACT), min_size=1, max_size=8),
    dv=st.booleans(),
    engine=st.sampled_from(["deduplicate", "partial-update", "deduplicate+sequence.field"]),
    dedup=st.booleans(),
)
def test_lookup_changelog_replays_to_the_table(ops: list[Any], dv: bool, engine: str, dedup: bool) -> None:
    engine, _, sequence_field = engine.partition("+")
    options = {
        "changelog-producer": "lookup",
        "deletion-vectors.enabled": str(dv).lower(),
        "merge-engine": engine,
        "changelog-producer.row-deduplicate": str(dedup).lower(),
    }
    if engine == "partial-update":
        options["partial-update.remove-record-on-delete"] = "true"
    if sequence_field:
        options["sequence.field"] = "v"
    with tempfile.TemporaryDirectory() as wh:
        t = new_table(wh, options)
        check_against_table(t, run_ops(t, ops), every_snapshot=False)


@SETTINGS
@given(ops=st.lists(st.one_of(WRITE, COMPACT), min_size=1, max_size=8), dv=st.booleans())
def test_lookup_changelog_of_aggregation(ops: list[Any], dv: bool) -> None:
    options = {
        "changelog-producer": "lookup",
        "deletion-vectors.enabled": str(dv).lower(),
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
    }
    with tempfile.TemporaryDirectory() as wh:
        t = new_table(wh, options)
        check_against_table(t, run_ops(t, ops), every_snapshot=False)


@SETTINGS
@given(
    ops=st.lists(st.one_of(WRITE, DELETE, COMPACT), min_size=1, max_size=8),
    engine=st.sampled_from(["deduplicate", "partial-update"]),
)
def test_full_compaction_changelog_replays_to_the_table(ops: list[Any], engine: str) -> None:
    options = {"changelog-producer": "full-compaction", "merge-engine": engine}
    if engine == "partial-update":
        options["partial-update.remove-record-on-delete"] = "true"
    with tempfile.TemporaryDirectory() as wh:
        t = new_table(wh, options)
        check_against_table(t, run_ops(t, ops), every_snapshot=False)


@SETTINGS
@given(ops=st.lists(st.one_of(WRITE, COMPACT), min_size=1, max_size=8))
def test_first_row_lookup_changelog_inserts_once(ops: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as wh:
        t = new_table(wh, {"changelog-producer": "lookup", "merge-engine": "first-row"})
        ends = run_ops(t, ops)
        check_against_table(t, ends, every_snapshot=False)
        manager = t.snapshot_manager
        kinds = {r["rowkind"] for s in manager.snapshot_ids() for r in changelog_of(t, manager.snapshot(s))}
        assert kinds <= {"+I"}


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_update_pairs_carry_old_and_new_values(tmp_path: Any, producer: str) -> None:
    t = new_table(str(tmp_path), {"changelog-producer": producer, "bucket": "1"})
    t.write(pa.table({"k": [1, 2], "s": ["a", "b"], "v": [10, 20]}, schema=SCHEMA))
    sid = t.write(pa.table({"k": [1, 3], "s": ["A", "c"], "v": [11, 30]}, schema=SCHEMA))
    snapshot = t.snapshot_manager.snapshot(sid)
    assert snapshot.commit_kind == "COMPACT"
    rows = [(r["rowkind"], r["k"], r["s"], r["v"]) for r in changelog_of(t, snapshot)]
    assert rows == [("-U", 1, "a", 10), ("+U", 1, "A", 11), ("+I", 3, "c", 30)]
    sid = t.delete(pa.table({"k": [2]}, schema=KEY_SCHEMA))
    rows = [(r["rowkind"], r["k"], r["s"], r["v"]) for r in changelog_of(t, t.snapshot_manager.snapshot(sid))]
    assert rows == [("-D", 2, "b", 20)]
