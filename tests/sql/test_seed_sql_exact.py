"""The second seed's SQL, statement for statement, on a deletion-vector table; then $files and $table_indexes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import lsmlake
from lsmlake.cli.main import main
from lsmlake.sql import execute

SEED = """
CREATE TABLE test_ver (user_id INT, age INT, PRIMARY KEY (user_id) NOT ENFORCED)
    WITH ('bucket' = '1', 'deletion-vectors.enabled' = 'true');
insert into test_ver values(1,1);
insert into test_ver values(2,2);
insert into test_ver values(3,33);
update test_ver set age = 2 where (user_id=1 or user_id = 2);
"""


def test_seed_sql_exactly(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    execute(cat, SEED)
    (rows,) = execute(cat, "SELECT * FROM test_ver ORDER BY user_id")
    assert rows.table is not None and rows.table.to_pylist() == [
        {"user_id": 1, "age": 2},
        {"user_id": 2, "age": 2},
        {"user_id": 3, "age": 33},
    ]
    (files,) = execute(cat, "SELECT level, record_count, deleteRowCount FROM `test_ver$files`")
    (indexes,) = execute(cat, "SELECT index_type, dv_ranges FROM `test_ver$table_indexes`")
    assert files.table is not None and indexes.table is not None
    live = files.table.to_pylist()
    # every commit compacts level 0 up (deletion vectors force it), so no level-0 file and no delete row remains
    assert live and all(f["level"] >= 1 and f["deleteRowCount"] == 0 for f in live)
    # at these tiny sizes Paimon's size-ratio rule folds the old file into the update's rewrite, so each key
    # has one row and nothing is left to mark; where the old file survives, a vector marks both old rows
    marked = sum(r["_CARDINALITY"] for i in indexes.table.to_pylist() for r in (i["dv_ranges"] or []))
    assert sum(f["record_count"] for f in live) - marked == 3
    table = cat.open_table("default.test_ver")
    assert all(s.raw_convertible for s in table.scan().splits())


def test_inspect_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    wh = str(tmp_path / "wh")
    execute(lsmlake.Catalog(wh), SEED)
    out = tmp_path / "levels.png"
    result = CliRunner().invoke(main, ["-w", wh, "inspect", "default.test_ver", "--png", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
