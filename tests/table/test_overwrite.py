"""INSERT OVERWRITE and TRUNCATE: one OVERWRITE snapshot replacing whole partitions."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import InvalidPartitionSpecError, SqlError
from lsmlake.sql.session import execute

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def rows(t: lsmlake.Table) -> list[tuple[str, int, int]]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.read().to_pylist())


@pytest.mark.parametrize("dv", ["false", "true"])
def test_overwrite_replaces_only_the_written_partitions(catalog: lsmlake.Catalog, dv: str) -> None:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "deletion-vectors.enabled": dv},
    )
    t.write(pa.table({"id": [1, 2, 1], "dt": ["a", "a", "b"], "v": [1, 2, 3]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "dt": ["a"], "v": [20]}, schema=SCHEMA))
    sid = t.overwrite(pa.table({"id": [9], "dt": ["a"], "v": [90]}, schema=SCHEMA))
    kinds = [t.snapshot(i).commit_kind for i in t.snapshot_manager.snapshot_ids()]
    assert "OVERWRITE" in kinds and kinds[-1] in ("OVERWRITE", "COMPACT")  # DV tables compact the new files
    assert rows(t) == [("a", 9, 90), ("b", 1, 3)]
    t.overwrite(pa.table({"id": [], "dt": [], "v": []}, schema=SCHEMA), partitions={"dt": "b"})
    assert rows(t) == [("a", 9, 90)]
    t.write(pa.table({"id": [9, 5], "dt": ["a", "c"], "v": [91, 5]}, schema=SCHEMA))
    assert rows(t) == [("a", 9, 91), ("c", 5, 5)]
    t.truncate()
    assert rows(t) == []
    assert t.read(snapshot_id=sid).num_rows == 2  # time travel still sees the past


def test_overwrite_unpartitioned_replaces_everything(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table("db.u", schema=schema)
    t.write(pa.table({"id": [1, 2], "v": [1, 2]}, schema=schema))
    t.overwrite(pa.table({"id": [3], "v": [3]}, schema=schema))
    assert t.read().to_pylist() == [{"id": 3, "v": 3}]


def _partitioned(catalog: lsmlake.Catalog) -> lsmlake.Table:
    t = catalog.create_table(
        "db.p", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"}
    )
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": [1, 2]}, schema=SCHEMA))
    return t


def test_static_overwrite_refuses_rows_outside_its_partition(
    catalog: lsmlake.Catalog, tmp_path: Path
) -> None:
    t = _partitioned(catalog)
    files = sorted(tmp_path.rglob("*"))
    stray = pa.table({"id": [3, 4], "dt": ["a", "b"], "v": [3, 4]}, schema=SCHEMA)
    with pytest.raises(InvalidPartitionSpecError, match=r"\{'dt': 'a'\}.*dt='b'"):
        t.overwrite(stray, partitions={"dt": "a"})
    assert t.latest_snapshot().id == 1 and rows(t) == [("a", 1, 1), ("b", 2, 2)]
    assert sorted(tmp_path.rglob("*")) == files  # nothing written, not even a data file
    with pytest.raises(InvalidPartitionSpecError, match="non-partition column"):
        t.overwrite(stray.slice(0, 1), partitions={"v": 3})
    with pytest.raises(InvalidPartitionSpecError, match="unknown column"):
        t.overwrite(stray.slice(0, 1), partitions={"nope": "a"})
    t.overwrite(stray.slice(0, 1), partitions={"dt": "a"})
    assert rows(t) == [("a", 3, 3), ("b", 2, 2)]


def test_overwrite_spec_on_an_unpartitioned_table_is_refused(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table("db.u", schema=schema)
    t.write(pa.table({"id": [1], "v": [1]}, schema=schema))
    with pytest.raises(InvalidPartitionSpecError, match="non-partition"):
        t.overwrite(pa.table({"id": [2], "v": [2]}, schema=schema), partitions={"id": 2})
    assert t.read().to_pylist() == [{"id": 1, "v": 1}]


def test_spec_values_are_typed_as_the_partition_column(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("v", pa.int64())])
    t = catalog.create_table("db.d", schema=schema, partition_keys=["day"])
    day = pa.array(["2024-01-01", "2024-01-02"]).cast(pa.date32())
    t.write(pa.table({"id": [1, 2], "day": day, "v": [1, 2]}, schema=schema))
    t.overwrite(schema.empty_table(), partitions={"day": "2024-01-01"})  # a string, as Paimon specs are
    assert [r["id"] for r in t.read().to_pylist()] == [2]
    with pytest.raises(InvalidPartitionSpecError, match="does not fit column day"):
        t.overwrite(schema.empty_table(), partitions={"day": "yesterday"})


def test_static_overwrite_option_replaces_the_whole_table(catalog: lsmlake.Catalog) -> None:
    t = _partitioned(catalog)
    static = t.with_options({"dynamic-partition-overwrite": "false"})
    static.overwrite(pa.table({"id": [9], "dt": ["a"], "v": [9]}, schema=SCHEMA))
    assert rows(t) == [("a", 9, 9)]


def test_sql_insert_overwrite_partition(catalog: lsmlake.Catalog) -> None:
    t = _partitioned(catalog)

    def sql(text: str) -> None:
        execute(catalog, text, database="db")

    sql("INSERT OVERWRITE p PARTITION (dt='a') SELECT 5, 50")  # Flink: static columns not selected
    sql("INSERT OVERWRITE p PARTITION (dt='a') (v, id) VALUES (60, 6)")
    assert rows(t) == [("a", 6, 60), ("b", 2, 2)]
    with pytest.raises(SqlError, match="2 are expected"):
        sql("INSERT OVERWRITE p PARTITION (dt='a') SELECT 7, 'b', 70")
    with pytest.raises(SqlError, match=r"static partition column\(s\) \['dt'\]"):
        sql("INSERT OVERWRITE p PARTITION (dt='a') (id, dt, v) VALUES (7, 'b', 70)")
    with pytest.raises(SqlError, match="not a partition column"):
        sql("INSERT OVERWRITE p PARTITION (v=1) VALUES (7, 'a')")
    with pytest.raises(SqlError, match="no column 'zz'"):
        sql("INSERT OVERWRITE p PARTITION (zz='a') VALUES (7, 70)")
    assert rows(t) == [("a", 6, 60), ("b", 2, 2)]


def test_a_dynamic_overwrite_of_nothing_publishes_nothing(catalog: lsmlake.Catalog) -> None:
    """Paimon skips a dynamic partition overwrite with no new files (no partition to replace); a static
    one of a partition, or of an unpartitioned table, still empties it."""
    t = _partitioned(catalog)
    assert t.overwrite(pa.table({"id": [], "dt": [], "v": []}, schema=SCHEMA)) is None
    assert t.snapshot_manager.latest_id() == 1 and t.read().num_rows == 2
    assert t.overwrite(pa.table({"id": [], "dt": [], "v": []}, schema=SCHEMA), partitions={"dt": "a"}) == 2
    assert t.read().column("dt").to_pylist() == ["b"]
