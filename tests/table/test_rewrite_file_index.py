"""CALL sys.rewrite_file_index: indexes added, changed and removed on live files after ALTER TABLE SET."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.format.file_index.container import read_container
from lsmlake.maintenance.files import FileLocator
from lsmlake.metadata.restore import RestoredState
from lsmlake.schema_change import remove_option, set_option
from lsmlake.sql import execute
from lsmlake.table.file_index_rewrite import next_index_name

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])


def _rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table(
        {"id": ids, "name": [f"u{(i * 37) % 997:03d}" for i in ids], "dt": [dt] * len(ids)}, schema=SCHEMA
    )


def _files(t: lsmlake.Table) -> dict[str, tuple[tuple[str, ...], bytes | None, str]]:
    """Every live file's extra files, embedded index and partition (level 0 included)."""
    locator = FileLocator(t)
    restored = RestoredState.load(t.io, t.paths, t.latest_snapshot())
    return {
        e.file.file_name: (
            e.file.extra_files,
            e.file.embedded_index,
            str(locator.partition_values(e.partition)[0]),
        )
        for entries in restored.files.values()
        for e in entries
    }


def test_next_index_name_follows_paimon() -> None:
    assert next_index_name("data-1a-0.parquet.index") == "data-1a-0.parquet-1.index"
    assert next_index_name("data-1a-0.parquet-1.index") == "data-1a-0.parquet-2.index"
    assert next_index_name("data-1a-0.parquet-9.index") == "data-1a-0.parquet-10.index"


@pytest.mark.parametrize("dv", [False, True])
def test_indexes_added_changed_and_removed(tmp_path: Path, dv: bool) -> None:
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1", "write-only": "true", "deletion-vectors.enabled": str(dv).lower()},
    )
    for part in range(4):
        t.write(_rows(list(range(part, 400, 4)), "a"))
    t.write(_rows(list(range(50)), "b"))
    t.delete(pa.table({"dt": ["a"], "id": [1]}))
    if dv:
        t.with_options({"write-only": "false"}).compact()
    before = t.read()
    assert all(x == () and e is None for x, e, _ in _files(t).values())

    # an index asked for after the files were written: only the named partition gets it
    t = t.alter(
        set_option("file-index.bloom-filter.columns", "name"),
        set_option("file-index.bloom-filter.name.items", "100"),
    )
    result = t.rewrite_file_index({"dt": "b"})
    files = _files(t)
    assert result.rewritten == sum(1 for *_, p in files.values() if p == "b") >= 1
    assert all((e is not None or x != ()) == (p == "b") for x, e, p in files.values())
    assert t.read().sort_by("id").equals(before.sort_by("id"))

    # every partition, with indexes too big to embed: `<data file>.index` files beside the data
    t = t.alter(set_option("file-index.bloom-filter.name.items", "5000"))
    result = t.rewrite_file_index()
    assert result.rewritten == len(_files(t))
    for name, (extras, embedded, _) in _files(t).items():
        assert extras == (name + ".index",) and embedded is None
        blob = read_container(
            (Path(t.root) / f"dt={_files(t)[name][2]}" / "bucket-0" / extras[0]).read_bytes(), source=name
        )
        assert [(b.column, b.index_type) for b in blob] == [("name", "bloom-filter")]
    target = _rows([200], "a")["name"][0].as_py()  # a name only partition a holds
    assert t.read(filter=f"name = '{target}'").equals(before.filter(pa.compute.equal(before["name"], target)))
    if dv:  # planning uses indexes on primary-key tables with deletion vectors
        assert "pruned by file index" in t.explain(filter=f"name = '{target}'")

    # unchanged options: nothing to do, no snapshot
    latest = t.latest_snapshot()
    assert t.rewrite_file_index().snapshot_id is None and t.latest_snapshot() == latest

    # new settings: the next index file name, the old one left for expiry
    t = t.alter(set_option("file-index.bloom-filter.name.items", "6000"))
    t.rewrite_file_index()
    assert all(extras == (name + "-1.index",) for name, (extras, _, _) in _files(t).items())
    # no index option: indexes removed
    t = t.alter(
        remove_option("file-index.bloom-filter.columns"), remove_option("file-index.bloom-filter.name.items")
    )
    t.rewrite_file_index()
    assert all(x == () and e is None for x, e, _ in _files(t).values())
    assert t.read().sort_by("id").equals(before.sort_by("id"))


def test_the_sql_procedure(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"}
    )
    t.write(_rows(list(range(20)), "a"))
    results = execute(
        cat,
        "ALTER TABLE db.t SET ('file-index.bloom-filter.columns' = 'name');"
        "CALL sys.rewrite_file_index(`table` => 'db.t', partitions => 'dt=a')",
    )
    assert results[-1].rows == [{"result": True}]
    assert results[-1].message.startswith("rewrote the file index of 1 file(s) (snapshot ")
    assert all(e is not None or x != () for x, e, _ in _files(cat.get_table("db.t")).values())
