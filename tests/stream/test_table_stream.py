"""``Table.stream``: starting modes, follow-up deltas, consumers and expiry, overwrite skipping, binlog."""

from __future__ import annotations

import json
import threading
import time

import pyarrow as pa
import pytest
from change_model import Model, apply_all, as_model

import lsmlake
from lsmlake.errors import InvalidOptionError, NoSuchSnapshotError, UnsupportedError
from lsmlake.metadata.consumers import read_consumers
from lsmlake.stream.binlog import to_binlog

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("n", pa.int32())])


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table(
        {"id": ids, "name": [f"{tag}{i}" for i in ids], "n": [i % 7 for i in ids]},
        schema=SCHEMA,
    )


@pytest.fixture
def table(catalog: lsmlake.Catalog) -> lsmlake.Table:
    return catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})


def _history(table: lsmlake.Table) -> dict[int, Model]:
    """Snapshots 1..5 (the 4th a compaction) and the model after each."""
    table.write(_rows([1, 2, 3, 4], "a"))
    table.write(_rows([3, 5], "b"))
    table.delete(pa.table({"id": [1, 9]}))
    table.compact(full=True)
    table.write(_rows([6, 2], "c"))
    return {sid: as_model(table.read(snapshot_id=sid), "id") for sid in range(1, 6)}


def _drain(stream: lsmlake.table.stream.TableStream) -> list[tuple[int | None, pa.Table]]:
    out = []
    for t in stream:
        out.append((stream.snapshot_id, t))
    return out


def test_latest_full_reads_the_table_then_follows(table: lsmlake.Table) -> None:
    models = _history(table)
    stream = table.stream(stop_when_caught_up=True)
    got = _drain(stream)
    assert {sid for sid, _ in got} == {5}
    assert all(set(t.column("rowkind").to_pylist()) == {"+I"} for _, t in got)
    assert apply_all({}, [t for _, t in got], "id") == models[5]
    assert stream.next_snapshot_id == 6
    assert stream.schema.names == ["rowkind", "id", "name", "n"]


def test_from_snapshot_replays_every_change_in_order(table: lsmlake.Table) -> None:
    models = _history(table)
    got = _drain(table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True))
    assert [sid for sid, _ in got] == sorted(sid for sid, _ in got)
    assert 4 not in {sid for sid, _ in got}  # the COMPACT snapshot carries no delta
    model: Model = {}
    for sid in range(1, 6):
        apply_all(model, [t for s, t in got if s == sid], "id")
        assert model == models[sid], sid
    deletes = [r for _, t in got for r in t.to_pylist() if r["rowkind"] == "-D"]
    assert sorted(r["id"] for r in deletes) == [1, 9]


def test_from_snapshot_full_and_latest(table: lsmlake.Table) -> None:
    models = _history(table)
    got = _drain(table.stream(mode="from-snapshot-full", snapshot_id=2, stop_when_caught_up=True))
    assert min(sid for sid, _ in got) == 2
    assert apply_all({}, [t for s, t in got if s == 2], "id") == models[2]
    assert apply_all({}, [t for _, t in got], "id") == models[5]
    stream = table.stream(mode="latest", stop_when_caught_up=True)
    assert _drain(stream) == []
    assert stream.next_snapshot_id == 6
    table.write(_rows([7], "d"))
    # a stream created now starts after snapshot 6; one created before it sees it
    assert _drain(table.stream(mode="latest", stop_when_caught_up=True)) == []


def test_latest_on_an_empty_table_starts_at_the_first_snapshot(table: lsmlake.Table) -> None:
    stream = table.stream(mode="latest", poll_interval=0.01, until_snapshot=2)
    writer = threading.Thread(
        target=lambda: (time.sleep(0.05), table.write(_rows([1], "x")), table.write(_rows([2], "y")))
    )
    writer.start()
    got = _drain(stream)
    writer.join()
    assert [sid for sid, _ in got] == [1, 2]
    assert apply_all({}, [t for _, t in got], "id") == as_model(table.read(), "id")


def test_from_timestamp_starts_after_the_time(table: lsmlake.Table) -> None:
    models = _history(table)
    t3 = table.snapshot(3).time_millis
    got = _drain(table.stream(mode="from-timestamp", timestamp_millis=t3 + 1, stop_when_caught_up=True))
    assert {sid for sid, _ in got} <= {4, 5}
    model = apply_all(dict(models[3]), [t for _, t in got], "id")
    assert model == models[5]
    # default mode with a timestamp option resolves to from-timestamp
    first = table.snapshot(1).time_millis
    again = _drain(
        table.with_options({"scan.timestamp-millis": str(first - 1)}).stream(stop_when_caught_up=True)
    )
    assert apply_all({}, [t for _, t in again], "id") == models[5]


