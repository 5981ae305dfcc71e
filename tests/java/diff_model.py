"""The dict model of a primary-key table for the Java differential workloads: merge engines, row kinds, schema."""

from __future__ import annotations

import copy
import datetime as dt
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
from java_harness import to_micros

Row = dict[str, Any]  # keyed by column label: a column keeps its label across renames (as its field id)
Key = tuple[Any, ...]
Batch = list[tuple[str, Row]]  # (row kind, row) in commit order

# The starting columns: label, Arrow type, Paimon SQL type.
COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("id", pa.int32(), "INT"),
    ("dt", pa.string(), "STRING"),
    ("name", pa.string(), "STRING"),
    ("price", pa.decimal128(10, 2), "DECIMAL(10, 2)"),
    ("day", pa.date32(), "DATE"),
    ("ts", pa.timestamp("us"), "TIMESTAMP(6)"),
]
VALUES = ("name", "price", "day", "ts")


@dataclass(frozen=True)
class Kind:
    """One table kind: options, layout, and which row kinds its merge engine takes."""

    name: str
    options: Mapping[str, str]
    partitioned: bool = False

    @property
    def engine(self) -> str:
        return self.options.get("merge-engine", "deduplicate")

    @property
    def deletes(self) -> bool:
        return self.engine != "first-row"

    @property
    def retracts(self) -> bool:
        return self.engine != "first-row"

    @property
    def sparse(self) -> bool:
        return self.engine in ("partial-update", "aggregation")

    @property
    def skips_level0(self) -> bool:
        """Paimon's batchScanSkipLevel0: deletion vectors without merge-on-read, else the first-row engine."""
        if self.options.get("deletion-vectors.enabled") == "true":
            return self.options.get("deletion-vectors.merge-on-read") != "true"
        return self.engine == "first-row"

    @property
    def postpone(self) -> bool:
        return self.options.get("bucket") == "-2"

    @property
    def key(self) -> list[str]:
        return ["dt", "id"] if self.partitioned else ["id"]


def merge(engine: str, old: Row | None, new: Row) -> Row:
    """One +I/+U record merged onto the key's current row."""
    if old is None or engine == "deduplicate":
        return dict(new)
    if engine == "first-row":
        return old
    merged = {k: (old.get(k) if v is None else v) for k, v in {**old, **new}.items()}
    if engine == "aggregation":  # price is sum, every other value column last_non_null_value
        prices = [p for p in (old.get("price"), new.get("price")) if p is not None]
        merged["price"] = sum(prices, Decimal("0.00")) if prices else None
    return merged


def retract(acc: Row | None, row: Row) -> Row:
    """An aggregation's -U of row on acc: the sum goes down, last_non_null values it names clear."""
    out = dict(row) if acc is None else dict(acc)
    if acc is None:
        out.update({k: None for k in out if k not in ("id", "dt")})
    if row.get("price") is not None:
        base = acc.get("price") if acc is not None else None
        out["price"] = (base if base is not None else Decimal("0.00")) - row["price"]
    for col, value in row.items():
        if col not in ("id", "dt", "price") and value is not None:
            out[col] = None
    return out


@dataclass
class State:
    """The rows a reader sees, and (postpone buckets) the commits waiting in bucket-postpone."""

    rows: dict[Key, Row] = field(default_factory=dict)
    pending: list[Batch] = field(default_factory=list)

    def copy(self) -> State:
        return State(copy.deepcopy(self.rows), copy.deepcopy(self.pending))


