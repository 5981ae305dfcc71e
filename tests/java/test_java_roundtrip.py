"""lsmlake and live Java Paimon take turns on one table of each kind; after every step both read the same rows."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake

pytestmark = pytest.mark.java

Row = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """One table kind: its options, whether it is partitioned, and which row kinds its engine accepts."""

    name: str
    options: Mapping[str, str]
    partitioned: bool = False
    deletes: bool = True  # the engine takes -D records
    retracts: bool = True  # the engine takes -U records (first-row takes neither)
    sparse: bool = False  # writes leave some value columns null (partial-update, aggregation)
    model: Callable[[Row | None, Row], Row] | None = field(default=None, compare=False)


def _dedup(_old: Row | None, new: Row) -> Row:
    return new


def _partial(old: Row | None, new: Row) -> Row:
    if old is None:
        return new
    return {k: (old[k] if v is None else v) for k, v in new.items()}


def _first(old: Row | None, new: Row) -> Row:
    return new if old is None else old


def _aggregate(old: Row | None, new: Row) -> Row:
    if old is None:
        return new
    merged = _partial(old, new)  # last_non_null_value for name and ts
    prices = [p for p in (old["price"], new["price"]) if p is not None]
    merged["price"] = sum(prices, Decimal("0.00")) if prices else None
    return merged


def _aggregate_max(old: Row | None, new: Row) -> Row:
    merged = _aggregate(old, new)
    if old is not None:
        days = [d for d in (old["day"], new["day"]) if d is not None]
        merged["day"] = max(days) if days else None
    return merged


# Paimon refuses ignore-retract beside aggregation.remove-record-on-delete (FieldAggregatorFactory), so one
# aggregation kind keeps max(day) ignoring retractions and takes no deletes, the other removes rows on -D.
AGG_MAX = {
    "merge-engine": "aggregation",
    "fields.price.aggregate-function": "sum",
    "fields.day.aggregate-function": "max",
    "fields.day.ignore-retract": "true",
}
AGG_REMOVE = {
    "merge-engine": "aggregation",
    "fields.price.aggregate-function": "sum",
    "aggregation.remove-record-on-delete": "true",
}
KINDS = [
    Kind("dedup", {"bucket": "2"}, model=_dedup),
    Kind("dedup-partitioned", {"bucket": "3"}, partitioned=True, model=_dedup),
    Kind("dedup-dv", {"bucket": "2", "deletion-vectors.enabled": "true"}, model=_dedup),
    Kind(
        "dedup-dv-partitioned",
        {"bucket": "2", "deletion-vectors.enabled": "true"},
        partitioned=True,
        model=_dedup,
    ),
    Kind(
        "partial-update",
        {"bucket": "2", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        sparse=True,
        model=_partial,
    ),
    Kind(
        "partial-update-dv-partitioned",
        {
            "bucket": "2",
            "merge-engine": "partial-update",
            "partial-update.remove-record-on-delete": "true",
            "deletion-vectors.enabled": "true",
        },
        partitioned=True,
        sparse=True,
        model=_partial,
    ),
    Kind("aggregation", {"bucket": "2", **AGG_MAX}, deletes=False, sparse=True, model=_aggregate_max),
    Kind(
        "aggregation-partitioned",
        {"bucket": "2", **AGG_REMOVE},
        partitioned=True,
        sparse=True,
        model=_aggregate,
    ),
    Kind(
        "first-row", {"bucket": "2", "merge-engine": "first-row"}, deletes=False, retracts=False, model=_first
    ),
    # bucket = -1: both sides keep the HASH index; Java assigns with HashBucketAssigner (see the harness)
    Kind("dedup-dynamic", {"bucket": "-1"}, model=_dedup),
    Kind(
        "partial-update-dynamic-partitioned",
        {"bucket": "-1", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        partitioned=True,
        sparse=True,
        model=_partial,
    ),
    Kind(
        "dedup-dv-orc",
        {"bucket": "2", "deletion-vectors.enabled": "true", "file.format": "orc"},
        model=_dedup,
    ),
    Kind("dedup-avro", {"bucket": "2", "file.format": "avro"}, model=_dedup),
    Kind(
        "dedup-dv-avro-partitioned",
        {"bucket": "2", "deletion-vectors.enabled": "true", "file.format": "avro"},
        partitioned=True,
        model=_dedup,
    ),
    Kind(
        "aggregation-avro",
        {"bucket": "2", **AGG_MAX, "file.format": "avro", "file.compression": "snappy"},
        deletes=False,
        sparse=True,
        model=_aggregate_max,
    ),
    Kind(
        "first-row-partitioned",
        {"bucket": "1", "merge-engine": "first-row"},
        partitioned=True,
        deletes=False,
        retracts=False,
        model=_first,
    ),
]


def _schema(kind: Kind) -> pa.Schema:
    fields = [pa.field("id", pa.int32(), nullable=False)]
    if kind.partitioned:
        fields.append(pa.field("dt", pa.string(), nullable=False))
    fields += [
        pa.field("name", pa.string()),
        pa.field("price", pa.decimal128(10, 2)),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
    ]
    return pa.schema(fields)


class Workload:
    """Rows for one kind, a dict model of the merged table, and the two readers being compared."""

    def __init__(self, kind: Kind, table: lsmlake.Table, java: JavaPaimon, warehouse: str, seed: int) -> None:
        self.kind = kind
        self.table = table
        self.java = java
        self.warehouse = warehouse
        self.ident = table.name
        self.schema = _schema(kind)
        self.key = ["dt", "id"] if kind.partitioned else ["id"]
        self.rng = random.Random(seed)
        self.model: dict[tuple[Any, ...], Row] = {}
        self.generation = 0

    def row(self, key: int) -> Row:
        """A fresh value row for key (some value columns null for the sparse engines)."""
        g = self.generation
        r = self.rng
        row: Row = {"id": key}
        if self.kind.partitioned:
            row["dt"] = f"2024-0{key % 3 + 1}"
        row["name"] = f"name-{key}-{g}-" + "x" * r.randrange(0, 6)
        row["price"] = Decimal(r.randrange(-99999, 99999)).scaleb(-2)
        row["day"] = dt.date(2020, 1, 1) + dt.timedelta(days=r.randrange(0, 3000))
        row["ts"] = dt.datetime(2024, 5, 1) + dt.timedelta(microseconds=r.randrange(0, 10**13))
        if self.kind.sparse:
            for col in ("name", "price", "day", "ts"):
                if r.random() < 0.3:
                    row[col] = None
        return row

    def model_key(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.key)

    def apply(self, kind: str, row: Row) -> None:
        assert self.kind.model is not None
        k = self.model_key(row)
        if kind == "-D":
            self.model.pop(k, None)
        elif kind in ("+I", "+U"):
            self.model[k] = self.kind.model(self.model.get(k), row)
        # -U: an aggregation retracts it (then +U adds the new row); no other engine keeps anything of it

    def retracted(self, acc: Row | None, row: Row) -> Row:
        """The aggregation engine's retraction of row from acc: sums go down, last_non_null values clear."""
        out = dict(row) if acc is None else dict(acc)
        if acc is None:
            out.update(name=None, day=None, ts=None)
        if row["price"] is not None:
            out["price"] = (acc["price"] if acc is not None and acc["price"] is not None else 0) - row[
                "price"
            ]
        elif acc is None:
            out["price"] = None
        cleared = (
            ("name", "ts") if "fields.day.ignore-retract" in self.kind.options else ("name", "day", "ts")
        )
        for col in cleared:
            if row[col] is not None:
                out[col] = None
        return out

    def apply_batch(self, batch: list[tuple[str, Row]]) -> None:
        """An aggregation commit: Paimon's write buffer folds each key's records first, then merges the result
        (so a -U clears a last_non_null value only of what came before it in the same commit)."""
        assert self.kind.model is not None
        folded: dict[tuple[Any, ...], Row | None] = {}
        for kind, row in batch:
            k = self.model_key(row)
            acc = folded.get(k)
            if kind == "-D":
                folded[k] = None
            elif kind == "-U":
                folded[k] = self.retracted(acc, row)
            else:
                folded[k] = self.kind.model(acc, row)
        for k, acc in folded.items():
            if acc is None:
                self.model.pop(k, None)
            else:
                self.model[k] = self.kind.model(self.model.get(k), acc)

    # ---- the two sides ----

    def keys(self, n: int, *, existing: bool = False) -> list[int]:
        pool = sorted(k[-1] for k in self.model) if existing else list(range(60))
        return self.rng.sample(pool, min(n, len(pool)))

    def lsmlake_write(self, keys: list[int]) -> None:
        self.generation += 1
        rows = [self.row(k) for k in keys]
        self.table.write(pa.Table.from_pylist(rows, schema=self.schema))
        for row in rows:
            self.apply("+I", row)

    def lsmlake_delete(self, keys: list[int]) -> None:
        rows = [self.model[(f"2024-0{k % 3 + 1}", k) if self.kind.partitioned else (k,)] for k in keys]
        key_table = pa.Table.from_pylist(
            [{c: r[c] for c in self.key} for r in rows], schema=self.key_schema()
        )
        self.table.delete(key_table)
        for row in rows:
            self.apply("-D", row)

    def key_schema(self) -> pa.Schema:
        return pa.schema([self.schema.field(c) for c in self.key])

    def java_write(self, inserts: list[int], updates: list[int], deletes: list[int]) -> None:
        """One Java commit: +I rows, -U/+U pairs (the -U carrying the row as read), -D rows."""
        self.generation += 1
        current = {self.model_key(r): r for r in self.lsmlake_rows()}
        batch: list[tuple[str, Row]] = [("+I", self.row(k)) for k in inserts]
        for k in updates:
            new = self.row(k)
            old = current.get(self.model_key(new))
            if old is not None and self.kind.retracts:
                batch.append(("-U", old))
            batch.append(("+U", new))
        for k in deletes:
            probe = self.row(k)
            old = current.get(self.model_key(probe))
            if old is not None:
                batch.append(("-D", old))
        self.java.write(self.warehouse, self.ident, [{"_kind": kind, **row} for kind, row in batch])
        if self.kind.options.get("merge-engine") == "aggregation":
            self.apply_batch(batch)
            return
        for kind, row in batch:
            self.apply(kind, row)

    def lsmlake_rows(self, snapshot_id: int | None = None) -> list[Row]:
        return _from_json(arrow_rows(self.table.read(snapshot_id=snapshot_id)), self.schema)

    def java_rows(self, snapshot_id: int | None = None) -> list[Row]:
        return _from_json(
            java_rows(self.java.read(self.warehouse, self.ident, snapshot=snapshot_id)), self.schema
        )

    def check(self, step: str) -> None:
        """Java and lsmlake read the same rows, and both equal the model."""
        ours = sort_rows(self.lsmlake_rows(), self.key)
        theirs = sort_rows(self.java_rows(), self.key)
        assert theirs == ours, f"{self.kind.name}, after {step}: Java and lsmlake disagree"
        assert ours == sort_rows(self.model.values(), self.key), (
            f"{self.kind.name}, after {step}: not the model"
        )


