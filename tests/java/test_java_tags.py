"""Automatic tags, tag expiry and record-level expiry across Java Paimon and lsmlake: each side's commits
continue the other's automatic tags and expire its tags by time retained, `$tags` reads the same, and both
sides' compactions drop the same expired rows."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows

import lsmlake
from lsmlake.core import clock
from lsmlake.core.tag_period import tag_period
from lsmlake.table import Table

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])
OPTIONS = {
    "bucket": "1",
    "tag.automatic-creation": "process-time",
    "tag.creation-period": "hourly",
    "tag.default-time-retained": "1 d",
    "num-sorted-run.compaction-trigger": "50",
}


def _table(tmp_path: Path, name: str) -> tuple[str, Table]:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db", exist_ok=True)
    return warehouse, catalog.create_table(name, schema=SCHEMA, primary_key=["id"], options=OPTIONS)


def _ours(t: Table, key: int) -> None:
    t.write(pa.table({"id": pa.array([key], pa.int32()), "v": ["ours"]}))


def _expected(t: Table) -> dict[str, int]:
    """The model: Paimon's hourly rule over the table's snapshots (the JVM and Python share the zone)."""
    period = tag_period("hourly", "with_dashes", None)
    tags: dict[str, int] = {}
    next_tag: dt.datetime | None = None
    for sid in range(1, (t.latest_snapshot() or pytest.fail("no snapshot")).id + 1):
        moment = dt.datetime.fromtimestamp(t.snapshot(sid).time_millis / 1000)
        if next_tag is None or moment >= period.next_tag_time(next_tag):
            this = period.normalize_to_previous_tag(moment)
            tags[period.time_to_tag(this)] = sid
            next_tag = period.next_tag_time(this)
    return tags


def test_each_side_continues_the_others_automatic_tags(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse, java_first = _table(tmp_path, "db.java_first")
    java_paimon.write(warehouse, "db.java_first", [{"id": 1, "v": "java"}])
    _ours(java_first, 2)
    java_paimon.write(warehouse, "db.java_first", [{"id": 3, "v": "java"}])
    tags = {t.name: t.snapshot.id for t in java_first.list_tags()}
    assert tags == _expected(java_first) and 1 in tags.values()

    _, ours_first = _table(tmp_path, "db.ours_first")
    _ours(ours_first, 1)
    java_paimon.write(warehouse, "db.ours_first", [{"id": 2, "v": "java"}])  # no second tag of snapshot 1
    _ours(ours_first, 3)
    assert {t.name: t.snapshot.id for t in ours_first.list_tags()} == _expected(ours_first)
    assert java_paimon.snapshots(warehouse, "db.ours_first")[1] == sorted(_expected(ours_first))

    # the tags' creation time and time retained read the same on both sides
    ident = "db.ours_first$tags"
    ours = arrow_rows(lsmlake.Catalog(warehouse).get_table(ident).read())
    java = [
        {k: v for k, v in r.items() if k != "_kind"}
        for r in java_paimon.system(warehouse, "db.ours_first", "tags")
    ]
    for row in java:  # the column is TIMESTAMP(3); the harness prints the LocalDateTime's micros
        row["create_time"] = row["create_time"] // 1000 * 1000
    assert java == ours and all(r["time_retained"] == "PT24H" and r["create_time"] for r in ours)


def test_each_side_expires_the_others_tags(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse, t = _table(tmp_path, "db.t")
    _ours(t, 1)
    with clock.fixed_clock(clock.epoch_millis() - 3_600_000):  # created an hour ago, kept for a minute
        t.create_tag("ours-old", time_retained_ms=60_000)
    t.create_tag("ours-young", time_retained_ms=86_400_000)
    java_paimon.write(warehouse, "db.t", [{"id": 2, "v": "java"}])  # Java's commit runs TagTimeExpire
    names = {x.name for x in t.list_tags()}
    assert "ours-old" not in names and "ours-young" in names
    java_paimon.create_tag(warehouse, "db.t", "java-tag")  # Table.createTag: tag.default-time-retained
    (java_tag,) = [x for x in t.list_tags() if x.name == "java-tag"]
    assert java_tag.time_retained_ms == 86_400_000 and java_tag.create_time is not None
    with clock.fixed_clock(clock.epoch_millis() + 2 * 86_400_000):
        _ours(t, 3)  # two days later, lsmlake's commit expires Java's tag and its own
    assert {x.name for x in t.list_tags()} & {"java-tag", "ours-young"} == set()


def test_record_level_expiry_compacts_to_the_same_rows(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """Java's full compaction and lsmlake's drop the same expired rows (times far from the real clock)."""
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("ts", pa.int64()), ("v", pa.string())])
    now_ms = clock.epoch_millis()
    day = 86_400_000
    sides = {}
    for side in ("java", "ours"):
        warehouse = str(tmp_path / side)
        catalog = lsmlake.Catalog(warehouse)
        catalog.create_database("db")
        sides[side] = (warehouse, catalog)
    warehouse, catalog = sides["java"]
    t = catalog.create_table(
        "db.r",
        schema=schema,
        primary_key=["id"],
        options={
            "bucket": "1",
            "record-level.expire-time": "1 d",
            "record-level.time-field": "ts",
            "num-sorted-run.compaction-trigger": "50",
        },
    )
    t.write(
        pa.table(
            {
                "id": pa.array([1, 2, 3, 4], pa.int32()),
                "ts": [now_ms - 10 * day, now_ms, None, 5],
                "v": ["old", "fresh", "null", "seconds, 1970"],
            },
            schema=schema,
        )
    )
    t.write(
        pa.table(
            {
                "id": pa.array([5, 2], pa.int32()),
                "ts": [now_ms + day, now_ms - 3 * day],
                "v": ["future", "fresh key, expired version"],
            },
            schema=schema,
        )
    )
    shutil.rmtree(sides["ours"][0])
    shutil.copytree(warehouse, sides["ours"][0])
    java_paimon.compact(warehouse, "db.r", full=True)
    ours = sides["ours"][1].get_table("db.r")
    assert isinstance(ours, Table)
    ours.compact(full=True)
    expected = [{"id": 2, "v": "fresh"}, {"id": 3, "v": "null"}, {"id": 5, "v": "future"}]
    for w, cat in sides.values():
        got = cat.get_table("db.r").read(columns=["id", "v"]).sort_by("id").to_pylist()
        assert got == expected, w
