"""Dropping partitions and partition expiry (values-time, update-time), checked against a model."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core import clock
from lsmlake.core.partition_time import partition_time
from lsmlake.errors import InvalidOptionError, InvalidPartitionSpecError
from lsmlake.sql import Session
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
NOW = dt.datetime(2024, 3, 10, 12, 0)


def _catalog(path: Path) -> lsmlake.Catalog:
    cat = lsmlake.Catalog(str(path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat


def _table(cat: lsmlake.Catalog, name: str = "db.t", **options: str) -> Table:
    return cat.create_table(
        name,
        schema=SCHEMA,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "1", **options},
    )


def _write(t: Table, dts: list[str]) -> None:
    t.write(pa.table({"id": list(range(len(dts))), "dt": dts, "v": [1] * len(dts)}, schema=SCHEMA))


def _partitions(t: Table) -> list[str]:
    return sorted(set(t.read(columns=["dt"]).column("dt").to_pylist()))


def _day(offset: int, fmt: str = "%Y%m%d") -> str:
    return (dt.datetime.now() - dt.timedelta(days=offset)).strftime(fmt)


def test_drop_partitions(tmp_path: Path) -> None:
    t = _table(_catalog(tmp_path))
    _write(t, ["a", "b", "c", "d"])
    before = t.latest_snapshot()
    assert before is not None
    sid = t.drop_partitions({"dt": "a"}, {"dt": "c"})
    assert _partitions(t) == ["b", "d"]
    snap = t.latest_snapshot()
    assert snap is not None and snap.id == sid and snap.commit_kind == "OVERWRITE"
    assert t.drop_partitions({"dt": "nope"}) is None
    latest = t.latest_snapshot()
    assert latest is not None and latest.id == sid  # nothing committed
    with pytest.raises(InvalidPartitionSpecError, match="non-partition"):
        t.drop_partitions({"v": 1})
    with pytest.raises(InvalidPartitionSpecError, match="empty partition spec"):
        t.drop_partitions({})
    assert _partitions(t) == ["b", "d"]
    assert t.read(snapshot_id=before.id).num_rows == 4  # time travel still sees them


def test_drop_partition_in_sql(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = _table(cat)
    _write(t, ["a", "b", "c", "d"])
    s = Session(cat, database="db")
    s.execute("ALTER TABLE t DROP PARTITION (dt = 'a'), PARTITION (dt = 'b')")
    assert _partitions(t) == ["c", "d"]
    with pytest.raises(InvalidPartitionSpecError, match="no partition matches"):
        s.execute("ALTER TABLE t DROP PARTITION (dt = 'zz')")
    s.execute("ALTER TABLE t DROP IF EXISTS PARTITION (dt = 'zz')")
    s.execute("CALL sys.drop_partition(`table` => 'db.t', partitions => 'dt=c')")
    assert _partitions(t) == ["d"]


def test_values_time_expiry_after_commit(tmp_path: Path) -> None:
    t = _table(
        _catalog(tmp_path),
        **{
            "partition.expiration-time": "2 d",
            "partition.expiration-check-interval": "0 s",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
    )
    dts = [_day(0), _day(1), _day(3), _day(10), "not-a-date"]
    _write(t, dts)
    assert _partitions(t) == sorted([_day(0), _day(1), "not-a-date"])  # unparseable values never expire


def test_check_interval_spaces_the_checks(tmp_path: Path) -> None:
    t = _table(
        _catalog(tmp_path),
        **{"partition.expiration-time": "1 d", "partition.timestamp-formatter": "yyyyMMdd"},
    )
    _write(t, [_day(5)])  # the process's first commit checks at once
    assert _partitions(t) == []
    _write(t, [_day(6)])  # within partition.expiration-check-interval (1 h): not checked again
    assert _partitions(t) == [_day(6)]
    assert t.expire_partitions() == [{"dt": _day(6)}]  # on demand it runs
    assert _partitions(t) == []


def test_pattern_over_several_keys_and_max_num(tmp_path: Path) -> None:
    schema = pa.schema(
        [("id", pa.int64()), ("year", pa.string()), ("month", pa.string()), ("day", pa.string())]
    )
    cat = _catalog(tmp_path)
    t = cat.create_table(
        "db.p",
        schema=schema,
        partition_keys=["year", "month", "day"],
        options={"bucket": "-1", "partition.timestamp-pattern": "$year-$month-$day"},
    )
    days = [("2024", "01", "01"), ("2024", "02", "15"), ("2024", "03", "09"), ("2023", "12", "31")]
    cols = list(zip(*days, strict=True))
    t.write(pa.table({"id": range(4), "year": cols[0], "month": cols[1], "day": cols[2]}, schema=schema))
    dropped = t.expire_partitions(expiration_time_ms=86_400_000 * 20, max_expires=2, now=NOW)
    assert dropped == [
        {"year": "2023", "month": "12", "day": "31"},
        {"year": "2024", "month": "01", "day": "01"},
    ]
    dropped = t.expire_partitions(expiration_time_ms=86_400_000 * 20, now=NOW)
    assert dropped == [{"year": "2024", "month": "02", "day": "15"}]
    assert t.read().num_rows == 1


def test_update_time_strategy(tmp_path: Path) -> None:
    t = _table(_catalog(tmp_path), **{"partition.expiration-strategy": "update-time"})
    _write(t, ["x", "y"])
    assert t.expire_partitions(expiration_time_ms=3_600_000) == []  # files are new
    assert t.expire_partitions(expiration_time_ms=0) == [{"dt": "x"}, {"dt": "y"}]
    assert t.read().num_rows == 0


def test_expire_partitions_procedure(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = _table(cat)
    _write(t, ["2024-01-01", "2999-01-01"])
    s = Session(cat, database="db")
    out = s.execute("CALL sys.expire_partitions(`table` => 'db.t', expiration_time => '1 d')")[0].table
    assert out is not None and out.column("expired_partitions").to_pylist() == ["dt=2024-01-01"]
    out = s.execute("CALL sys.expire_partitions('db.t', '1 d')")[0].table
    assert out is not None and out.column("expired_partitions").to_pylist() == ["No expired partitions."]
    assert _partitions(t) == ["2999-01-01"]


def test_options_are_checked(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    with pytest.raises(InvalidOptionError, match="timestamp-formatter"):
        _table(cat, "db.bad1", **{"partition.timestamp-formatter": "yyyy-MM-dd EEE"})
    with pytest.raises(InvalidOptionError, match="expiration-strategy"):
        _table(cat, "db.bad2", **{"partition.expiration-strategy": "sometimes"})
    t = _table(cat, "db.ok")
    with pytest.raises(InvalidOptionError, match="expiration time"):
        t.expire_partitions()


# --------------------------------------------------------------------------- against a model


def _model_time(text: str) -> dt.datetime | None:
    """Paimon's default reading: y-M-d with an optional ' H:m:s'."""
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


