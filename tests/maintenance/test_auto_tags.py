"""Automatic tags (process-time, batch), tag expiry by time retained and the tag procedures, on a fixed
clock and against a model of Paimon's TagAutoCreation."""

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
from lsmlake.core.tag_period import tag_period
from lsmlake.errors import AlreadyExistsError, InvalidOptionError, NoSuchTagError
from lsmlake.sql import Session
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
UTC = dt.timezone.utc
HOUR_MS = 3_600_000


def _ms(text: str) -> int:
    """Epoch ms of a UTC wall-clock time such as '2024-01-02 10:00'."""
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.fixture(autouse=True)
def _real_clock_after() -> Iterator[None]:
    yield
    clock.set_fixed_clock(None)


def _table(tmp_path: Path, name: str = "db.t", **options: str) -> Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table(
        name,
        schema=SCHEMA,
        primary_key=["id"],
        options={
            "bucket": "1",
            "sink.process-time-zone": "UTC",
            "num-sorted-run.compaction-trigger": "50",
            **options,
        },
    )


def _write_at(t: Table, when: str, key: int = 1) -> int:
    clock.set_fixed_clock(_ms(when))
    sid = t.write(pa.table({"id": [key], "v": [key]}, schema=SCHEMA))
    assert sid is not None
    return sid


def _tags(t: Table) -> dict[str, int]:
    return {tag.name: tag.snapshot.id for tag in t.list_tags()}


# --------------------------------------------------------------------------- names and periods


@pytest.mark.parametrize(
    ("period", "formatter", "name"),
    [
        ("daily", "with_dashes", "2024-03-09"),
        ("daily", "without_dashes", "20240309"),
        ("hourly", "with_dashes", "2024-03-09 14"),
        ("hourly", "without_dashes", "20240309 14"),
        ("hourly", "without_dashes_and_spaces", "2024030914"),
        ("two-hours", "without_dashes", "2024-03-09 14"),
    ],
)
def test_period_names(period: str, formatter: str, name: str) -> None:
    p = tag_period(period, formatter, None)
    moment = p.normalize_to_previous_tag(
        dt.datetime(2024, 3, 9, 14, 20) + dt.timedelta(milliseconds=p.period_ms)
    )
    assert p.time_to_tag(moment) == name
    assert p.tag_to_time(name) == moment and p.is_auto_tag(name)


def test_period_names_are_read_strictly() -> None:
    daily, hourly = tag_period("daily", "with_dashes", None), tag_period("hourly", "with_dashes", None)
    assert (
        not daily.is_auto_tag("2024-02-30")
        and not daily.is_auto_tag("v1")
        and not daily.is_auto_tag("24-01-01")
    )
    assert daily.is_auto_tag("2024-02-29 10")  # Java's daily handler reads the first word only
    assert not hourly.is_auto_tag("2024-01-01 24") and not hourly.is_auto_tag("2024-01-01")
    custom = tag_period("daily", "with_dashes", 30 * 60_000)
    assert (
        custom.time_to_tag(custom.normalize_to_previous_tag(dt.datetime(2024, 1, 1, 10, 40)))
        == "202401011000"
    )


def test_bad_tag_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="creation-delay"):
        _table(
            tmp_path,
            "db.a",
            **{
                "tag.automatic-creation": "process-time",
                "tag.creation-period": "hourly",
                "tag.creation-delay": "1 h",
            },
        )
    with pytest.raises(InvalidOptionError, match="time zone"):
        _table(tmp_path, "db.b", **{"sink.process-time-zone": "Mars/Olympus"})
    with pytest.raises(InvalidOptionError, match="weekly"):
        _table(tmp_path, "db.c", **{"tag.creation-period": "weekly"})


# --------------------------------------------------------------------------- process-time


def test_daily_tags_follow_commit_time(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"tag.automatic-creation": "process-time", "tag.creation-delay": "10 min"})
    s1 = _write_at(t, "2024-01-02 10:00")
    assert _tags(t) == {"2024-01-01": s1}  # no tag yet: the previous period is tagged at once
    _write_at(t, "2024-01-02 23:00")
    _write_at(t, "2024-01-03 00:05")  # within the delay
    assert _tags(t) == {"2024-01-01": s1}
    s4 = _write_at(t, "2024-01-03 00:10")
    assert _tags(t) == {"2024-01-01": s1, "2024-01-02": s4}
    s5 = _write_at(t, "2024-01-06 08:00")  # days without commits get no tag
    assert _tags(t) == {"2024-01-01": s1, "2024-01-02": s4, "2024-01-05": s5}
    assert t.read(tag="2024-01-02").num_rows == 1


