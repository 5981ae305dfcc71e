"""lsmlake writes, pypaimon 2.1.0 reads: seeded random scenarios checked against a Python model.

Every scenario runs its lsmlake commits in-process, then ONE pypaimon child process reads the latest
snapshot and every earlier snapshot (``scan.snapshot-id``) and the results are compared exactly with
the model (rows, values and Arrow types) that was recorded after each commit.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _interop_data import (
    VALUE_FIELDS,
    Key,
    PkModel,
    Row,
    as_model,
    assert_commit_kinds,
    assert_same_rows,
    assert_types,
    bucket_dir_of,
    commit_snapshots,
    data_files,
    date_days,
    random_values,
    sorted_rows,
    to_table,
    unique_values,
)
from pypaimon_env import PypaimonBatch

import lsmlake

pytestmark = pytest.mark.interop

SEEDS = (11, 20240607)
IDENT = "db.t"


def _catalog(tmp_path: Path) -> tuple[Path, lsmlake.Catalog]:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    cat = lsmlake.Catalog(str(warehouse))
    cat.create_database("db", exist_ok=True)
    return warehouse, cat


# --------------------------------------------------------------------------- primary-key tables


@dataclass(frozen=True)
class PkCase:
    id: str
    bucket: int
    keys: tuple[tuple[str, pa.DataType], ...]  # the non-partition primary-key columns
    partitions: tuple[tuple[str, pa.DataType, tuple[Any, ...]], ...] = ()  # name, type, values used
    options: tuple[tuple[str, str], ...] = ()
    pool: int = 24  # distinct non-partition keys that get written
    ghosts: int = 8  # distinct keys that are only ever deleted (never exist)

    @property
    def pk(self) -> list[str]:
        return [k for k, _ in self.keys] + [p for p, _, _ in self.partitions]

    @property
    def partition_keys(self) -> list[str]:
        return [p for p, _, _ in self.partitions]

    def schema(self, extra: Sequence[pa.Field] = ()) -> pa.Schema:
        fields = [pa.field(k, t) for k, t in self.keys]
        fields += [pa.field(p, t) for p, t, _ in self.partitions]
        return pa.schema(fields + list(VALUE_FIELDS) + list(extra))

    def table_options(self) -> dict[str, str]:
        return {"bucket": str(self.bucket), **dict(self.options)}


DT_STR = ("dt", pa.string(), ("2024-01-01", "2024-01-02", "2024-12-31"))
P_INT = ("p", pa.int32(), (-7, 0, 42, 2147483647))
DT_DATE = (
    "dt",
    pa.date32(),
    (dt.date(2024, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2000, 2, 29)),
)

PK_CASES = (
    PkCase("b1-int-write-only", 1, (("id", pa.int64()),), options=(("write-only", "true"),)),
    PkCase(
        "b4-int",
        4,
        (("id", pa.int64()),),
        options=(("manifest.merge-min-count", "2"), ("num-sorted-run.compaction-trigger", "2")),
    ),
    PkCase("b2-int-dv", 2, (("id", pa.int64()),), options=(("deletion-vectors.enabled", "true"),)),
    PkCase(
        "b4-str-smallbuf",
        4,
        (("k", pa.string()),),
        options=(("write-buffer-size", "1 kb"), ("page-size", "1 kb")),
    ),
    PkCase("b4-part-dt-str", 4, (("id", pa.int64()),), (DT_STR,)),
    PkCase(
        "b1-part-int",
        1,
        (("id", pa.int64()),),
        (P_INT,),
        options=(("write-buffer-size", "512 b"), ("page-size", "512 b")),
    ),
    PkCase("b4-part-date", 4, (("id", pa.int64()),), (DT_DATE,)),
    PkCase("b2-composite-2parts", 2, (("id", pa.int64()), ("k", pa.string())), (DT_STR, P_INT), pool=30),
    PkCase(
        "b3-orc-deflate-manifests",
        3,
        (("k", pa.string()),),
        (DT_DATE,),
        options=(("file.format", "orc"), ("manifest.compression", "deflate")),
    ),
    PkCase(
        "b2-avro-dv",
        2,
        (("id", pa.int64()),),
        options=(("file.format", "avro"), ("deletion-vectors.enabled", "true")),
    ),
    PkCase(
        "b3-avro-snappy-part",
        3,
        (("k", pa.string()),),
        (DT_STR,),
        options=(("file.format", "avro"), ("file.compression", "snappy")),
    ),
)


class PkScenario:
    """Draws keys and rows for one case and applies every operation to lsmlake and the model alike."""

    def __init__(self, case: PkCase, seed: int, table: lsmlake.Table, extra: Sequence[pa.Field] = ()) -> None:
        self.case = case
        self.rng = np.random.RandomState(seed)
        self.table = table
        self.schema = case.schema(extra)
        self.extra = tuple(extra)
        self.key_schema = pa.schema([self.schema.field(k) for k in case.pk])
        self.model = PkModel(case.pk)
        base = self._base_keys(case.pool + case.ghosts)
        self.live_base, self.ghost_base = base[: case.pool], base[case.pool :]
        self.history: list[tuple[int, dict[Key, Row]]] = []  # (snapshot id, model after it)
        self.touched: set[Key] = set()  # every key written or deleted

    def _base_keys(self, n: int) -> list[tuple[Any, ...]]:
        cols = [unique_values(self.rng, t, n) for _, t in self.case.keys]
        if len(cols) > 1:  # composite: shuffle the later columns so combinations vary
            for c in cols[1:]:
                self.rng.shuffle(c)
        return list(zip(*cols, strict=True))

    def _partition_value(self) -> tuple[Any, ...]:
        return tuple(values[self.rng.randint(len(values))] for _, _, values in self.case.partitions)

    def keys(self, n: int, *, ghost: bool = False) -> list[Key]:
        base = self.ghost_base if ghost else self.live_base
        return [tuple(base[self.rng.randint(len(base))]) + self._partition_value() for _ in range(n)]

    def existing_keys(self, n: int) -> list[Key]:
        present = list(self.model.rows)
        if not present:
            return []
        idx = self.rng.choice(len(present), size=min(n, len(present)), replace=False)
        return [present[i] for i in idx]

    def row(self, key: Key) -> Row:
        row = dict(zip(self.case.pk, key, strict=True))
        row.update(random_values(self.rng, VALUE_FIELDS))
        row.update(self.extra_values())
        return row

    def extra_values(self) -> Row:
        return {}

    def rows(self, keys: Sequence[Key]) -> pa.Table:
        return to_table([self.row(k) for k in keys], self.schema)

    def key_table(self, keys: Sequence[Key], *, full_rows: bool) -> pa.Table:
        if full_rows:
            return self.rows(keys)
        return to_table([dict(zip(self.case.pk, k, strict=True)) for k in keys], self.key_schema)

    # -- operations: each applies to the model in the order lsmlake must apply them

    def upsert_into(self, target: Any, data: pa.Table) -> Any:
        self.touched.update(self.model.key(r) for r in data.to_pylist())
        self.model.upsert(data.to_pylist())
        return target.write(data)

    def delete_into(self, target: Any, keys: pa.Table) -> Any:
        self.touched.update(self.model.key(r) for r in keys.to_pylist())
        self.model.delete(keys.to_pylist())
        return target.delete(keys)

    def record(self, sid: int | None) -> None:
        # A commit makes an APPEND snapshot and, when it compacted, COMPACT snapshot(s) after it.
        previous = self.history[-1][0] if self.history else 0
        assert isinstance(sid, int) and sid > previous, f"commit returned snapshot id {sid} after {previous}"
        self.history.append((sid, self.model.snapshot()))

    def run(self) -> None:
        rng, t = self.rng, self.table
        # 1: the first commit deletes keys that were never written (files holding only -D rows).
        self.record(self.delete_into(t, self.key_table(self.keys(5, ghost=True), full_rows=False)))
        # 2: plain upserts, duplicate keys inside the batch (the later row wins).
        keys = self.keys(40)
        keys += keys[:5]
        self.record(self.upsert_into(t, self.rows(keys)))
        # 3: upserts over existing and new keys.
        self.record(self.upsert_into(t, self.rows(self.existing_keys(12) + self.keys(18))))
        # 4: deletes of existing keys, of ghost keys and of one key twice.
        dels = self.existing_keys(10) + self.keys(4, ghost=True)
        dels.append(dels[0])
        self.record(self.delete_into(t, self.key_table(dels, full_rows=bool(rng.randint(2)))))
        # 5: one writer, many batches: upsert+delete of the same key, delete+re-insert, double upserts.
        with t.writer() as w:
            present = self.existing_keys(3)
            a, b, c = present if len(present) == 3 else self.keys(3)
            self.upsert_into(w, self.rows([a, *self.keys(6)]))
            self.delete_into(w, self.key_table([a], full_rows=False))  # a: upserted then deleted -> gone
            self.delete_into(w, self.key_table([b], full_rows=True))
            self.upsert_into(w, self.rows([b]))  # b: deleted then upserted -> present
            self.upsert_into(w, self.rows([c]))
            for _ in range(8):
                if rng.rand() < 0.6:
                    self.upsert_into(w, self.rows(self.keys(rng.randint(1, 12))))
                else:
                    mixed = self.existing_keys(rng.randint(1, 5)) + self.keys(rng.randint(0, 4), ghost=True)
                    self.delete_into(w, self.key_table(mixed, full_rows=bool(rng.randint(2))))
            self.upsert_into(w, self.rows([c]))  # c: upserted twice -> the last one
            # One batch that holds the same key many times.
            same = self.keys(1) * 4
            self.upsert_into(w, self.rows(same))
        self.record(w.snapshot_ids[-1] if w.snapshot_ids else None)
        # 6: only deletes of keys that do not exist.
        self.record(self.delete_into(t, self.key_table(self.keys(6, ghost=True), full_rows=False)))
        # 7: re-insert keys that were deleted before, plus a fresh upsert round.
        gone = [k for _, snap in self.history for k in snap if k not in self.model.rows]
        self.record(self.upsert_into(t, self.rows(list(dict.fromkeys(gone))[:15] + self.keys(5))))
        # 8: a writer that deletes every key of one partition value / bucket range, then writes a few.
        with t.writer() as w:
            if self.case.partitions:  # every key of one partition
                target = self._partition_value()
                victims = [k for k in self.model.rows if k[len(self.case.keys) :] == target]
            else:  # every other key
                victims = sorted(self.model.rows, key=repr)[::2]
            if victims:
                self.delete_into(w, self.key_table(victims, full_rows=False))
            self.upsert_into(w, self.rows(self.keys(3)))
        self.record(w.snapshot_ids[-1] if w.snapshot_ids else None)

    def partition_dirs(self) -> set[str]:
        """The partition directories Java's legacy naming gives every key ever written or deleted."""
        out = set()
        for key in self.touched:
            parts = key[len(self.case.keys) :]
            out.add(
                "/".join(
                    f"{name}={date_days(v) if isinstance(v, dt.date) else v}"
                    for (name, _, _), v in zip(self.case.partitions, parts, strict=True)
                )
            )
        return out