def test_compacted_full_starts_from_the_latest_compaction(table: lsmlake.Table) -> None:
    models = _history(table)
    got = _drain(table.stream(mode="compacted-full", stop_when_caught_up=True))
    assert min(sid for sid, _ in got) == 4
    assert apply_all({}, [t for s, t in got if s == 4], "id") == models[4]
    assert apply_all({}, [t for _, t in got], "id") == models[5]


def test_consumer_saves_progress_and_resumes(table: lsmlake.Table) -> None:
    models = _history(table)
    stream = table.stream(mode="from-snapshot", snapshot_id=1, consumer_id="job1", stop_when_caught_up=True)
    seen = []
    for t in stream:
        seen.append((stream.snapshot_id, t))
        if stream.snapshot_id == 2:
            break
    # snapshot 1 was fully delivered and the caller asked for more: its progress is saved
    assert read_consumers(table.io, table.root) == {"job1": 2}
    path = f"{table.root}/consumer/consumer-job1"
    assert json.loads(table.io.read_text(path)) == {"nextSnapshot": 2}
    # a restart (a new stream, same consumer id) re-delivers snapshot 2 (not yet committed) and goes on
    rest = _drain(table.stream(consumer_id="job1", stop_when_caught_up=True))
    assert min(sid for sid, _ in rest) == 2
    model = apply_all({}, [t for sid, t in seen if sid == 1], "id")
    model = apply_all(model, [t for _, t in rest], "id")
    assert model == models[5]
    assert read_consumers(table.io, table.root) == {"job1": 6}
    # caught up: a third run delivers nothing; ignore-progress starts over from the mode
    assert _drain(table.stream(consumer_id="job1", stop_when_caught_up=True)) == []
    fresh = table.with_options({"consumer.ignore-progress": "true"}).stream(
        consumer_id="job1", stop_when_caught_up=True
    )
    assert apply_all({}, [t for _, t in _drain(fresh)], "id") == models[5]


def test_explicit_commit(catalog: lsmlake.Catalog) -> None:
    table = catalog.create_table("db.one", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    _history(table)  # one bucket: each snapshot's changes are one table
    stream = table.stream(
        mode="from-snapshot", snapshot_id=1, consumer_id="c", auto_commit=False, stop_when_caught_up=True
    )
    it = iter(stream)
    next(it)
    assert read_consumers(table.io, table.root) == {}  # nothing saved without commit()
    stream.commit()  # snapshot 1 fully handed over: a restart goes on with snapshot 2
    assert read_consumers(table.io, table.root) == {"c": 2}
    assert [stream.snapshot_id for _ in it] == [2, 3, 5]
    assert read_consumers(table.io, table.root) == {"c": 2}
    stream.commit()
    assert read_consumers(table.io, table.root) == {"c": 6}
    with pytest.raises(ValueError, match="consumer id"):
        table.stream(consumer_id="a/b")


def test_expiry_keeps_what_a_consumer_needs(table: lsmlake.Table) -> None:
    models = _history(table)
    for i in range(3):
        table.write(_rows([10 + i], "e"))
    stream = table.stream(mode="from-snapshot", snapshot_id=1, consumer_id="slow", until_snapshot=3)
    _drain(stream)
    assert read_consumers(table.io, table.root) == {"slow": 4}
    now = table.latest_snapshot().time_millis + 10**6  # type: ignore[union-attr]
    result = table.expire_snapshots(retain_min=1, older_than_ms=now)
    assert result.earliest_snapshot_id == 4
    rest = _drain(table.stream(consumer_id="slow", stop_when_caught_up=True))
    model = apply_all(dict(models[3]), [t for _, t in rest], "id")
    assert model == as_model(table.read(), "id")


def test_a_stream_that_fell_behind_expiry_fails_loudly(table: lsmlake.Table) -> None:
    table.write(_rows([1], "a"))
    stream = table.stream(mode="from-snapshot", snapshot_id=1)
    it = iter(stream)
    next(it)
    for i in range(3):
        table.write(_rows([20 + i], "f"))
    now = table.latest_snapshot().time_millis + 10**6  # type: ignore[union-attr]
    table.expire_snapshots(retain_min=1, older_than_ms=now)
    with pytest.raises(NoSuchSnapshotError, match="expired"):
        for _ in it:
            pass


def test_overwrite_snapshots_are_skipped(table: lsmlake.Table) -> None:
    table.write(_rows([1, 2], "a"))
    table.overwrite(_rows([3], "o"))
    table.write(_rows([4], "b"))
    got = _drain(table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True))
    assert [sid for sid, _ in got] == [1, 3]
    with pytest.raises(UnsupportedError, match="streaming-read-overwrite"):
        table.with_options({"streaming-read-overwrite": "true"}).stream()


