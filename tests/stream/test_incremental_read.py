"""Incremental batch reads (`incremental-between`, by ids, timestamps and tags) in every scan mode."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from change_model import Model, apply_all, apply_changes, as_model

import lsmlake
from lsmlake.errors import InvalidOptionError, NoSuchSnapshotError, UnsupportedError
from lsmlake.stream.diff import diff_rows
from lsmlake.system.registry import SystemTable

SCHEMA = pa.schema(
    [("id", pa.int32()), ("dt", pa.string()), ("v", pa.int64()), ("tags", pa.list_(pa.string()))]
)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[lsmlake.Table, dict[int, Model]]:
    """A partitioned table after random upserts, deletes and compactions; the model at every snapshot
    (shared by the tests of this module, which only read it and add tags)."""
    catalog = lsmlake.Catalog(str(tmp_path_factory.mktemp("incremental") / "warehouse"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"}
    )
    rng = random.Random(7)
    models: dict[int, Model] = {}
    for step in range(12):
        if step % 5 == 4:
            sid = table.compact(full=step % 2 == 0)
        elif step % 3 == 2:
            keys = [(rng.randrange(30), rng.choice(["a", "b"])) for _ in range(4)]
            sid = table.delete(
                pa.table(
                    {"id": [k for k, _ in keys], "dt": [d for _, d in keys]},
                    schema=SCHEMA.remove(3).remove(2),
                )
            )
        else:
            n = rng.randrange(3, 12)
            ids = rng.sample(range(30), n)
            sid = table.write(
                pa.table(
                    {
                        "id": ids,
                        "dt": [rng.choice(["a", "b"]) for _ in ids],
                        "v": [rng.randrange(100) for _ in ids],
                        "tags": [[str(step)] * (i % 3) for i in ids],
                    },
                    schema=SCHEMA,
                )
            )
        if sid is not None:
            models[sid] = _model(table.read(snapshot_id=sid))
    return table, models


def _model(t: pa.Table) -> Model:
    return {(r["id"], r["dt"]): r for r in t.to_pylist()}


def _apply(model: Model, changes: pa.Table) -> Model:
    """Apply changes to a model keyed by (id, dt)."""
    keys = [f"{i}/{d}" for i, d in zip(changes["id"].to_pylist(), changes["dt"].to_pylist(), strict=True)]
    flat = {f"{k[0]}/{k[1]}": v for k, v in model.items()}
    out = apply_changes(flat, changes.append_column("_k", pa.array(keys, pa.string())), "_k")
    return {(r["id"], r["dt"]): {k: v for k, v in r.items() if k != "_k"} for r in out.values()}


def _between(table: lsmlake.Table, start: int, end: int, mode: str) -> lsmlake.Table:
    return table.with_options(
        {"incremental-between": f"{start},{end}", "incremental-between-scan-mode": mode}
    )


@pytest.mark.parametrize("mode", ["delta", "diff", "auto"])
def test_changes_turn_the_start_state_into_the_end_state(
    history: tuple[lsmlake.Table, dict[int, Model]], mode: str
) -> None:
    table, models = history
    ids = sorted(models)
    audit = SystemTable(table, "audit_log")
    for start, end in [(ids[0], ids[-1]), (ids[2], ids[6]), (ids[3], ids[4]), (0, ids[5])]:
        changes = audit.with_options(
            {"incremental-between": f"{start},{end}", "incremental-between-scan-mode": mode}
        ).read()
        before = models.get(start, {})
        assert _apply(dict(before), changes) == models[end], (start, end)
        plain = _between(table, start, end, mode).read()
        assert plain.schema == table.read().schema
        added = changes.filter(pc.is_in(changes["rowkind"], value_set=pa.array(["+I", "+U"])))
        assert plain.num_rows == added.num_rows
        if mode == "diff":  # exactly the keys whose rows differ
            differ = {k for k in set(before) | set(models[end]) if before.get(k) != models[end].get(k)}
            assert len(changes) == len(differ)


def test_changelog_mode_without_a_changelog_producer_is_empty(
    history: tuple[lsmlake.Table, dict[int, Model]],
) -> None:
    table, models = history
    assert _between(table, 1, max(models), "changelog").read().num_rows == 0


def test_same_start_and_end_and_limit_and_filter(history: tuple[lsmlake.Table, dict[int, Model]]) -> None:
    table, models = history
    last = max(models)
    assert _between(table, 3, 3, "delta").read().num_rows == 0
    assert _between(table, 0, last, "delta").read(limit=2).num_rows == 2
    filtered = _between(table, 0, last, "diff").read(filter="dt = 'a' AND v > 10", columns=["id", "v"])
    expected = sorted(r["id"] for r in models[last].values() if r["dt"] == "a" and r["v"] > 10)
    assert sorted(filtered.column("id").to_pylist()) == expected
    assert filtered.column_names == ["id", "v"]


def test_between_timestamps(history: tuple[lsmlake.Table, dict[int, Model]]) -> None:
    table, models = history
    ids = sorted(models)
    start, end = ids[1], ids[5]
    t0, t1 = table.snapshot(start).time_millis, table.snapshot(end).time_millis
    by_time = table.with_options(
        {"incremental-between-timestamp": f"{t0},{t1}", "incremental-between-scan-mode": "diff"}
    )
    by_id = _between(table, start, end, "diff")
    assert by_time.read().sort_by("id").equals(by_id.read().sort_by("id"))
    before_all = table.snapshot(ids[0]).time_millis - 1000
    everything = table.with_options({"incremental-between-timestamp": f"{before_all},{t1}"}).read()
    assert everything.num_rows == _between(table, 0, end, "delta").read().num_rows


def test_between_tags_is_a_diff_unless_asked_otherwise(
    history: tuple[lsmlake.Table, dict[int, Model]],
) -> None:
    table, models = history
    ids = sorted(models)
    table.create_tag("t1", ids[1])
    table.create_tag("t2", ids[7])
    tagged = table.with_options({"incremental-between": "t1,t2"})
    assert tagged.read().sort_by("id").equals(_between(table, ids[1], ids[7], "diff").read().sort_by("id"))
    as_delta = table.with_options(
        {"incremental-between": "t1,t2", "incremental-between-tag-to-snapshot": "true"}
    )
    assert as_delta.read().num_rows == _between(table, ids[1], ids[7], "delta").read().num_rows
    with pytest.raises(InvalidOptionError, match="older than tag"):
        table.with_options({"incremental-between": "t2,t1"}).read()


def test_bad_incremental_options(history: tuple[lsmlake.Table, dict[int, Model]]) -> None:
    table, models = history
    last = max(models)
    with pytest.raises(InvalidOptionError, match="start,end"):
        table.with_options({"incremental-between": "3"}).read()
    with pytest.raises(InvalidOptionError, match="neither two tags"):
        table.with_options({"incremental-between": "x,y"}).read()
    with pytest.raises(InvalidOptionError, match="before starting"):
        _between(table, 4, 2, "delta").read()
    with pytest.raises(NoSuchSnapshotError, match="outside"):
        _between(table, 1, last + 5, "delta").read()
    with pytest.raises(InvalidOptionError, match="not one of"):
        _between(table, 1, 2, "sideways").read()


def test_diff_needs_a_primary_key(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.log", schema=pa.schema([("x", pa.int64())]))
    t.write(pa.table({"x": [1]}))
    t.write(pa.table({"x": [2]}))
    assert t.with_options({"incremental-between": "1,2"}).read().column("x").to_pylist() == [2]
    with pytest.raises(UnsupportedError, match="primary-key"):
        _between(t, 1, 2, "diff").read()


def test_diff_rows_kinds_and_nested_values() -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.list_(pa.int64())), ("f", pa.float64())])
    before = pa.table(
        {"k": [1, 2, 3, 4], "v": [[1], [2], None, [4]], "f": [1.0, None, 3.0, 4.0]}, schema=schema
    )
    after = pa.table(
        {"k": [5, 4, 2, 1], "v": [[5], [4, 4], [2], [1]], "f": [5.0, 4.0, None, 1.5]}, schema=schema
    )
    out = diff_rows(before, after, ["k"])
    assert out.to_pylist() == [
        {"rowkind": "+U", "k": 1, "v": [1], "f": 1.5},
        {"rowkind": "-D", "k": 3, "v": None, "f": 3.0},
        {"rowkind": "+U", "k": 4, "v": [4, 4], "f": 4.0},
        {"rowkind": "+I", "k": 5, "v": [5], "f": 5.0},
    ]
    assert diff_rows(before.slice(0, 0), after.slice(0, 0), ["k"]).num_rows == 0
    with pytest.raises(ValueError, match="primary-key"):
        diff_rows(before, after, [])
    assert as_model(out, "k")[4]["v"] == [4, 4]


def test_sql_hints_read_incremental_and_audit_log(catalog: lsmlake.Catalog) -> None:
    from lsmlake.sql import Session

    t = catalog.create_table(
        "db.s", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"]
    )
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.delete(pa.table({"id": [1]}))
    t.write(pa.table({"id": [3], "v": ["c"]}))
    session = Session(catalog, database="db")
    hint = "/*+ OPTIONS('incremental-between'='1,3') */"
    (plain,) = session.run(f"SELECT * FROM s {hint} ORDER BY id")
    assert plain.table is not None and plain.table.to_pylist() == [{"id": 3, "v": "c"}]
    (audit,) = session.run(f"SELECT rowkind, id FROM `s$audit_log` {hint} ORDER BY id")
    assert audit.table is not None and audit.table.to_pylist() == [
        {"rowkind": "-D", "id": 1},
        {"rowkind": "+I", "id": 3},
    ]


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_changelog_mode_between_commits(catalog: lsmlake.Catalog, producer: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table(
        "db.cl", schema=schema, primary_key=["id"], options={"bucket": "2", "changelog-producer": producer}
    )
    rng = random.Random(3)
    models: dict[int, Model] = {}
    for step in range(6):
        if step % 3 == 2:
            t.delete(pa.table({"id": rng.sample(range(20), 4)}, schema=pa.schema([schema.field("id")])))
        else:
            ids = rng.sample(range(20), 8)
            t.write(pa.table({"id": ids, "v": [rng.randrange(9) for _ in ids]}, schema=schema))
        sid = t.latest_snapshot().id  # type: ignore[union-attr]
        models[sid] = as_model(t.read(snapshot_id=sid), "id")
    audit = SystemTable(t, "audit_log")
    ends = sorted(models)
    for start, end in [(ends[0], ends[-1]), (ends[1], ends[3]), (0, ends[2])]:
        options = {"incremental-between": f"{start},{end}"}  # auto: changelog for these producers
        changes = audit.with_options(options).read()
        assert apply_all(dict(models.get(start, {})), [changes], "id") == models[end], (start, end)
        assert t.with_options(options).read().num_rows == sum(
            1 for k in changes.column("rowkind").to_pylist() if k in ("+I", "+U")
        )