def _check_snapshots(
    warehouse: Path, scenario: PkScenario, *, label: str, extra_reads: Sequence[dict[str, Any]] = ()
) -> list[Any]:
    assert_commit_kinds(warehouse / "db.db" / "t", [sid for sid, _ in scenario.history])
    batch = PypaimonBatch()
    latest = batch.read(warehouse, IDENT)
    # Every snapshot, the COMPACT ones included, holds the model of the commit that made it.  With deletion
    # vectors a batch scan skips level-0 files, so a commit's APPEND snapshot still shows the previous
    # commit's rows, and the commit's compaction (level 0 is always forced up) must publish the new ones.
    dv = dict(scenario.case.options).get("deletion-vectors.enabled") == "true"
    travel = []
    previous: dict[Key, Row] = {}
    for ids, (_, snap) in zip(
        commit_snapshots([s for s, _ in scenario.history]), scenario.history, strict=True
    ):
        if dv:
            assert len(ids) >= 2, f"{label}: a deletion-vector commit made no COMPACT snapshot: {ids}"
        for sid in ids:
            want = previous if dv and sid != ids[-1] else snap
            travel.append((sid, want, batch.read(warehouse, IDENT, options={"scan.snapshot-id": str(sid)})))
            if dv:  # merge-on-read sees level 0 too
                travel.append(
                    (
                        sid,
                        snap,
                        batch.read(
                            warehouse,
                            IDENT,
                            options={"scan.snapshot-id": str(sid), "deletion-vectors.merge-on-read": "true"},
                        ),
                    )
                )
        previous = snap
    extra = [batch.read(warehouse, IDENT, **kw) for kw in extra_reads]
    results = batch.run()
    pk = scenario.case.pk
    assert_types(results[latest].schema, scenario.schema, label=f"{label} latest")
    assert_same_rows(
        as_model(results[latest], pk, label=label), scenario.history[-1][1], label=f"{label} latest"
    )
    for sid, snap, idx in travel:
        got = as_model(results[idx], pk, label=f"{label} snapshot {sid}")
        assert_same_rows(got, snap, label=f"{label} scan.snapshot-id={sid}")
    return [results[i] for i in extra]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", PK_CASES, ids=[c.id for c in PK_CASES])
