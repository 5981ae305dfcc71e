"""Random rows of every flat Avro type (TIME and local timestamps too), arrays and maps, written as
``file.format=avro`` files, read back as written, and each file's manifest stats equal a row-by-row model of
Paimon's per-record collectors (Java's compareTo order: -0.0 below 0.0, NaN above everything; no bounds for
bytes or nested values; truncated strings; keys too)."""

from __future__ import annotations

import datetime as dt
import math
import re
import tempfile
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core.binary_row import serialize_row
from lsmlake.core.types import DataType
from lsmlake.metadata.data_file import DataFileMeta

SCHEMA = pa.schema(
    [
        pa.field("k", pa.string(), nullable=False),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("b", pa.binary()),
        pa.field("dec", pa.decimal128(9, 3)),
        pa.field("ts", pa.timestamp("ms")),
        pa.field("ts6", pa.timestamp("us")),
        pa.field("day", pa.date32()),
        pa.field("tm", pa.time32("ms")),
        pa.field("ltz", pa.timestamp("ms", tz="UTC")),
        pa.field("bo", pa.bool_()),
        pa.field("ti", pa.int8()),
        pa.field("arr", pa.list_(pa.int64())),
        pa.field("m", pa.map_(pa.string(), pa.int32())),
    ]
)
# no U+D7FF: Java increments it to a lone surrogate when truncating a max, lsmlake to U+E000
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\ud7ff"), max_size=20)
KEY = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\ud7ff"), min_size=1, max_size=20)


def _null(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | s


ROW = st.fixed_dictionaries(
    {
        # NaNs with any payload: the stats keep the first one's bits, as Java's collector does
        "f": _null(st.floats(width=32) | st.sampled_from([0.0, -0.0, math.nan])),
        "d": _null(st.floats() | st.sampled_from([0.0, -0.0, math.nan])),
        "s": _null(TEXT | st.just("\U0010ffff" * 18)),
        "b": _null(st.binary(max_size=8)),
        "dec": _null(st.integers(-(10**9) + 1, 10**9 - 1).map(lambda u: Decimal(u).scaleb(-3))),
        "ts": _null(
            st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)).map(
                lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)
            )
        ),
        "ts6": _null(st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1))),
        "day": _null(st.dates(dt.date(1800, 1, 1), dt.date(2300, 1, 1))),
        "tm": _null(st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
        "ltz": _null(
            st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)).map(
                lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000, tzinfo=dt.timezone.utc)
            )
        ),
        "bo": _null(st.booleans()),
        "ti": _null(st.integers(-128, 127)),
        "arr": _null(st.lists(_null(st.integers(-(2**63), 2**63 - 1)), max_size=3)),
        "m": _null(st.dictionaries(TEXT, _null(st.integers(-(2**31), 2**31 - 1)), max_size=3)),
    }
)
BATCH = st.dictionaries(KEY, ROW, min_size=1, max_size=30)
MODES = st.sampled_from(["truncate(16)", "truncate(2)", "full", "counts", "none"])
_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")


def _order(v: Any) -> Any:
    """Java's compareTo order for the collectors' values (floats: -0.0 < 0.0 < ... < NaN)."""
    if isinstance(v, float):  # every NaN compares equal (doubleToLongBits), so the first one stays
        return (True, 0.0, False) if math.isnan(v) else (False, v, math.copysign(1.0, v) > 0)
    return v


def _increment_max(v: str, n: int) -> str | None:
    """Paimon's TruncateSimpleColStatsCollector.truncateMax (code points)."""
    if len(v) <= n:
        return v
    head = v[:n]
    for i in range(n - 1, -1, -1):
        nxt = ord(head[i]) + 1
        if nxt <= 0x10FFFF:
            return head[:i] + chr(0xE000 if 0xD800 <= nxt <= 0xDFFF else nxt)
    return None


