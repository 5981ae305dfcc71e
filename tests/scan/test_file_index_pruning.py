"""Planning with Java-written file indexes: files whose bitmap/BSI index (minus DVs) cannot match are not read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lsmlake
from lsmlake.table import Table
from tests.fixtures import CPP_TEST_DATA, FIXTURES, copy_fixture


def _open(tmp_path: Path, name: str) -> Table:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir(exist_ok=True)
    copy_fixture((CPP_TEST_DATA / "parquet" / f"{name}.db").relative_to(FIXTURES), warehouse)
    return lsmlake.Catalog(str(warehouse)).get_table(f"{name}.{name}")


def _rows(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


CASES = [
    # (table, filter, the same filter on the unfiltered rows, files the indexes prune)
    ("append_with_bitmap", "f0 = 'Nobody'", pc.field("f0") == "Nobody", 1),
    ("append_with_bitmap", "f0 = 'Lucy'", pc.field("f0") == "Lucy", 0),
    ("append_with_bitmap_v1", "f0 IN ('Zed', 'Q')", pc.field("f0").isin(["Zed", "Q"]), 1),
    ("append_with_bitmap_v1", "f0 IN ('Zed', 'Bob')", pc.field("f0").isin(["Zed", "Bob"]), 0),
    ("append_with_bitmap_no_embedding", "f0 = 'Carl'", pc.field("f0") == "Carl", 1),
    ("append_with_bsi", "f1 = 150", pc.field("f1") == 150, 1),
    ("append_with_bsi", "f1 >= 101 AND f1 <= 199", (pc.field("f1") >= 101) & (pc.field("f1") <= 199), 1),
    ("append_with_bsi", "f2 < -2", pc.field("f2") < -2, 0),
    ("append_with_bsi", "f4 IS NULL AND f1 = 20", pc.field("f4").is_null() & (pc.field("f1") == 20), 1),
    ("append_with_bsi", "f4 IS NULL AND f1 = 100", pc.field("f4").is_null() & (pc.field("f1") == 100), 0),
    ("pk_with_bitmap_dv", "f0 = 'Lucy'", pc.field("f0") == "Lucy", 1),  # Lucy's only row is deleted (DV)
    ("pk_with_bitmap_dv", "f0 = 'Alice'", pc.field("f0") == "Alice", 0),  # one Alice deleted, one live
]


@pytest.mark.parametrize(("name", "text", "expression", "pruned"), CASES)
def test_index_pruning_reads_exactly(
    tmp_path: Path, name: str, text: str, expression: pc.Expression, pruned: int
) -> None:
    t = _open(tmp_path, name)
    expected = _rows(t.read().filter(expression))
    plan = t.scan(filter=text).plan
    assert len(plan.counts.by_file_index) == pruned
    assert _rows(t.read(filter=text)) == expected
    files = {f.file_name for s in plan.splits for f in s.files}
    assert files.isdisjoint(name for name, _ in plan.counts.by_file_index)
    if pruned:
        assert "pruned by file index" in t.explain(filter=text)


def test_old_schema_files_are_not_pruned_by_their_indexes(tmp_path: Path) -> None:
    t = _open(tmp_path, "append_with_bitmap_alter_table")  # f0 renamed to f4: the first file's index says f0
    assert _rows(t.read(filter="f4 = 'Alice'")) == _rows(t.read().filter(pc.field("f4") == "Alice"))
    assert len(_rows(t.read(filter="f4 = 'Alice'"))) == 3