class Model:
    """The table as it should read: its state, its column names, and what each snapshot and tag held."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind
        self.names: dict[str, str] = {c[0]: c[0] for c in COLUMNS if kind.partitioned or c[0] != "dt"}
        self.types: dict[str, pa.DataType] = {c[0]: c[1] for c in COLUMNS}
        self.state = State()
        self.history: dict[int, tuple[dict[str, str], dict[Key, Row]]] = {}
        self.tags: dict[str, tuple[int, dict[str, str], State]] = {}
        self.extras = 0

    def key_of(self, row: Row) -> Key:
        return tuple(row[c] for c in self.kind.key)

    def commit(self, batch: Batch) -> None:
        """One commit of records; postpone tables hold it until a compaction."""
        if self.kind.postpone:
            self.state.pending.append(batch)
        else:
            self.fold_into(self.state.rows, batch)

    def compacted(self) -> None:
        """A compaction of a postpone table assigns its waiting records, in commit order."""
        for batch in self.state.pending:
            self.fold_into(self.state.rows, batch)
        self.state.pending = []

    def fold_into(self, rows: dict[Key, Row], batch: Batch) -> None:
        """Paimon's write buffer folds each key's records of one commit first; the result then merges onto the
        table (so a -U clears a last_non_null value only of what came before it in the same commit)."""
        engine = self.kind.engine
        folded: dict[Key, Row | None] = {}
        for kind, row in batch:
            k = self.key_of(row)
            acc = folded.get(k)
            if kind == "-D":
                folded[k] = None
            elif kind == "-U":
                if engine == "aggregation":
                    folded[k] = retract(acc, row)
                elif k not in folded:
                    continue  # the other engines keep nothing of a -U
            else:
                folded[k] = merge(engine, acc, row)
        for k, acc in folded.items():
            if acc is None:
                rows.pop(k, None)
            else:
                rows[k] = merge(engine, rows.get(k), acc)

    def record(self, first: int | None, last: int | None) -> None:
        """Snapshots first..last (one operation's APPEND and COMPACT) hold the current state. When batch scans
        skip level 0 (see ``Kind.skips_level0``), only the last does: an APPEND snapshot adds level-0 files
        only, so it reads as the snapshot before it did (kept if the model knows that one). An operation that
        made no snapshot (a compaction with nothing to do) records nothing: the latest one keeps its schema."""
        if last is None or (first is not None and last < first):
            return
        start = first if first is not None else last
        if self.kind.skips_level0:
            before = self.history.get(start - 1, (self.names, {}) if start == 1 else None)
            for sid in range(start, last):
                if before is None:
                    self.history.pop(sid, None)
                else:
                    self.history[sid] = (dict(self.names), copy.deepcopy(before[1]))
            start = last
        for sid in range(start, last + 1):
            self.history[sid] = (dict(self.names), copy.deepcopy(self.state.rows))

    # ---- rendering, in the harness's JSON form ----

    def expected(self) -> list[Row]:
        return render(self.names, self.state.rows.values(), self.kind.key)

    def arrow_schema(self) -> pa.Schema:
        fields = [
            pa.field(name, self.types[label], nullable=label not in self.kind.key)
            for label, name in self.names.items()
        ]
        return pa.schema(fields)

    def fresh_row(self, key: int, rng: random.Random) -> Row:
        row: Row = {"id": key}
        if self.kind.partitioned:
            row["dt"] = f"p{key % 3}"
        for label in self.names:
            if label in ("id", "dt"):
                continue
            if self.kind.sparse and rng.random() < 0.3:
                row[label] = None
            else:
                row[label] = value(label, self.types[label], rng)
        return row


def value(label: str, type_: pa.DataType, rng: random.Random) -> Any:
    if pa.types.is_string(type_):
        return f"{label}-{rng.randrange(10**6)}" + "é" * rng.randrange(3)
    if pa.types.is_decimal(type_):
        return Decimal(rng.randrange(-99999, 99999)).scaleb(-2)
    if pa.types.is_date(type_):
        return dt.date(1990, 1, 1) + dt.timedelta(days=rng.randrange(20000))
    if pa.types.is_timestamp(type_):
        return dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=rng.randrange(10**15))
    return rng.randrange(-1000, 1000)


def json_value(v: Any) -> Any:
    if isinstance(v, Decimal):
        return format(v.quantize(Decimal("0.01")), "f")
    if isinstance(v, dt.datetime):
        return to_micros(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


def render(names: Mapping[str, str], rows: Any, key: Sequence[str]) -> list[Row]:
    """Model rows under the column names of ``names`` (labels a row lacks read as null), sorted by key."""
    out = [{name: json_value(r.get(label)) for label, name in names.items()} for r in rows]
    return sorted(out, key=lambda r: tuple(str(r[names[k]]) for k in key))


def normalize(rows: Sequence[Mapping[str, Any]], key: Sequence[str]) -> list[Row]:
    """Either side's JSON rows: decimals at scale 2, sorted by key."""
    out = []
    for r in rows:
        row = dict(r)
        for k, v in row.items():
            if isinstance(v, str) and k == "price":
                row[k] = format(Decimal(v).quantize(Decimal("0.01")), "f")
        out.append(row)
    return sorted(out, key=lambda r: tuple(str(r[k]) for k in key))