def test_filter_and_columns(table: lsmlake.Table) -> None:
    _history(table)
    got = _drain(
        table.stream(
            mode="from-snapshot", snapshot_id=1, filter="id >= 3", columns=["id"], stop_when_caught_up=True
        )
    )
    rows = [r for _, t in got for r in t.to_pylist()]
    assert all(set(r) == {"rowkind", "id"} for r in rows)
    assert sorted(r["id"] for r in rows) == [3, 3, 4, 5, 6, 9]


def test_poll_until_snapshot_follows_a_writer(table: lsmlake.Table) -> None:
    def write() -> None:
        for i in range(5):
            time.sleep(0.02)
            table.write(_rows([i, i + 1], f"w{i}"))

    stream = table.stream(mode="latest", poll_interval=0.01, until_snapshot=5)
    writer = threading.Thread(target=write)
    writer.start()
    got = _drain(stream)
    writer.join()
    assert apply_all({}, [t for _, t in got], "id") == as_model(table.read(), "id")


def test_binlog_packs_update_pairs() -> None:
    changes = pa.table(
        {
            "rowkind": ["+I", "-U", "+U", "-D", "-U", "+U"],
            "id": [1, 2, 2, 3, 4, 4],
            "v": ["a", "b", "B", None, "x", "y"],
        }
    )
    packed = to_binlog(changes)
    assert packed.to_pylist() == [
        {"rowkind": "+I", "id": [1], "v": ["a"]},
        {"rowkind": "+U", "id": [2, 2], "v": ["b", "B"]},
        {"rowkind": "-D", "id": [3], "v": [None]},
        {"rowkind": "+U", "id": [4, 4], "v": ["x", "y"]},
    ]
    single = to_binlog(changes, pack_updates=False)
    assert single.num_rows == 6 and single.column("v").to_pylist()[2] == ["B"]
    assert to_binlog(changes.slice(0, 0)).num_rows == 0


def test_binlog_system_table_and_stream(catalog: lsmlake.Catalog, table: lsmlake.Table) -> None:
    _history(table)
    batch = catalog.get_table("db.t$binlog").read()
    assert batch.schema.field("id").type == pa.list_(pa.field("element", pa.int64()))
    assert sorted(r["id"][0] for r in batch.to_pylist()) == sorted(table.read().column("id").to_pylist())
    got = _drain(table.stream(mode="from-snapshot", snapshot_id=3, binlog=True, stop_when_caught_up=True))
    assert [r["id"] for _, t in got for r in t.to_pylist() if r["rowkind"] == "-D"] == [[1], [9]]


def test_changelog_kept_past_snapshot_expiry_is_still_streamed(catalog: lsmlake.Catalog) -> None:
    options = {
        "bucket": "1",
        "changelog-producer": "input",
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2",
        "changelog.num-retained.max": "100",
    }
    table = catalog.create_table("db.c", schema=SCHEMA, primary_key=["id"], options=options)
    for i in range(6):
        table.write(_rows([i, i + 1], f"r{i}"))
    table.delete(pa.table({"id": [2]}))
    now = table.latest_snapshot().time_millis + 10**6  # type: ignore[union-attr]
    table.expire_snapshots(older_than_ms=now)
    earliest = table.snapshot_manager.earliest_id()
    assert earliest is not None and earliest > 3
    got = _drain(table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True))
    assert min(sid for sid, _ in got) == 1  # read from the long-lived changelog of an expired snapshot
    assert apply_all({}, [t for _, t in got], "id") == as_model(table.read(), "id")


def test_snapshot_delay_holds_back_young_snapshots(table: lsmlake.Table) -> None:
    table.write(_rows([1], "a"))
    delayed = table.with_options({"streaming.read.snapshot.delay": "1 h"})
    assert _drain(delayed.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True)) == []
    assert len(_drain(table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True))) == 1


