"""Dynamic, cross-partition and postpone bucket modes against a dict model (random upserts, deletes,
compactions over many commits): reads equal the model and no key is live in two buckets or partitions."""

from __future__ import annotations

import tempfile
from collections import Counter
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core.bucket import hash_rows
from lsmlake.metadata.hash_index import read_hash_index
from lsmlake.metadata.index_manifest import HASH_INDEX, read_index_manifest
from lsmlake.read.split_read import ReadContext, read_split_table

SCHEMA = pa.schema([("k", pa.int32()), ("p", pa.string()), ("v", pa.int64())])
KEYS = st.integers(0, 40)
PARTS = st.sampled_from(["a", "b", "c"])
WRITE = st.tuples(
    st.just("write"), st.lists(st.tuples(KEYS, PARTS, st.integers(-9, 9)), min_size=1, max_size=25)
)
DELETE = st.tuples(st.just("delete"), st.lists(st.tuples(KEYS, PARTS), min_size=1, max_size=8))
COMPACT = st.tuples(st.just("compact"), st.booleans())
OPS = st.lists(st.one_of(WRITE, WRITE, DELETE, COMPACT), min_size=1, max_size=10)
OPTIONS = st.fixed_dictionaries(
    {
        "dynamic-bucket.target-row-num": st.sampled_from(["3", "7", "1000"]),
        "dynamic-bucket.initial-buckets": st.sampled_from(["1", "2", "3"]),
        "dynamic-bucket.max-buckets": st.sampled_from(["-1", "4"]),
        "deletion-vectors.enabled": st.sampled_from(["false", "true"]),
    }
)
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def new_table(primary_key: list[str], options: dict[str, str]) -> lsmlake.Table:
    catalog = lsmlake.Catalog(tempfile.mkdtemp(prefix="lsmlake-buckets-"))
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=primary_key, partition_keys=["p"], options=options
    )


def rows_table(rows: list[tuple[Any, ...]], step: int) -> pa.Table:
    # the value encodes the op step, so a stale row is told apart from the current one
    return pa.table(
        {"k": [r[0] for r in rows], "p": [r[1] for r in rows], "v": [r[2] * 100 + step for r in rows]},
        schema=SCHEMA,
    )


def live_by_bucket(table: lsmlake.Table) -> list[tuple[str, int, int]]:
    """(partition, bucket, key) of every live row, read split by split."""
    ctx = ReadContext(table.io, table.root, table.schema, table.options, ("k", "p"))
    out = []
    for split in table.scan().splits():
        rows = read_split_table(ctx, split)
        out += [
            (p, split.bucket, k)
            for k, p in zip(rows.column("k").to_pylist(), rows.column("p").to_pylist(), strict=True)
        ]
    return out


def check_hash_index(table: lsmlake.Table, live: list[tuple[str, int, int]]) -> None:
    """Every live key's hash is in the HASH file of its bucket (dynamic mode, not cross-partition)."""
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.index_manifest
    files = {
        (e.partition, e.bucket): set(read_hash_index(table.io, table.paths, e.index_file).tolist())
        for e in read_index_manifest(table.io, table.paths.manifest(snapshot.index_manifest))
        if e.index_file.index_type == HASH_INDEX
    }
    by_bucket: dict[tuple[str, int], list[int]] = {}
    for p, b, k in live:
        by_bucket.setdefault((p, b), []).append(k)
    partitions = {split.partition_values[0]: split.partition for split in table.scan().splits()}
    for (p, b), keys in by_bucket.items():
        hashes = hash_rows([pa.array(keys, pa.int32())], [table.schema.field("k").type]).tolist()
        assert set(hashes) <= files[(partitions[p], b)]


def apply_op(table: lsmlake.Table, model: dict[tuple[int, str], int], step: int, op: str, arg: Any) -> None:
    """Run one generated operation on a table keyed by (k, p) and on its model (compaction: no change)."""
    if op == "write":
        table.write(rows_table(arg, step))
        model.update({(k, p): v * 100 + step for k, p, v in arg})
    elif op == "delete":
        table.delete(pa.table({"k": [k for k, _ in arg], "p": [p for _, p in arg]}, schema=SCHEMA.remove(2)))
        for k, p in arg:
            model.pop((k, p), None)
    else:
        table.compact(full=arg)


@SETTINGS
@given(ops=OPS, options=OPTIONS)
def test_dynamic_bucket_model(ops: list[Any], options: dict[str, str]) -> None:
    table = new_table(["k", "p"], options)
    model: dict[tuple[int, str], int] = {}
    for step, (op, arg) in enumerate(ops):
        apply_op(table, model, step, op, arg)
        got = {(r["k"], r["p"]): r["v"] for r in table.read().to_pylist()}
        assert got == model
    live = live_by_bucket(table)
    assert not [key for key, n in Counter((p, k) for p, _, k in live).items() if n > 1]
    max_buckets = int(options["dynamic-bucket.max-buckets"])
    if max_buckets > 0:
        assert all(b < max_buckets for _, b, _ in live)
    if live:
        check_hash_index(table, live)
    target = int(options["dynamic-bucket.target-row-num"])
    if max_buckets == -1:  # buckets fill up to the target before new ones open
        per_bucket = Counter((p, b) for p, b, _ in live)
        assert all(n <= target for n in per_bucket.values())