def test_completion_fills_missing_periods_and_retention_keeps_the_newest(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        **{
            "tag.automatic-creation": "process-time",
            "tag.creation-period": "hourly",
            "tag.automatic-completion": "true",
            "tag.num-retained-max": "2",
        },
    )
    t.create_tag("manual-before", _write_at(t, "2024-01-01 10:30"))
    assert set(_tags(t)) == {"2024-01-01 09", "manual-before"}
    _write_at(t, "2024-01-01 14:00")  # hours 10..13 are missing: one is completed per snapshot
    _write_at(t, "2024-01-01 14:10")
    _write_at(t, "2024-01-01 14:20")
    # 10, 11 and 12 were created, and the oldest automatic ones went; the manual tag stays
    assert set(_tags(t)) == {"2024-01-01 11", "2024-01-01 12", "manual-before"}


def test_an_auto_tagged_snapshot_refuses_another_auto_tag_name(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"tag.automatic-creation": "process-time"})
    sid = _write_at(t, "2024-01-02 10:00")
    with pytest.raises(AlreadyExistsError, match="auto-tagged"):
        t.create_tag("2023-12-31", sid)
    t.create_tag("release", sid)  # other names are fine


def _model(
    times: list[int], period_ms: int, delay_ms: int, completion: bool, keep: int | None
) -> dict[str, int]:
    """Paimon's TagAutoCreation over snapshots 1..n committed at ``times`` (UTC ms), in Python terms."""
    tags: dict[str, int] = {}
    next_tag: dt.datetime | None = None
    for sid, millis in enumerate(times, start=1):
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)
        if next_tag is None or moment - dt.timedelta(milliseconds=delay_ms) >= next_tag + dt.timedelta(
            milliseconds=period_ms
        ):
            start = (millis // period_ms - 1) * period_ms
            this = (
                next_tag
                if completion and next_tag is not None
                else dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=start)
            )
            tags[this.strftime("%Y%m%d%H%M")] = sid
            next_tag = this + dt.timedelta(milliseconds=period_ms)
            if keep is not None:
                for name, _ in sorted(tags.items(), key=lambda kv: kv[1])[: max(len(tags) - keep, 0)]:
                    del tags[name]
    return tags


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(st.integers(min_value=0, max_value=5 * 60), min_size=1, max_size=6),
    period_min=st.sampled_from([30, 60, 90]),
    delay_min=st.integers(min_value=0, max_value=29),
    completion=st.booleans(),
    keep=st.one_of(st.none(), st.integers(min_value=1, max_value=3)),
)
def test_auto_tags_match_the_model(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[int],
    period_min: int,
    delay_min: int,
    completion: bool,
    keep: int | None,
) -> None:
    options = {
        "tag.automatic-creation": "process-time",
        "tag.creation-period-duration": f"{period_min} min",
        "tag.creation-delay": f"{delay_min} min",
        "tag.automatic-completion": str(completion).lower(),
    }
    if keep is not None:
        options["tag.num-retained-max"] = str(keep)
    t = _table(tmp_path_factory.mktemp("auto"), **options)
    times, now = [], _ms("2024-05-01 00:00")
    for i, step in enumerate(steps):
        now += step * 60_000
        clock.set_fixed_clock(now)
        t.write(pa.table({"id": [i], "v": [i]}, schema=SCHEMA))
        times.append(now)
    assert _tags(t) == _model(times, period_min * 60_000, delay_min * 60_000, completion, keep)


# --------------------------------------------------------------------------- expiry by time retained


def test_tags_expire_after_their_time_retained(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"tag.automatic-creation": "process-time", "tag.default-time-retained": "2 h"})
    _write_at(t, "2024-01-02 10:00")
    t.create_tag("kept")  # Table.create_tag takes the default retention too
    t.create_tag("forever-ish", time_retained_ms=10 * HOUR_MS)
    tags = {x.name: x for x in t.list_tags()}
    assert tags["2024-01-01"].time_retained_ms == 2 * HOUR_MS and tags["kept"].create_time is not None
    _write_at(t, "2024-01-02 11:59", key=2)
    assert set(_tags(t)) == {"2024-01-01", "kept", "forever-ish"}
    _write_at(t, "2024-01-02 12:01", key=3)  # the commit's tag expiry deletes the two 2-hour tags
    assert set(_tags(t)) == {"forever-ish"}
    clock.set_fixed_clock(_ms("2024-01-03 00:00"))
    assert t.expire_tags() == ["forever-ish"]


def test_tags_table_shows_creation_time_and_retention(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _write_at(t, "2024-01-02 10:00")
    t.create_tag("r", time_retained_ms=HOUR_MS + 500)
    t.create_tag("plain")
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    rows = {r["tag_name"]: r for r in cat.get_table("db.t$tags").read().to_pylist()}
    assert rows["plain"]["create_time"] is None and rows["plain"]["time_retained"] is None
    assert rows["r"]["time_retained"] == "PT1H0.5S"
    assert rows["r"]["create_time"] == dt.datetime.fromtimestamp(_ms("2024-01-02 10:00") / 1000)


def test_tag_expiry_can_be_turned_off(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"tag.time-expire-enabled": "false"})
    _write_at(t, "2024-01-02 10:00")
    t.create_tag("short", time_retained_ms=1000)
    _write_at(t, "2024-01-02 12:00", key=2)
    assert "short" in _tags(t)


