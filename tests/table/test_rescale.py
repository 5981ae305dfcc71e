"""CALL sys.rescale / Table.rescale: a fixed-bucket table (or one partition) rewritten into a new bucket
count: the rows equal a model before and after, every file sits in the bucket Paimon's hash gives its
keys for the new count, the schema keeps its `bucket` (as Paimon's RescaleAction: writes into a partition
of another count are refused until ALTER TABLE sets it), and reads, writes and compaction go on after
the ALTER."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lsmlake
import lsmlake.table
from lsmlake.core.bucket import bucket_ids
from lsmlake.errors import CommitConflictError, InvalidPartitionSpecError, UnsupportedError
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.restore import RestoredState
from lsmlake.sql import SqlError, execute

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("v", pa.int64()),
    ]
)
Model = dict[tuple[str, int], int]


def _table(tmp_path: Path, buckets: int = 2) -> tuple[lsmlake.Catalog, lsmlake.Table, Model]:
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": str(buckets), "deletion-vectors.enabled": "true"},
    )
    model: Model = {}
    rng = random.Random(7)
    for step in range(6):
        rows = [(rng.choice("abc"), rng.randrange(60), step * 100 + i) for i in range(25)]
        _write(t, model, rows)
        gone = rng.sample(sorted(model), 4)
        t.delete(pa.table({"dt": [d for d, _ in gone], "id": [i for _, i in gone]}))
        for key in gone:
            del model[key]
    t.delete("dt = 'c'")  # partition c keeps files but no live row
    for key in [k for k in model if k[0] == "c"]:
        del model[key]
    return cat, t, model


def _write(t: lsmlake.Table, model: Model, rows: list[tuple[str, int, int]]) -> None:
    t.write(
        pa.table(
            {"dt": [r[0] for r in rows], "id": [r[1] for r in rows], "v": [r[2] for r in rows]}, schema=SCHEMA
        )
    )
    for d, i, v in rows:
        model[(d, i)] = v


def _rows(t: lsmlake.Table) -> Model:
    r = t.read()
    return {
        (d, i): v
        for d, i, v in zip(
            r.column("dt").to_pylist(), r.column("id").to_pylist(), r.column("v").to_pylist(), strict=True
        )
    }


def _layout(t: lsmlake.Table) -> dict[str, set[int]]:
    """Partition -> the total bucket counts of its live files; asserts each file's keys hash to its bucket."""
    snapshot = t.snapshot_manager.latest()
    assert snapshot is not None
    locator = FileLocator(t)
    totals: dict[str, set[int]] = {}
    for (partition, bucket), entries in RestoredState.load(t.io, t.paths, snapshot).files.items():
        dt = str(locator.partition_values(partition)[0])
        for e in entries:
            totals.setdefault(dt, set()).add(e.total_buckets)
            ids = pq.read_table(locator.data_file(partition, bucket, e.file), columns=["id"]).column("id")
            expected = bucket_ids([ids], [t.schema.field("id").type], e.total_buckets)
            assert set(expected.tolist()) <= {bucket}, (dt, bucket, e.total_buckets)
    return totals


def test_the_whole_table_is_rescaled(tmp_path: Path) -> None:
    cat, t, model = _table(tmp_path)
    assert _rows(t) == model
    before = t.snapshot_manager.latest_id()
    sid = t.rescale(5)
    assert sid is not None and sid > (before or 0)
    kinds = [t.snapshot_manager.snapshot(i).commit_kind for i in range((before or 0) + 1, sid + 1)]
    assert kinds[0] == "OVERWRITE" and set(kinds[1:]) <= {"COMPACT"}
    t = cat.get_table("db.t")
    assert t.options.bucket == 2  # the schema stays, as in Paimon
    assert _rows(t) == model
    # c had no live row: a dynamic overwrite (Paimon's) leaves its files alone
    assert _layout(t) == {"a": {5}, "b": {5}, "c": {2}}
    with pytest.raises(CommitConflictError, match=r"written with 5 buckets.*'bucket' = '5'"):
        t.write(pa.table({"dt": ["a"], "id": [1], "v": [1]}, schema=SCHEMA))
    t = t.alter(lsmlake.schema_change.set_option("bucket", "5"))
    _write(t, model, [("a", i, 1000 + i) for i in range(0, 80, 3)])
    with pytest.raises(CommitConflictError, match="written with 2 buckets"):
        t.write(pa.table({"dt": ["c"], "id": [1], "v": [5]}, schema=SCHEMA))
    t.rescale(partitions={"dt": "c"})  # the table's count now: c follows
    _write(t, model, [("c", 1, 5)])
    t.delete(pa.table({"dt": ["b"], "id": [next(i for d, i in sorted(model) if d == "b")]}))
    del model[next(k for k in sorted(model) if k[0] == "b")]
    t.compact(full=True)
    assert _rows(t) == model and all(v == {5} for v in _layout(t).values())