def test_pk_table_random_commits(tmp_path: Path, case: PkCase, seed: int) -> None:
    warehouse, cat = _catalog(tmp_path)
    table = cat.create_table(
        IDENT,
        schema=case.schema(),
        primary_key=case.pk,
        partition_keys=case.partition_keys,
        options=case.table_options(),
    )
    scenario = PkScenario(case, seed, table)
    scenario.run()
    assert len(scenario.history) == 8
    projection = [f.name for f in reversed(VALUE_FIELDS)][:5] + case.pk[:1]
    (projected,) = _check_snapshots(
        warehouse, scenario, label=f"{case.id}/{seed}", extra_reads=[{"projection": projection}]
    )
    # A projection (value columns in a new order plus one key column) sees the same rows.
    assert projected.schema.names == projection
    want = sorted_rows(scenario.history[-1][1].values(), projection)
    assert sorted_rows(projected.to_pylist(), projection) == want

    # Files lie in <partition dirs Java's legacy naming gives>/bucket-<0..N-1>.
    table_dir = warehouse / "db.db" / "t"
    dirs = {bucket_dir_of(p) for p in data_files(table_dir)}
    buckets = {d.rsplit("/", 1)[-1] for d in dirs}
    assert buckets <= {f"bucket-{b}" for b in range(case.bucket)}, buckets
    if case.bucket > 1:
        assert len(buckets) > 1, f"all files landed in {buckets}"
    parts = {d.rsplit("/", 1)[0] if "/" in d else "" for d in dirs}
    assert parts == scenario.partition_dirs()