# --------------------------------------------------------------------------- batch


def test_batch_tags(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"tag.automatic-creation": "batch", "tag.num-retained-max": "2"})
    s1 = _write_at(t, "2024-01-02 10:00")
    assert _tags(t) == {"batch-write-2024-01-02": s1}
    s2 = _write_at(t, "2024-01-02 11:00", key=2)  # same day: the tag is replaced
    assert _tags(t) == {"batch-write-2024-01-02": s2}
    t.create_tag("manual", s1)
    s3 = _write_at(t, "2024-01-03 09:00", key=3)
    # three tags, two kept: the oldest snapshot's tag goes first (batch mode counts every tag)
    assert _tags(t) == {"batch-write-2024-01-02": s2, "batch-write-2024-01-03": s3}
    named = _table(
        tmp_path, "db.named", **{"tag.automatic-creation": "batch", "tag.batch.customized-name": "nightly"}
    )
    assert _tags(named) == {}
    sid = _write_at(named, "2024-01-02 10:00")
    assert _tags(named) == {"nightly": sid}


# --------------------------------------------------------------------------- procedures and methods


def test_tag_procedures(tmp_path: Path) -> None:
    t = _table(tmp_path)
    s1 = _write_at(t, "2024-01-02 10:00")
    s2 = _write_at(t, "2024-01-02 11:00", key=2)
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    s = Session(cat, database="db")
    out = s.execute(f"CALL sys.create_tag_from_timestamp('db.t', 'at', {_ms('2024-01-02 10:30')})")[0].table
    assert out.to_pylist() == [
        {"tagName": "at", "snapshot": s2, "commit_time": _ms("2024-01-02 11:00"), "watermark": "None"}
    ]
    t.create_tag("first", s1)
    t.expire_snapshots(retain_min=1, retain_max=1)  # snapshot 1 lives on in tag 'first' only
    assert t.create_tag_from_timestamp("early", _ms("2024-01-02 09:00")).snapshot.id == s1
    s.execute("CALL sys.rename_tag(`table` => 'db.t', tagName => 'at', targetTagName => 'moved')")
    assert "moved" in _tags(t) and "at" not in _tags(t)
    with pytest.raises(AlreadyExistsError):
        t.rename_tag("moved", "first")
    with pytest.raises(NoSuchTagError):
        t.rename_tag("nope", "x")
    s.execute(
        "CALL sys.replace_tag(`table` => 'db.t', tag => 'first', snapshot_id => 2, time_retained => '1 h')"
    )
    assert _tags(t)["first"] == s2
    with pytest.raises(NoSuchTagError):
        t.replace_tag("absent")
    clock.set_fixed_clock(_ms("2024-01-02 13:00"))
    out = s.execute("CALL sys.expire_tags('db.t')")[0].table
    assert out.column("expired_tags").to_pylist() == ["first"]
    out = s.execute("CALL sys.expire_tags('db.t')")[0].table
    assert out.column("expired_tags").to_pylist() == ["No expired tags."]
    future = (dt.datetime.now() + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    out = s.execute(f"CALL sys.expire_tags(`table` => 'db.t', older_than => '{future}')")[0].table
    assert sorted(out.column("expired_tags").to_pylist()) == ["early", "moved"]  # by their files' times
    assert _tags(t) == {}


def test_automatic_tags_of_another_writer_are_picked_up(tmp_path: Path) -> None:
    """Progress kept between commits of one process gives way to tags another process made."""
    t = _table(tmp_path, **{"tag.automatic-creation": "process-time"})
    s1 = _write_at(t, "2024-01-02 10:00")
    s2 = _write_at(t, "2024-01-02 11:00", key=2)
    t.create_tag("2024-01-03", s2)  # as another writer's TagAutoCreation would name it
    _write_at(t, "2024-01-03 12:00", key=3)  # the next tag is 2024-01-04's: not due yet
    assert _tags(t) == {"2024-01-01": s1, "2024-01-03": s2}


def test_progress_kept_between_commits_gives_way_to_a_rollback(tmp_path: Path) -> None:
    """After a rollback, the snapshots that replace the ones this process scanned are scanned again:
    the tag goes on the first snapshot past the period, as a fresh process would put it."""
    t = _table(tmp_path, **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly"})
    s1 = _write_at(t, "2024-01-02 10:10")
    _write_at(t, "2024-01-02 10:20", key=2)
    _write_at(t, "2024-01-02 10:30", key=3)  # this process has now scanned up to snapshot 3
    assert _tags(t) == {"2024-01-02 09": s1}
    t.rollback_to(s1)
    quiet = t.with_dynamic_options({"write-only": "true"})  # no after-commit run between the two
    s2 = _write_at(quiet, "2024-01-02 11:05", key=4)
    _write_at(quiet, "2024-01-02 11:06", key=5)
    assert t.create_auto_tags() == ["2024-01-02 10"]
    assert _tags(t) == {"2024-01-02 09": s1, "2024-01-02 10": s2}