@given(
    days=st.lists(st.integers(min_value=-30, max_value=30), min_size=1, max_size=8, unique=True),
    hours=st.booleans(),
    keep=st.integers(min_value=0, max_value=40),
    limit=st.integers(min_value=1, max_value=10),
)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_values_time_against_model(
    tmp_path: Path, days: list[int], hours: bool, keep: int, limit: int
) -> None:
    fmt = "%Y-%m-%d %H:%M:%S" if hours else "%Y-%m-%d"
    values = [(NOW + dt.timedelta(days=d, hours=5 if hours else 0)).strftime(fmt) for d in days]
    cat = _catalog(tmp_path)
    name = f"db.m{abs(hash((tuple(days), hours, keep, limit)))}"
    t = _table(cat, name)
    _write(t, values)
    cutoff = NOW - dt.timedelta(days=keep)
    old = sorted(v for v in values if (m := _model_time(v)) is not None and cutoff > m)[:limit]
    dropped = t.expire_partitions(expiration_time_ms=keep * 86_400_000, max_expires=limit, now=NOW)
    assert dropped == [{"dt": v} for v in old]
    assert _partitions(t) == sorted(set(values) - set(old))
    cat.drop_table(name)


def test_partition_time_reader() -> None:
    assert partition_time(["dt"], ["2024-1-5"], pattern=None, formatter=None) == dt.datetime(2024, 1, 5)
    assert partition_time(["dt"], ["2024-01-05 7:08:09.5"], pattern=None, formatter=None) == dt.datetime(
        2024, 1, 5, 7, 8, 9, 500000
    )
    assert partition_time(
        ["dt", "hh"], ["20240105", "07"], pattern="$dt $hh:00:00", formatter="yyyyMMdd HH:mm:ss"
    ) == (dt.datetime(2024, 1, 5, 7))
    assert partition_time(["dt", "dt1"], ["x", "2024-02-03"], pattern="$dt1", formatter=None) == dt.datetime(
        2024, 2, 3
    )
    assert partition_time(["dt"], ["2024-02-30"], pattern=None, formatter=None) is None
    assert partition_time(["dt"], [None], pattern=None, formatter=None) is None
    assert partition_time(["dt"], ["2024'01"], pattern=None, formatter="yyyy''MM") is None


@given(
    writes=st.lists(
        st.tuples(st.sampled_from(["p", "q", "r", "s"]), st.integers(min_value=0, max_value=20)),
        min_size=1,
        max_size=8,
    ),
    keep=st.integers(min_value=1, max_value=20),
    limit=st.integers(min_value=1, max_value=4),
)
@example(writes=[("p", 0), ("p", 0), ("p", 0), ("p", 0), ("p", 1)], keep=1, limit=1)  # once compacted
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_update_time_against_model(
    tmp_path: Path, writes: list[tuple[str, int]], keep: int, limit: int
) -> None:
    """update-time: a partition expires when its newest file was written more than the expiration time
    ago (each write below happens ``days`` days before NOW, on the fixed clock; a compaction's output
    would count as written when it ran, as in Java, so the writes do not compact)."""
    cat = _catalog(tmp_path)
    name = f"db.u{uuid.uuid4().hex}"
    t = _table(cat, name)
    # no compaction: a compacted file's creation time is the compaction's, which the model leaves out
    writer = t.with_dynamic_options({"write-only": "true"})
    newest: dict[str, dt.datetime] = {}
    for n, (part, days) in enumerate(writes):
        moment = NOW - dt.timedelta(days=days, seconds=n)
        with clock.fixed_clock(int(moment.timestamp() * 1000)):
            writer.write(pa.table({"id": [n], "dt": [part], "v": [n]}, schema=SCHEMA))
        newest[part] = max(newest.get(part, moment), moment)
    cutoff = NOW - dt.timedelta(days=keep)
    old = sorted(p for p, m in newest.items() if cutoff > m)[:limit]
    dropped = t.expire_partitions(
        expiration_time_ms=keep * 86_400_000, strategy="update-time", max_expires=limit, now=NOW
    )
    assert dropped == [{"dt": p} for p in old]
    assert _partitions(t) == sorted(set(newest) - set(old))
    cat.drop_table(name)