def test_alter_bucket_then_rescale(tmp_path: Path) -> None:
    """Paimon's documented way: ALTER TABLE SET ('bucket' = 'n'), then rescale without a count. Until the
    rescale the old partitions refuse writes and new partitions take the new count."""
    _, t, model = _table(tmp_path)
    t = t.alter(lsmlake.schema_change.set_option("bucket", "3"))
    with pytest.raises(CommitConflictError, match="written with 2 buckets"):
        t.write(pa.table({"dt": ["a"], "id": [1], "v": [1]}, schema=SCHEMA))
    _write(t, model, [("new", 1, 1)])
    assert _layout(t)["new"] == {3}
    t.rescale()
    assert all(v == {3} for k, v in _layout(t).items() if k != "c")
    _write(t, model, [("a", 1, 9), ("b", 2, 9)])
    assert _rows(t) == model
    with pytest.raises(UnsupportedError, match="from one fixed count to another"):
        t.alter(lsmlake.schema_change.set_option("bucket", "-1"))


def test_one_partition_is_rescaled(tmp_path: Path) -> None:
    cat, t, model = _table(tmp_path)
    t.rescale(3, {"dt": "a"})
    assert t.options.bucket == 2 and cat.get_table("db.t").options.bucket == 2  # the schema stays
    layout = _layout(t)
    assert layout["a"] == {3} and layout["b"] == {2}
    assert _rows(t) == model
    _write(t, model, [("b", 7, 1)])  # other partitions write as before
    with pytest.raises(CommitConflictError, match=r"written with 3 buckets.*rescale"):
        t.write(pa.table({"dt": ["a"], "id": [1], "v": [1]}, schema=SCHEMA))
    assert _rows(t) == model
    t.rescale(partitions={"dt": "a"})  # back to the table's count
    assert _layout(t)["a"] == {2}
    _write(t, model, [("a", 1, 2)])
    assert _rows(t) == model


def test_the_sql_procedure(tmp_path: Path) -> None:
    cat, t, model = _table(tmp_path)
    res = execute(cat, "CALL sys.rescale(`table` => 'db.t', bucket_num => 4)")[-1]
    assert res.rows == [{"result": True}] and "to 4 bucket(s)" in res.message
    execute(cat, "CALL sys.rescale('db.t', 1, 'dt=b')")
    t = cat.get_table("db.t")
    layout = _layout(t)
    assert t.options.bucket == 2 and layout["a"] == {4} and layout["b"] == {1}
    assert _rows(t) == model


def test_bad_input(tmp_path: Path) -> None:
    cat, t, _ = _table(tmp_path)
    with pytest.raises(ValueError, match="bucket_num must be a positive integer"):
        t.rescale(0)
    with pytest.raises(InvalidPartitionSpecError, match="has no data files"):
        t.rescale(3, {"dt": "zzz"})
    with pytest.raises(InvalidPartitionSpecError, match="unknown column"):
        t.rescale(3, {"nope": "a"})
    with pytest.raises(SqlError, match="one partition"):
        execute(cat, "CALL sys.rescale('db.t', 3, 'dt=a;dt=b')")
    with pytest.raises(SqlError, match="must be an integer"):
        execute(cat, "CALL sys.rescale('db.t', 'x')")
    dyn = cat.create_table("db.d", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "-1"})
    with pytest.raises(UnsupportedError, match="fixed-bucket"):
        dyn.rescale(2)
    empty = cat.create_table("db.e", schema=SCHEMA, primary_key=["dt", "id"], options={"bucket": "2"})
    with pytest.raises(ValueError, match="no snapshot"):
        empty.rescale(3)
    plain = cat.create_table("db.u", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    plain.write(pa.table({"dt": ["a", "b"], "id": [1, 2], "v": [1, 2]}, schema=SCHEMA))
    with pytest.raises(InvalidPartitionSpecError, match="not partitioned"):
        plain.rescale(3, {"dt": "a"})
    plain.rescale(3)
    plain = cat.get_table("db.u")
    assert plain.options.bucket == 2 and plain.read().sort_by("id").column("v").to_pylist() == [1, 2]
    with pytest.raises(CommitConflictError, match="written with 3 buckets"):
        plain.write(pa.table({"dt": ["a"], "id": [3], "v": [3]}, schema=SCHEMA))


def test_a_postpone_bucket_partition_is_rescaled(tmp_path: Path) -> None:
    """A postpone-bucket table's partition gets a real bucket count (which bucket_num must give, as in
    Paimon); rows postponed later are compacted into that count."""
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.p", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "-2"}
    )
    model: Model = {}
    _write(t, model, [("a", i, i) for i in range(12)] + [("b", 1, 1)])
    t.compact(full=True)
    with pytest.raises(ValueError, match="bucket_num"):
        t.rescale(partitions={"dt": "a"})
    t.rescale(4, {"dt": "a"})
    assert _layout(t) == {"a": {4}, "b": {1}} and _rows(t) == model
    _write(t, model, [("a", i, 100 + i) for i in range(5, 20)])
    t.compact(full=True)
    assert _layout(t) == {"a": {4}, "b": {1}} and _rows(t) == model
    assert cat.get_table("db.p").options.bucket == -2


