"""Record-level expiry (`record-level.expire-time`): compaction drops rows whose time field has expired,
on a fixed clock and against a model of the merge."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core import clock
from lsmlake.errors import InvalidOptionError
from lsmlake.table import Table

NOW_S = 1_700_000_000  # the pinned clock, in epoch seconds
DAY_S = 86_400


@pytest.fixture(autouse=True)
def _real_clock_after() -> Iterator[None]:
    yield
    clock.set_fixed_clock(None)


def _table(tmp_path: Path, time_type: pa.DataType, *, name: str = "db.t", **options: str) -> Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", time_type), ("v", pa.string())])
    return cat.create_table(
        name,
        schema=schema,
        primary_key=["id"],
        options={
            "bucket": "1",
            "record-level.expire-time": "1 d",
            "record-level.time-field": "ts",
            "num-sorted-run.compaction-trigger": "50",
            **options,
        },
    )


def _ids(t: Table) -> list[int]:
    return sorted(t.read(columns=["id"]).column("id").to_pylist())


def test_time_field_rules(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="should be one of INT, BIGINT, or TIMESTAMP"):
        _table(tmp_path, pa.string())
    with pytest.raises(InvalidOptionError, match="can not find time field 'nope'"):
        _table(tmp_path, pa.int32(), **{"record-level.time-field": "nope"})
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    with pytest.raises(InvalidOptionError, match=r"needs record-level\.time-field"):
        cat.create_table(
            "db.x",
            schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]),
            primary_key=["id"],
            options={"record-level.expire-time": "1 h"},
        )


SECONDS = {
    "int": (pa.int32(), lambda s: s),
    "bigint-seconds": (pa.int64(), lambda s: s),
    "bigint-millis": (pa.int64(), lambda s: s * 1000),
    "timestamp": (pa.timestamp("us"), lambda s: dt.datetime(1970, 1, 1) + dt.timedelta(seconds=s)),
    "timestamp-ltz": (
        pa.timestamp("ms", tz="UTC"),
        lambda s: dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=s),
    ),
}


@pytest.mark.parametrize("kind", sorted(SECONDS))
def test_compaction_drops_expired_rows(tmp_path: Path, kind: str) -> None:
    time_type, encode = SECONDS[kind]
    t = _table(tmp_path, time_type)
    ages = {1: 3 * DAY_S, 2: DAY_S + 1, 3: DAY_S, 4: 10, 5: None}  # seconds before NOW_S; None: a null time
    ts = [None if a is None else encode(NOW_S - a) for a in ages.values()]
    clock.set_fixed_clock(NOW_S * 1000)
    t.write(pa.table({"id": list(ages), "ts": pa.array(ts, time_type), "v": ["x"] * 5}))
    assert _ids(t) == [1, 2, 3, 4, 5]  # reads do not expire rows; compaction does
    t.compact(full=True)
    assert _ids(t) == [3, 4, 5]  # 'older than now - expire-time' is strict: age exactly 1 d stays
    clock.set_fixed_clock((NOW_S + DAY_S) * 1000)
    t.compact(full=True)  # one max-level file now holds expired rows: it is rewritten
    assert _ids(t) == [5]


def test_an_expired_newer_version_uncovers_an_older_one_as_in_paimon(tmp_path: Path) -> None:
    t = _table(tmp_path, pa.int64())
    clock.set_fixed_clock(NOW_S * 1000)
    t.write(pa.table({"id": [1], "ts": [NOW_S], "v": ["old version, recent time"]}))
    t.write(pa.table({"id": [1], "ts": [NOW_S - 2 * DAY_S], "v": ["new version, expired time"]}))
    assert t.read().column("v").to_pylist() == ["new version, expired time"]
    t.compact(full=True)  # expiry filters records before they merge
    assert t.read().column("v").to_pylist() == ["old version, recent time"]


def test_deletion_vector_tables_expire_in_their_writes_compaction(tmp_path: Path) -> None:
    t = _table(tmp_path, pa.int32(), **{"deletion-vectors.enabled": "true"})
    clock.set_fixed_clock(NOW_S * 1000)
    t.write(pa.table({"id": [1, 2], "ts": pa.array([NOW_S, NOW_S - 2 * DAY_S], pa.int32()), "v": ["a", "b"]}))
    assert _ids(t) == [1]  # the write's own compaction moved level 0 up, dropping the expired row


def _model(batches: list[list[tuple[int, int | None, bool]]], now: int, expire: int) -> dict[int, int | None]:
    """Per key, the newest version whose time has not expired (a null time never does); deletes win."""
    live: dict[int, tuple[int | None, bool]] = {}
    for batch in batches:
        for key, ts, delete in batch:
            if ts is None or now <= ts + expire:
                live[key] = (ts, delete)
    return {k: ts for k, (ts, delete) in live.items() if not delete}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 6),
                st.one_of(st.none(), st.integers(NOW_S - 3 * DAY_S, NOW_S)),
                st.booleans(),
            ),
            min_size=1,
            max_size=6,
            unique_by=lambda r: r[0],
        ),
        min_size=1,
        max_size=4,
    ),
    compact_before=st.booleans(),
)
def test_compaction_matches_the_model(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[list[tuple[int, int | None, bool]]],
    compact_before: bool,
) -> None:
    t = _table(tmp_path_factory.mktemp("rle"), pa.int64())
    clock.set_fixed_clock((NOW_S - 4 * DAY_S) * 1000)  # nothing has expired yet while writing
    for batch in batches:
        with t.writer() as w:
            upserts = [(k, ts) for k, ts, delete in batch if not delete]
            if upserts:
                w.write(
                    pa.table(
                        {
                            "id": [k for k, _ in upserts],
                            "ts": pa.array([ts for _, ts in upserts], pa.int64()),
                            "v": ["x"] * len(upserts),
                        }
                    )
                )
            deletes = [k for k, _, delete in batch if delete]
            if deletes:
                w.delete(pa.table({"id": deletes}))
        if compact_before:
            t.compact(full=True)
    # deletes carry a null time: they never expire
    model_batches = [[(k, None if d else ts, d) for k, ts, d in b] for b in batches]
    clock.set_fixed_clock(NOW_S * 1000)
    t.compact(full=True)
    got = {r["id"]: r["ts"] for r in t.read(columns=["id", "ts"]).to_pylist()}
    if compact_before:  # earlier compactions merged versions first: only the survivors are aged
        expected: dict[int, int | None] = {}
        merged = _model(model_batches, NOW_S - 4 * DAY_S, DAY_S)
        expected = {k: ts for k, ts in merged.items() if ts is None or ts + DAY_S >= NOW_S}
    else:
        expected = _model(model_batches, NOW_S, DAY_S)
    assert got == expected
