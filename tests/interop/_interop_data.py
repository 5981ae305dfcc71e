"""Seeded random data, a dict model of a primary-key table, and comparison helpers for interop tests."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

Key = tuple[Any, ...]
Row = dict[str, Any]

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)

#: Value columns of every type the interop suite round-trips (all nullable).
VALUE_FIELDS: tuple[pa.Field, ...] = (
    pa.field("c_i8", pa.int8()),
    pa.field("c_i16", pa.int16()),
    pa.field("c_i32", pa.int32()),
    pa.field("c_i64", pa.int64()),
    pa.field("c_f32", pa.float32()),
    pa.field("c_f64", pa.float64()),
    pa.field("c_bool", pa.bool_()),
    pa.field("c_str", pa.string()),
    pa.field("c_bin", pa.binary()),
    pa.field("c_dec10", pa.decimal128(10, 2)),
    pa.field("c_dec30", pa.decimal128(30, 5)),
    pa.field("c_date", pa.date32()),
    pa.field("c_ts_ms", pa.timestamp("ms")),
    pa.field("c_ts_us", pa.timestamp("us")),
)

_UNICODE_PIECES = ("日本語", "ü", "ß", "😀", "Ω", "中文字符串", "é", "ñandú", "Ελληνικά", "\u00a0", "ﬁ")
_ASCII = np.array(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,"))


def _ascii(rng: np.random.RandomState, n: int) -> str:
    return "".join(rng.choice(_ASCII, size=n)) if n else ""


def random_string(rng: np.random.RandomState) -> str:
    """Empty, short (inline in a BinaryRow: <= 7 bytes), exactly 7/8 bytes, long, or unicode text."""
    kind = rng.randint(7)
    if kind == 0:
        return ""
    if kind == 1:
        return _ascii(rng, rng.randint(1, 8))
    if kind == 2:
        return _ascii(rng, int(rng.choice([7, 8])))
    if kind == 3:
        return _ascii(rng, rng.randint(9, 80))
    if kind == 4:
        return "".join(rng.choice(_UNICODE_PIECES) for _ in range(rng.randint(1, 4)))
    if kind == 5:  # long mixed text
        return (
            _ascii(rng, rng.randint(3, 20))
            + str(rng.choice(_UNICODE_PIECES))
            + _ascii(rng, rng.randint(0, 20))
        )
    return str(rng.choice(_UNICODE_PIECES))  # 1-15 UTF-8 bytes


def random_bytes(rng: np.random.RandomState) -> bytes:
    n = int(rng.choice([0, 1, 7, 8, rng.randint(0, 40)]))
    return rng.randint(0, 256, size=n).astype(np.uint8).tobytes()


def _int_value(rng: np.random.RandomState, bits: int) -> int:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    r = rng.rand()
    if r < 0.1:
        return int(rng.choice([lo, hi, 0, -1, 1]))
    if bits <= 32:
        return int(rng.randint(lo, hi + 1, dtype=np.int64))
    return int(rng.randint(-(1 << 62), 1 << 62, dtype=np.int64)) * int(rng.choice([1, 2]))


def random_value(rng: np.random.RandomState, t: pa.DataType) -> Any:
    """One random non-null Python value of Arrow type ``t`` (exactly representable in ``t``)."""
    if t == pa.int8():
        return _int_value(rng, 8)
    if t == pa.int16():
        return _int_value(rng, 16)
    if t == pa.int32():
        return _int_value(rng, 32)
    if t == pa.int64():
        return _int_value(rng, 64)
    if t == pa.float32():
        if rng.rand() < 0.08:
            return float(rng.choice([math.inf, -math.inf, 0.0, -1.5]))
        return float(np.float32(rng.standard_normal() * 10.0 ** rng.randint(-3, 6)))
    if t == pa.float64():
        if rng.rand() < 0.08:
            return float(rng.choice([math.inf, -math.inf, 0.0, 1e308]))
        return float(rng.standard_normal() * 10.0 ** rng.randint(-8, 12))
    if t == pa.bool_():
        return bool(rng.randint(2))
    if pa.types.is_string(t):
        return random_string(rng)
    if pa.types.is_binary(t):
        return random_bytes(rng)
    if pa.types.is_decimal(t):
        limit = 10**t.precision - 1
        if rng.rand() < 0.1:
            unscaled = int(rng.choice([limit, -limit, 0, 1, -1]))
        else:
            digits = rng.randint(1, t.precision + 1)
            unscaled = int("".join(str(d) for d in rng.randint(0, 10, size=digits))) * int(
                rng.choice([1, -1])
            )
        return decimal.Decimal(unscaled).scaleb(-t.scale, decimal.Context(prec=60))  # exact
    if t == pa.date32():
        return EPOCH_DATE + dt.timedelta(days=int(rng.randint(-40_000, 40_000)))
    if pa.types.is_timestamp(t):
        if t.unit == "ms":
            return EPOCH + dt.timedelta(
                milliseconds=int(rng.randint(-3 * 10**12, 3 * 10**12, dtype=np.int64))
            )
        if t.unit == "us":
            return EPOCH + dt.timedelta(
                microseconds=int(rng.randint(-3 * 10**15, 3 * 10**15, dtype=np.int64))
            )
    raise NotImplementedError(f"no random values for {t}")


def random_values(rng: np.random.RandomState, fields: Sequence[pa.Field], *, null_p: float = 0.15) -> Row:
    """Random values for the (nullable) value columns ``fields``; about ``null_p`` of them null."""
    return {f.name: None if rng.rand() < null_p else random_value(rng, f.type) for f in fields}


def unique_values(rng: np.random.RandomState, t: pa.DataType, n: int) -> list[Any]:
    """``n`` distinct random values of ``t`` (used as primary-key pools)."""
    seen: dict[Any, None] = {}
    tries = 0
    while len(seen) < n:
        seen.setdefault(random_value(rng, t), None)
        tries += 1
        if tries > 100 * n:
            raise RuntimeError(f"cannot draw {n} distinct values of {t}")
    return list(seen)


def to_table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([dict(r) for r in rows], schema=schema)


# --------------------------------------------------------------------------- the model


class PkModel:
    """What a deduplicate primary-key table holds: key tuple -> full row; later writes win."""

    def __init__(self, key_names: Sequence[str]) -> None:
        self.key_names = tuple(key_names)
        self.rows: dict[Key, Row] = {}

    def key(self, row: Mapping[str, Any]) -> Key:
        return tuple(row[k] for k in self.key_names)

    def upsert(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for r in rows:
            self.rows[self.key(r)] = dict(r)

    def delete(self, keys: Iterable[Mapping[str, Any]]) -> None:
        for r in keys:
            self.rows.pop(self.key(r), None)

    def snapshot(self) -> dict[Key, Row]:
        return {k: dict(v) for k, v in self.rows.items()}


def as_model(table: pa.Table, key_names: Sequence[str], *, label: str = "") -> dict[Key, Row]:
    """Read result -> key tuple -> row; fails on a duplicate key (a merge bug)."""
    out: dict[Key, Row] = {}
    dups: list[Key] = []
    for row in table.to_pylist():
        key = tuple(row[k] for k in key_names)
        if key in out:
            dups.append(key)
        out[key] = row
    assert not dups, f"{label}: {len(dups)} duplicate key(s) in the read result, e.g. {dups[:3]}"
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "..."


def assert_same_rows(got: Mapping[Key, Row], want: Mapping[Key, Row], *, label: str) -> None:
    """Exact dict-model equality with a compact diff (missing / unexpected / differing keys)."""
    if got == want:
        return
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    differ = []
    for k in want:
        if k in got and got[k] != want[k]:
            cols = {c: (got[k].get(c), want[k].get(c)) for c in want[k] if got[k].get(c) != want[k].get(c)}
            differ.append((k, cols))
    raise AssertionError(
        f"{label}: read result differs from the model: {len(got)} rows read, {len(want)} expected; "
        f"{len(missing)} missing e.g. {_short(missing[:3])}; "
        f"{len(extra)} unexpected e.g. {_short(extra[:3])}; "
        f"{len(differ)} with other values e.g. {_short(differ[:2])} (col: (read, expected))"
    )


def _sort_key(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple((0, "") if v is None else (1, v) for v in row)


def sorted_rows(rows: Iterable[Mapping[str, Any]], names: Sequence[str]) -> list[tuple[Any, ...]]:
    """Rows as tuples in column order ``names``, sorted (None first) - for multiset comparisons."""
    return sorted((tuple(r[n] for n in names) for r in rows), key=_sort_key)


def assert_types(result: pa.Schema, expected: pa.Schema, *, label: str) -> None:
    """Same column names in the same order with the same Arrow types (nullability ignored)."""
    assert result.names == expected.names, f"{label}: columns {result.names} != {expected.names}"
    for f in expected:
        assert result.field(f.name).type == f.type, (
            f"{label}: column {f.name} read as {result.field(f.name).type}, written as {f.type}"
        )


# --------------------------------------------------------------------------- files on disk


def data_files(table_dir: Path) -> set[Path]:
    """Every data file of a table (relative to the table directory)."""
    return {
        p.relative_to(table_dir)
        for p in table_dir.rglob("*")
        if p.is_file() and p.name.startswith("data-") and p.suffix in (".parquet", ".orc", ".avro")
    }


def bucket_dir_of(rel_path: Path) -> str:
    """``k1=v1/.../bucket-N`` of a data file path relative to its table directory."""
    return rel_path.parent.as_posix()


def keys_in_file(path: Path, columns: Sequence[str]) -> list[Key]:
    table = pq.read_table(path, columns=list(columns))
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True)) if columns else []


def date_days(value: dt.date) -> int:
    return (value - EPOCH_DATE).days


def snapshot_kinds(table_dir: Path) -> dict[int, str]:
    """``snapshot id -> commitKind`` from the snapshot JSON files on disk."""
    import json

    out = {}
    for p in (table_dir / "snapshot").glob("snapshot-*"):
        data = json.loads(p.read_text(encoding="utf-8"))
        out[int(data["id"])] = str(data["commitKind"])
    return out


def commit_snapshots(history_ids: Sequence[int]) -> list[list[int]]:
    """For commits that returned ``history_ids`` (last snapshot of each), the snapshot ids each made."""
    out, prev = [], 0
    for sid in history_ids:
        assert sid > prev, f"snapshot ids must increase: {history_ids}"
        out.append(list(range(prev + 1, sid + 1)))
        prev = sid
    return out


def assert_commit_kinds(table_dir: Path, history_ids: Sequence[int]) -> None:
    """Each commit made one APPEND snapshot, optionally followed by COMPACT ones; nothing else."""
    kinds = snapshot_kinds(table_dir)
    for ids in commit_snapshots(history_ids):
        got = [kinds.get(i) for i in ids]
        assert got[0] == "APPEND" and all(k == "COMPACT" for k in got[1:]), f"snapshots {ids}: {got}"