def test_date_partition_directory_is_epoch_days(tmp_path: Path) -> None:
    """Java's legacy partition naming renders DATE as its day number (``dt=19723``), not ISO text."""
    warehouse, cat = _catalog(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("v", pa.string())])
    t = cat.create_table(
        IDENT, schema=schema, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"}
    )
    dates = [dt.date(2024, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1900, 3, 1)]
    t.write(pa.table({"id": [1, 2, 3, 4], "dt": dates, "v": ["a", "b", "c", "d"]}, schema=schema))
    table_dir = warehouse / "db.db" / "t"
    part_dirs = sorted(p.name for p in table_dir.iterdir() if p.name.startswith("dt="))
    assert part_dirs == sorted(["dt=19723", "dt=-1", "dt=0", "dt=-25508"])
    rows = PypaimonBatch()
    idx = rows.read(warehouse, IDENT)
    got = rows.run()[idx]
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {"id": i + 1, "dt": d, "v": v} for i, (d, v) in enumerate(zip(dates, "abcd", strict=True))
    ]


# --------------------------------------------------------------------------- rowkind.field


class RowKindScenario(PkScenario):
    """A ``rowkind.field`` table: the ``op`` column says +I / -U / +U / -D for every written row."""

    OPS = ("+I", "-U", "+U", "-D")

    def extra_values(self) -> Row:
        return {"op": "+I"}

    def write_ops(self, target: Any, keys: Sequence[Key]) -> Any:
        rows = []
        for k in keys:
            row = self.row(k)
            row["op"] = str(self.OPS[self.rng.choice(4, p=[0.35, 0.15, 0.3, 0.2])])
            if row["op"] == "-D" and self.rng.rand() < 0.5:
                row.update({f.name: None for f in VALUE_FIELDS})  # -D rows may carry nulls
            rows.append(row)
        for row in rows:  # -U and -D retract the key (deduplicate drops retracts on read)
            if row["op"] in ("+I", "+U"):
                self.model.upsert([row])
            else:
                self.model.delete([row])
        return target.write(to_table(rows, self.schema))

    def run(self) -> None:
        t = self.table
        self.record(self.upsert_into(t, self.rows(self.keys(30))))  # all +I
        self.record(self.write_ops(t, self.existing_keys(12) + self.keys(12) + self.keys(2, ghost=True)))
        keys = self.existing_keys(6)
        self.record(self.write_ops(t, keys + keys[::-1] + self.keys(6)))  # every key twice: later wins
        # lsmlake's delete() on a rowkind table is a -D whatever the op column holds (filled with null).
        self.record(self.delete_into(t, self.key_table(self.existing_keys(4), full_rows=False)))
        with t.writer() as w:
            for _ in range(5):
                self.write_ops(w, self.keys(8) + self.existing_keys(3))
        self.record(w.snapshot_ids[-1] if w.snapshot_ids else None)