@pytest.mark.parametrize(
    "options",
    [{"deletion-vectors.enabled": "true"}, {"merge-engine": "first-row"}],
    ids=["deletion-vectors", "first-row"],
)
def test_first_plan_reads_level_0_that_batch_reads_skip(
    catalog: lsmlake.Catalog, options: dict[str, str]
) -> None:
    table = catalog.create_table(
        "db.l0", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", "write-only": "true", **options}
    )
    table.write(_rows([1, 2], "a"))
    table.write(_rows([2, 3], "b"))
    assert table.read().num_rows == 0  # everything is still in level 0
    got = _drain(table.stream(stop_when_caught_up=True))
    second = "a" if options.get("merge-engine") == "first-row" else "b"  # first-row keeps the first
    expected = pa.concat_tables([_rows([1], "a"), _rows([2], second), _rows([3], "b")])
    assert apply_all({}, [t for _, t in got], "id") == as_model(expected, "id")


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_first_plan_leaves_uncompacted_rows_to_the_changelog(catalog: lsmlake.Catalog, producer: str) -> None:
    options = {"bucket": "1", "changelog-producer": producer}
    table = catalog.create_table("db.cl", schema=SCHEMA, primary_key=["id"], options=options)
    table.write(_rows([1, 2], "a"))  # compacted: in the top level / above level 0, with changelog
    writer = table.with_options({"write-only": "true"})
    writer.write(_rows([2, 3], "b"))  # level 0 only: its changelog comes with the next compaction
    first = _drain(table.stream(consumer_id="c", stop_when_caught_up=True))
    assert apply_all({}, [t for _, t in first], "id") == as_model(_rows([1, 2], "a"), "id")
    table.compact(full=True)
    rest = _drain(table.stream(consumer_id="c", stop_when_caught_up=True))
    model = apply_all(apply_all({}, [t for _, t in first], "id"), [t for _, t in rest], "id")
    assert model == as_model(table.read(), "id")
    kinds = [k for _, t in rest for k in t.column("rowkind").to_pylist()]
    assert sorted(kinds) == ["+I", "+U", "-U"]  # key 3 inserted, key 2 updated: each change once


def test_bad_stream_options(table: lsmlake.Table) -> None:
    table.write(_rows([1], "a"))
    with pytest.raises(UnsupportedError, match="not supported for streaming"):
        next(iter(table.stream(mode="from-file-creation-time")))
    with pytest.raises(InvalidOptionError, match=r"scan\.mode"):  # not a Paimon mode at all
        table.stream(mode="latest-delta")
    with pytest.raises(InvalidOptionError, match=r"needs scan\.snapshot-id"):
        next(iter(table.stream(mode="from-snapshot-full")))
    with pytest.raises(UnsupportedError, match="tag"):
        next(iter(table.with_options({"scan.tag-name": "x"}).stream()))
    with pytest.raises(ValueError, match="poll_interval"):
        table.stream(poll_interval=-1)


@pytest.mark.parametrize("bucket", ["-1", "-2"], ids=["dynamic", "postpone"])
def test_dynamic_and_postpone_bucket_tables(catalog: lsmlake.Catalog, bucket: str) -> None:
    table = catalog.create_table("db.b", schema=SCHEMA, primary_key=["id"], options={"bucket": bucket})
    table.write(_rows([1, 2, 3], "a"))
    table.write(_rows([2, 4], "b"))
    # the first plan also delivers rows still waiting in the postpone bucket (newest last)
    follower = table.stream(consumer_id="f", stop_when_caught_up=True)
    model = apply_all({}, follower, "id")
    expected = pa.concat_tables([_rows([1, 3], "a"), _rows([2, 4], "b")])
    assert model == as_model(expected, "id")
    table.compact(full=True)  # postponed rows move to real buckets: a COMPACT snapshot, no new changes
    table.delete(pa.table({"id": [3]}))
    table.write(_rows([5], "c"))
    model = apply_all(model, table.stream(consumer_id="f", stop_when_caught_up=True), "id")
    table.compact(full=True)  # batch reads of a postpone table see rows once compacted
    assert list(table.stream(consumer_id="f", stop_when_caught_up=True)) == []
    assert model == as_model(table.read(), "id")


def test_append_table_streams_inserts(catalog: lsmlake.Catalog) -> None:
    table = catalog.create_table("db.log", schema=SCHEMA)
    table.write(_rows([1, 2], "a"))
    got = _drain(table.stream(stop_when_caught_up=True, consumer_id="a"))
    table.write(_rows([1], "b"))
    got += _drain(table.stream(stop_when_caught_up=True, consumer_id="a"))
    rows = [r for _, t in got for r in t.to_pylist()]
    assert sorted((r["rowkind"], r["id"], r["name"]) for r in rows) == [
        ("+I", 1, "a1"),
        ("+I", 1, "b1"),
        ("+I", 2, "a2"),
    ]