def _from_json(rows: list[Row], schema: pa.Schema) -> list[Row]:
    """JSON-form rows back to Python values, so that both sides and the model compare alike."""
    out = []
    for r in rows:
        row = dict(r)
        for f in schema:
            v = row.get(f.name)
            if v is None:
                continue
            if pa.types.is_decimal(f.type):
                row[f.name] = Decimal(v).quantize(Decimal(1).scaleb(-f.type.scale))
            elif pa.types.is_date(f.type):
                row[f.name] = dt.date.fromisoformat(v)
            elif pa.types.is_timestamp(f.type):
                row[f.name] = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v)
        out.append(row)
    return out


def _create(catalog: lsmlake.Catalog, kind: Kind) -> lsmlake.Table:
    return catalog.create_table(
        f"db.{kind.name.replace('-', '_')}",
        schema=_schema(kind),
        primary_key=["dt", "id"] if kind.partitioned else ["id"],
        partition_keys=["dt"] if kind.partitioned else None,
        options=dict(kind.options),
    )


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_lsmlake_then_java_then_lsmlake(kind: Kind, java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = _create(catalog, kind)
    w = Workload(kind, table, java_paimon, warehouse, seed=sum(map(ord, kind.name)))

    # lsmlake writes: inserts, upserts, deletes, a full compaction; Java reads after every step
    w.lsmlake_write(w.keys(30))
    w.check("lsmlake's first write")
    w.lsmlake_write(w.keys(20))
    w.check("lsmlake's upserts")
    if kind.deletes:
        w.lsmlake_delete(w.keys(6, existing=True))
        w.check("lsmlake's deletes")
    table.compact(full=True)
    w.check("lsmlake's full compaction")
    w.lsmlake_write(w.keys(10))
    w.check("lsmlake's write after compaction")

    # Java writes +I, -U/+U and -D rows, then compacts every bucket; lsmlake reads after every step
    deletes = w.keys(5, existing=True) if kind.deletes else []
    w.java_write(inserts=w.keys(8), updates=w.keys(10, existing=True), deletes=deletes)
    w.check("Java's write")
    java_paimon.compact(warehouse, w.ident)
    w.check("Java's full compaction")
    w.java_write(inserts=w.keys(5), updates=w.keys(5, existing=True), deletes=[])
    w.check("Java's write after its compaction")

    # lsmlake writes on over Java's files, compacts (its own strategy, then full); Java reads again
    w.lsmlake_write(w.keys(12))
    if kind.deletes:
        w.lsmlake_delete(w.keys(4, existing=True))
    w.check("lsmlake's write over Java's files")
    table.compact()
    w.check("lsmlake's compaction")
    table.compact(full=True)
    w.check("lsmlake's full compaction of Java's files")

    # time travel: every snapshot reads the same on both sides
    snapshots = table.snapshot_manager
    for sid in range(snapshots.earliest_id() or 1, (snapshots.latest_id() or 0) + 1):
        assert sort_rows(w.java_rows(sid), w.key) == sort_rows(w.lsmlake_rows(sid), w.key), f"snapshot {sid}"