@pytest.mark.parametrize("bucket", [1, 2])
def test_rowkind_field_table(tmp_path: Path, bucket: int) -> None:
    warehouse, cat = _catalog(tmp_path)
    case = PkCase(f"rowkind-b{bucket}", bucket, (("id", pa.int64()),), (DT_STR,) if bucket == 2 else ())
    op = pa.field("op", pa.string())
    table = cat.create_table(
        IDENT,
        schema=case.schema([op]),
        primary_key=case.pk,
        partition_keys=case.partition_keys,
        options={**case.table_options(), "rowkind.field": "op"},
    )
    scenario = RowKindScenario(case, 7 + bucket, table, extra=[op])
    scenario.run()
    assert {r["op"] for r in scenario.model.rows.values()} >= {"+I", "+U"}
    _check_snapshots(warehouse, scenario, label=case.id)


# --------------------------------------------------------------------------- append tables


@dataclass(frozen=True)
class AppendCase:
    id: str
    options: dict[str, str] = field(default_factory=dict)
    partitions: tuple[tuple[str, pa.DataType, tuple[Any, ...]], ...] = ()


APPEND_CASES = (
    AppendCase("unaware", {}),
    AppendCase("unaware-part-date", {}, (DT_DATE,)),
    AppendCase("b2-bucket-key", {"bucket": "2", "bucket-key": "k"}),
    AppendCase("b2-bucket-key-part", {"bucket": "2", "bucket-key": "k"}, (DT_STR,)),
    AppendCase("unaware-avro-part", {"file.format": "avro"}, (DT_STR,)),
)