def _model(values: Sequence[Any], t: DataType, mode: str) -> tuple[Any, Any, int | None]:
    """One column's (min, max, null count) as Paimon's per-record collector for ``mode`` finds it."""
    if mode == "none":
        return None, None, None
    nulls = sum(v is None for v in values)
    present = [v for v in values if v is not None]
    if mode == "counts" or not present or t.is_binary or t.root in ("ARRAY", "MAP", "ROW"):
        return None, None, nulls
    lo, hi = min(present, key=_order), max(present, key=_order)
    truncate = _TRUNCATE.match(mode)
    if truncate and isinstance(lo, str):
        n = int(truncate.group(1))
        lo, hi = lo[:n], _increment_max(hi, n)
        if hi is None:
            lo = None
    return lo, hi, nulls


def _expected(
    rows: list[dict[str, Any]], names: Sequence[str], types: Sequence[DataType], mode: str
) -> tuple[bytes, bytes, tuple[int | None, ...]]:
    stats = [_model([r[n] for r in rows], t, mode) for n, t in zip(names, types, strict=True)]
    nullable = [t.copy(nullable=True) for t in types]
    return (
        serialize_row([s[0] for s in stats], nullable),
        serialize_row([s[1] for s in stats], nullable),
        tuple(s[2] for s in stats),
    )


def _check_file(f: DataFileMeta, rows: list[dict[str, Any]], table: lsmlake.Table, mode: str) -> None:
    fields = table.schema.fields
    names, types = [x.name for x in fields], [x.type for x in fields]
    if mode == "none":
        assert f.value_stats_cols == () and f.value_stats.null_counts == ()
    else:
        assert f.value_stats_cols is None
        got = (f.value_stats.min_values, f.value_stats.max_values, f.value_stats.null_counts)
        assert got == _expected(rows, names, types, mode)
    key = _expected(rows, ["k"], [table.schema.field("k").type], mode)
    assert (f.key_stats.min_values, f.key_stats.max_values, f.key_stats.null_counts) == key


def _arrow(batch: dict[str, dict[str, Any]]) -> pa.Table:
    rows = [{"k": k, **v, "m": None if v["m"] is None else list(v["m"].items())} for k, v in batch.items()]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows in comparable form: NaN as text (NaN != NaN), -0.0 apart from 0.0, maps as dicts."""
    out = []
    for r in table.to_pylist():
        row = dict(r)
        for c in ("f", "d"):
            if isinstance(row[c], float):
                row[c] = "NaN" if math.isnan(row[c]) else (row[c], math.copysign(1.0, row[c]))
        if row["m"] is not None:
            row["m"] = dict(row["m"])
        out.append(row)
    return sorted(out, key=lambda r: r["k"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=BATCH, second=BATCH, mode=MODES, dv=st.booleans())
def test_avro_files_read_back_and_their_stats_are_javas(
    first: dict[str, dict[str, Any]], second: dict[str, dict[str, Any]], mode: str, dv: bool
) -> None:
    with tempfile.TemporaryDirectory() as wh:
        catalog = lsmlake.Catalog(wh)
        catalog.create_database("db")
        options = {
            "bucket": "1",
            "file.format": "avro",
            "metadata.stats-mode": mode,
            "deletion-vectors.enabled": str(dv).lower(),
        }
        table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
        model: dict[str, dict[str, Any]] = {}
        for batch in (first, second):
            data = _arrow(batch)
            table.write(data)
            model.update(batch)
            if not dv:  # the newest file (deletion-vector scans skip level 0)
                newest = max(
                    (f for s in table.scan().splits() for f in s.files), key=lambda x: x.max_sequence_number
                )
                _check_file(newest, data.sort_by("k").to_pylist(), table, mode)  # in file (key) order
            assert _rows(table.read()) == _rows(_arrow(model))
        table.compact(full=True)
        (f,) = [f for s in table.scan().splits() for f in s.files]
        assert f.file_name.endswith(".avro")
        _check_file(f, _arrow(model).sort_by("k").to_pylist(), table, mode)
        assert _rows(table.read()) == _rows(_arrow(model))
