"""Bloom-filter and bitmap file indexes lsmlake writes parse in Java Paimon, which uses them to skip files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from java_harness import JavaPaimon

import lsmlake
from lsmlake.schema_change import set_option

pytestmark = pytest.mark.java


def _names(part: int) -> list[str]:
    return [f"k{(i * 7919) % 100_003:06d}" for i in range(part * 200, part * 200 + 200)]


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"])  # embedded in the manifest / separate .index files
@pytest.mark.parametrize("index", ["bloom-filter", "bitmap"])
def test_java_skips_files_by_lsmlake_written_indexes(
    java_paimon: JavaPaimon, tmp_path: Path, threshold: str, index: str
) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    options = {f"file-index.{index}.columns": "name", "file-index.in-manifest-threshold": threshold}
    if index == "bloom-filter":
        options |= {"file-index.bloom-filter.name.items": "200", "file-index.bloom-filter.name.fpp": "0.01"}
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    table = catalog.create_table("db.t", schema=schema, options=options)
    for part in range(6):
        table.write(
            pa.table({"id": pa.array(range(part * 200, part * 200 + 200), pa.int64()), "name": _names(part)})
        )
    target = _names(3)[17]
    ours = table.read(filter=f"name = '{target}'").to_pylist()
    assert ours == [{"id": 617, "name": target}]
    pruned = len(table.scan(filter=f"name = '{target}'").plan.counts.by_file_index)
    rows, files = java_paimon.read_equal(warehouse, "db.t", "name", target)
    assert {"id": 617, "name": target} in [{"id": r["id"], "name": r["name"]} for r in rows]
    ids = {r["id"] // 200 for r in rows}  # Java returns whole files: the ones its indexes kept
    if threshold == "1 mb":  # embedded indexes are evaluated by Java's planning
        assert files == 6 - pruned and files <= 2
    assert ids <= {3} | set(range(6)) and len(ids) <= 2 and pruned >= 4


TYPES = [
    ("id", "BIGINT"),
    ("n", "INT"),
    ("name", "STRING"),
    ("x", "DOUBLE"),
    ("ts", "TIMESTAMP(6)"),
    ("d", "DATE"),
]


def _java_rows(part: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(part * 200, part * 200 + 200):
        h = (i * 7919) % 100_003  # spread: no file's min/max range excludes a probe
        out.append(
            {
                "id": h,
                "n": h - 50_000,
                "name": f"k{h:06d}",
                "x": h / 8,
                "ts": h * 1_000_003,
                "d": f"{1970 + h % 300}-0{1 + h % 9}-1{h % 10}",
            }
        )
    return out


@pytest.mark.parametrize("index", ["bloom-filter", "bitmap", "bsi"])
def test_lsmlake_prunes_with_java_written_indexes(
    java_paimon: JavaPaimon, tmp_path: Path, index: str
) -> None:
    warehouse = str(tmp_path / "warehouse")
    columns = {"bloom-filter": "id,n,name,x,ts,d", "bitmap": "id,n,name,x,ts,d", "bsi": "id,n,ts,d"}[index]
    options = {f"file-index.{index}.columns": columns, "bucket": "-1"}
    if index == "bloom-filter":
        options |= {f"file-index.bloom-filter.{c}.items": "200" for c in columns.split(",")}
        options |= {f"file-index.bloom-filter.{c}.fpp": "0.01" for c in columns.split(",")}
    java_paimon.create(warehouse, "db.t", TYPES, options=options)
    for part in range(6):
        java_paimon.write(warehouse, "db.t", _java_rows(part))
    table = lsmlake.Catalog(warehouse).get_table("db.t")
    full = table.read()
    probe = _java_rows(2)[33]
    filters = {
        "id": f"id = {probe['id']}",
        "n": f"n = {probe['n']}",
        "name": f"name = '{probe['name']}'",
        "x": f"x = {probe['x']}",
        "ts": f"ts = TIMESTAMP '{full.filter(pa.compute.field('id') == probe['id'])['ts'][0].as_py()}'",
        "d": f"d = DATE '{probe['d']}'",
    }
    for column in columns.split(","):
        text = filters[column]
        got = table.read(filter=text).column("id").to_pylist()
        assert probe["id"] in got and all(r == probe["id"] or column == "d" for r in got), text
        pruned = table.scan(filter=text).plan.counts.by_file_index
        assert len(pruned) >= 4, (text, pruned)


def test_java_skips_files_by_indexes_rewrite_file_index_added(
    java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Files written before the index was asked for, indexed by CALL sys.rewrite_file_index (their schema
    is the older one): Java evaluates the rewritten indexes as it evaluates written ones."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    table = catalog.create_table("db.t", schema=schema)
    for part in range(6):
        table.write(
            pa.table({"id": pa.array(range(part * 200, part * 200 + 200), pa.int64()), "name": _names(part)})
        )
    table = table.alter(
        set_option("file-index.bloom-filter.columns", "name"),
        set_option("file-index.bloom-filter.name.items", "200"),
        set_option("file-index.in-manifest-threshold", "1 mb"),
    )
    assert table.rewrite_file_index().rewritten == 6
    target = _names(3)[17]
    pruned = len(table.scan(filter=f"name = '{target}'").plan.counts.by_file_index)
    rows, files = java_paimon.read_equal(warehouse, "db.t", "name", target)
    assert {"id": 617, "name": target} in [{"id": r["id"], "name": r["name"]} for r in rows]
    assert pruned >= 4 and files == 6 - pruned