@pytest.mark.parametrize("case", APPEND_CASES, ids=[c.id for c in APPEND_CASES])
def test_append_table_random_commits(tmp_path: Path, case: AppendCase) -> None:
    warehouse, cat = _catalog(tmp_path)
    rng = np.random.RandomState(sum(map(ord, case.id)))
    schema = pa.schema(
        [pa.field("k", pa.int32())] + [pa.field(p, t) for p, t, _ in case.partitions] + list(VALUE_FIELDS)
    )
    t = cat.create_table(
        IDENT, schema=schema, partition_keys=[p for p, _, _ in case.partitions], options=case.options
    )
    rows: list[Row] = []
    history: list[tuple[int, list[Row]]] = []

    def batch(n: int) -> pa.Table:
        out = []
        for _ in range(n):
            row = {"k": int(rng.randint(-50, 50))}
            row.update({p: values[rng.randint(len(values))] for p, _, values in case.partitions})
            row.update(random_values(rng, VALUE_FIELDS))
            out.append(row)
        rows.extend(out)  # append tables keep every row, duplicates included
        return to_table(out, schema)

    for n in (25, 1, 40):
        sid = t.write(batch(n))
        history.append((sid, list(rows)))
    data = batch(10)
    sid = t.write(pa.concat_tables([data, data]))  # the same rows twice: both stay
    rows.extend(data.to_pylist())
    history.append((sid, list(rows)))
    with t.writer() as w:
        for n in (3, 17, 8):
            w.write(batch(n))
    history.append((w.snapshot_ids[-1], list(rows)))
    assert_commit_kinds(warehouse / "db.db" / "t", [sid for sid, _ in history])

    reads = PypaimonBatch()
    latest = reads.read(warehouse, IDENT)
    travel = [
        (sid, snap, reads.read(warehouse, IDENT, options={"scan.snapshot-id": str(sid)}))
        for ids, (_, snap) in zip(commit_snapshots([s for s, _ in history]), history, strict=True)
        for sid in ids
    ]
    results = reads.run()
    assert_types(results[latest].schema, schema, label=case.id)
    names = schema.names
    assert sorted_rows(results[latest].to_pylist(), names) == sorted_rows(rows, names)
    for sid, snap, idx in travel:
        assert sorted_rows(results[idx].to_pylist(), names) == sorted_rows(snap, names), f"snapshot {sid}"

    table_dir = warehouse / "db.db" / "t"
    buckets = {bucket_dir_of(p).rsplit("/", 1)[-1] for p in data_files(table_dir)}
    assert buckets == ({"bucket-0", "bucket-1"} if "bucket" in case.options else {"bucket-0"})


# --------------------------------------------------------------------------- per-column codecs


def test_uncompressed_and_zstd_columns_in_one_file(tmp_path: Path) -> None:
    """Random doubles are stored uncompressed beside zstd columns (see operations/column_codecs.py)."""
    warehouse, cat = _catalog(tmp_path)
    rng = np.random.default_rng(9)
    n = 5_000
    rows = pa.table(
        {"id": np.arange(n, dtype=np.int64), "amount": rng.random(n), "note": [f"n{i % 7}" for i in range(n)]}
    )
    t = cat.create_table(IDENT, schema=rows.schema, primary_key=["id"], options={"bucket": "2"})
    t.write(rows)
    t.write(rows.slice(0, 100).set_column(1, "amount", pa.array(np.zeros(100))))
    codecs = set()
    table_dir = warehouse / "db.db" / "t"
    for path in data_files(table_dir):
        meta = pq.ParquetFile(table_dir / path).metadata
        group = meta.row_group(0)
        codecs |= {
            (group.column(i).path_in_schema, group.column(i).compression) for i in range(meta.num_columns)
        }
    assert ("amount", "UNCOMPRESSED") in codecs and ("amount", "ZSTD") in codecs  # random, then zeros
    assert ("note", "ZSTD") in codecs and ("note", "UNCOMPRESSED") not in codecs
    batch = PypaimonBatch()
    idx = batch.read(warehouse, IDENT)
    got = batch.run()[idx]
    expected = rows.to_pydict()
    expected["amount"][:100] = [0.0] * 100
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        dict(zip(expected, vals, strict=True)) for vals in zip(*expected.values(), strict=True)
    ]