@pytest.mark.parametrize("whole_table", [False, True])
def test_a_postpone_bucket_rescale_keeps_the_rows_still_postponed(tmp_path: Path, whole_table: bool) -> None:
    """Rows written to a postpone-bucket table but not compacted yet are not read by the rescale (a batch
    read skips them, as Paimon's); its overwrite keeps them, as Paimon's only overwrites real buckets
    there, and a compaction then places them, newest winning, in the new count."""
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.p", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "-2"}
    )
    model: Model = {}
    _write(t, model, [("a", i, i) for i in range(12)])
    t.compact(full=True)
    _write(t, model, [("a", i, 100 + i) for i in range(6, 20)])  # still postponed
    if whole_table:
        t.rescale(3)
    else:
        t.rescale(3, {"dt": "a"})
    t.compact(full=True)
    assert _layout(t) == {"a": {3}} and _rows(t) == model


def _racing_plan(monkeypatch: pytest.MonkeyPatch, race: Callable[[], object]) -> list[int | None]:
    """Make ``race`` run right after the rescale planned (read the snapshot it rewrites); the returned
    list gets the latest snapshot id after the race."""
    planned = lsmlake.table.plan_rescale
    after: list[int | None] = []

    def plan(table: lsmlake.Table, *args: Any, **kwargs: Any) -> Any:
        out = planned(table, *args, **kwargs)
        race()
        after.append(table.snapshot_manager.latest_id())
        return out

    monkeypatch.setattr(lsmlake.table, "plan_rescale", plan)
    return after


@pytest.mark.parametrize("race", ["write", "compact", "overwrite"])
def test_a_commit_during_a_rescale_fails_the_rescale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, race: str
) -> None:
    """As Paimon's RescaleAction (commit.strict-mode.last-safe-snapshot = the snapshot it read): another
    writer's commit meanwhile fails the rescale instead of being overwritten away."""
    cat, t, model = _table(tmp_path)
    other = cat.get_table("db.t")
    races: dict[str, Callable[[], object]] = {
        "write": lambda: _write(other, model, [("a", 1000, 1)]),
        "compact": lambda: other.compact(full=True),
        "overwrite": lambda: other.overwrite(pa.table({"dt": ["zz"], "id": [1], "v": [1]}, schema=SCHEMA)),
    }
    if race == "overwrite":
        model[("zz", 1)] = 1
    after_race = _racing_plan(monkeypatch, races[race])
    with pytest.raises(CommitConflictError, match="strict-mode"):
        t.rescale(3)
    assert after_race == [t.snapshot_manager.latest_id()]  # the rescale published nothing
    assert _rows(cat.get_table("db.t")) == model


def test_a_postponed_write_during_a_rescale_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Paimon's strict mode lets an APPEND of postponed rows through: the rescale keeps them."""
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.p", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "-2"}
    )
    model: Model = {}
    _write(t, model, [("a", i, i) for i in range(8)])
    t.compact(full=True)
    streaming = {"postpone.batch-write-fixed-bucket": "false"}  # rows to the postpone bucket, as Flink streams
    racing = cat.get_table("db.p").with_dynamic_options(streaming)
    _racing_plan(monkeypatch, lambda: _write(racing, model, [("a", 3, 33), ("a", 9, 9)]))
    assert t.rescale(2) is not None
    t.compact(full=True)
    assert _layout(t) == {"a": {2}} and _rows(t) == model


def test_the_strict_mode_option(tmp_path: Path) -> None:
    """commit.strict-mode.last-safe-snapshot on any writer: another user's COMPACT or OVERWRITE since
    that snapshot fails the commit; their APPENDs fail only an OVERWRITE."""
    cat, t, model = _table(tmp_path)
    safe = t.snapshot_manager.latest_id()
    only_append = {"write-only": "true"}
    strict = cat.get_table("db.t").with_dynamic_options(
        {"commit.strict-mode.last-safe-snapshot": str(safe), **only_append}
    )
    _write(cat.get_table("db.t").with_dynamic_options(only_append), model, [("a", 500, 1)])
    _write(strict, model, [("a", 501, 1)])  # an APPEND after an APPEND: committed
    with pytest.raises(CommitConflictError, match="APPEND snapshot"):
        strict.overwrite(pa.table({"dt": ["a"], "id": [1], "v": [1]}, schema=SCHEMA))
    cat.get_table("db.t").compact(full=True)
    with pytest.raises(CommitConflictError, match="COMPACT snapshot"):
        _write(strict, {}, [("a", 502, 1)])
    assert _rows(cat.get_table("db.t")) == model