def apply_cross_partition_write(
    model: dict[int, tuple[str, int]], engine: str, rows: list[tuple[int, str, int]]
) -> None:
    """A batch of (key, partition, value) rows on the model, as Java's ExistingProcessor of each merge
    engine has it: deduplicate moves a key to its last partition; partial-update and aggregation (sum)
    keep it where it lives (or where its first row put it) and update it there; first-row keeps the
    first row and ignores the rest."""
    for k, p, v in rows:
        held = model.get(k)
        if held is None or engine == "deduplicate":
            model[k] = (p, v)
        elif engine == "partial-update":
            model[k] = (held[0], v)
        elif engine == "aggregation":
            model[k] = (held[0], held[1] + v)


CROSS_ENGINES = {
    "deduplicate": {},
    "partial-update": {"partial-update.remove-record-on-delete": "true"},
    "aggregation": {"fields.v.aggregate-function": "sum", "aggregation.remove-record-on-delete": "true"},
    "first-row": {},  # refuses deletes and deletion vectors: its delete ops are skipped, dv forced off
}


@settings(SETTINGS, max_examples=40)  # more examples: engine x write-only x deletion vectors
@given(
    ops=OPS,
    options=OPTIONS,
    engine=st.sampled_from(list(CROSS_ENGINES)),
    write_only=st.sampled_from(["false", "true"]),
)
def test_cross_partition_model(ops: list[Any], options: dict[str, str], engine: str, write_only: str) -> None:
    if engine == "first-row":
        options = {**options, "deletion-vectors.enabled": "false"}
    options = {**options, **CROSS_ENGINES[engine], "merge-engine": engine, "write-only": write_only}
    table = new_table(["k"], options)
    dv = options["deletion-vectors.enabled"] == "true"
    # with deletion vectors, merge-on-read also reads level 0 (which batch reads skip, e.g. under write-only)
    every_level = table.with_options({"deletion-vectors.merge-on-read": "true"}) if dv else table
    skips_level0 = write_only == "true" and (dv or engine == "first-row")
    model: dict[int, tuple[str, int]] = {}
    for step, (op, arg) in enumerate(ops):
        if op == "write":
            table.write(rows_table(arg, step))
            apply_cross_partition_write(model, engine, [(k, p, v * 100 + step) for k, p, v in arg])
        elif op == "delete":
            if engine == "first-row":
                continue
            table.delete(pa.table({"k": [k for k, _ in arg]}, schema=pa.schema([("k", pa.int32())])))
            for k, _ in arg:
                model.pop(k, None)
        else:
            table.compact(full=arg)
        if not skips_level0 or (op == "compact" and arg):
            got = {r["k"]: (r["p"], r["v"]) for r in table.read().to_pylist()}
            assert got == model
        if engine != "first-row":
            rows = every_level.read().to_pylist()
            assert len({r["k"] for r in rows}) == len(rows)  # every key live in one partition
            assert {r["k"]: (r["p"], r["v"]) for r in rows} == model
    table.compact(full=True)
    assert {r["k"]: (r["p"], r["v"]) for r in table.read().to_pylist()} == model
    live = live_by_bucket(table)
    assert not [k for k, n in Counter(k for _, _, k in live).items() if n > 1]


@SETTINGS
@given(ops=OPS, bucket_num=st.sampled_from([None, "1", "3"]), dv=st.booleans(), fixed=st.booleans())
def test_postpone_bucket_model(ops: list[Any], bucket_num: str | None, dv: bool, fixed: bool) -> None:
    """With ``postpone.batch-write-fixed-bucket`` (fixed) writes are read at once, in one bucket per new
    partition (lsmlake's one writer); without, rows wait for a compaction, which picks the count."""
    options = {
        "bucket": "-2",
        "deletion-vectors.enabled": str(dv).lower(),
        "postpone.batch-write-fixed-bucket": str(fixed).lower(),
    }
    if bucket_num is not None:
        options["postpone.default-bucket-num"] = bucket_num
    table = new_table(["k", "p"], options)
    model: dict[tuple[int, str], int] = {}
    visible: dict[tuple[int, str], int] = {}
    for step, (op, arg) in enumerate(ops):
        apply_op(table, model, step, op, arg)
        if op == "compact" or fixed:
            visible = dict(model)
        got = {(r["k"], r["p"]): r["v"] for r in table.read().to_pylist()}
        assert got == visible  # postponed rows stay invisible until compaction
    table.compact()
    assert {(r["k"], r["p"]): r["v"] for r in table.read().to_pylist()} == model
    live = live_by_bucket(table)
    assert not [key for key, n in Counter((p, k) for p, _, k in live).items() if n > 1]
    expected = 1 if fixed else int(bucket_num or 1)
    assert all(s.total_buckets == expected and 0 <= s.bucket < expected for s in table.scan().splits())
