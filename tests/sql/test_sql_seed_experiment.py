"""The first seed's experiment, in SQL: two primary-key tables (one with deletion vectors) get the same
inserts; `t$files` and `t$table_indexes` show how they differ on disk, EXPLAIN shows raw reads for the
deletion-vector table and merge reads for the other, and after an UPDATE both read the same."""

from __future__ import annotations

import lsmlake
from lsmlake.sql import Session

SETUP = """
CREATE TABLE t_mor (user_id INT, age INT, PRIMARY KEY (user_id) NOT ENFORCED) WITH ('bucket' = '1');
CREATE TABLE t_dv (user_id INT, age INT, PRIMARY KEY (user_id) NOT ENFORCED)
  WITH ('bucket' = '1', 'deletion-vectors.enabled' = 'true');
"""
INSERTS = "INSERT INTO {t} VALUES (1, 1); INSERT INTO {t} VALUES (2, 2); INSERT INTO {t} VALUES (3, 33);"


def rows(session: Session, query: str) -> list[dict[str, object]]:
    (result,) = session.execute(query)
    return result.rows


def test_deletion_vectors_versus_merge_on_read(catalog: lsmlake.Catalog) -> None:
    s = Session(catalog, database="db")
    s.execute(SETUP)
    for t in ("t_mor", "t_dv"):
        s.execute(INSERTS.format(t=t))

    # Same data, different files: merge-on-read keeps three level-0 files; the DV table's writer
    # compacts level 0 away (lookup), so a batch read never has to merge.
    mor_files = rows(s, "SELECT level, record_count FROM t_mor$files")
    dv_files = rows(s, "SELECT level, record_count FROM t_dv$files")
    assert sorted((f["level"], f["record_count"]) for f in mor_files) == [(0, 1)] * 3
    assert dv_files and all(f["level"] > 0 for f in dv_files)
    assert sum(f["record_count"] for f in dv_files) == 3  # type: ignore[misc]
    assert rows(s, "SELECT * FROM t_mor$table_indexes") == []
    (mor_plan,) = s.execute("EXPLAIN SELECT * FROM t_mor")
    (dv_plan,) = s.execute("EXPLAIN SELECT * FROM t_dv")
    assert "bucket 0: merge" in mor_plan.message and "bucket 0: raw" in dv_plan.message

    # One full compaction leaves a single max-level file to mark; the UPDATE then deletes the old
    # versions of two users through one deletion vector instead of a merge at read time.
    s.execute("CALL sys.compact(`table` => 'db.t_dv')")
    for t in ("t_mor", "t_dv"):
        s.execute(f"UPDATE {t} SET age = 2 WHERE user_id = 1 OR user_id = 2")
    (index,) = rows(s, "SELECT index_type, bucket, dv_ranges FROM t_dv$table_indexes")
    assert index["index_type"] == "DELETION_VECTORS" and index["bucket"] == 0
    (dv_range,) = index["dv_ranges"]  # type: ignore[misc]
    assert dv_range["_CARDINALITY"] == 2
    marked = rows(s, "SELECT file_path, level FROM t_dv$files")
    assert any(f["file_path"].endswith(dv_range["f0"]) for f in marked)  # type: ignore[union-attr]
    assert rows(s, "SELECT * FROM t_mor$table_indexes") == []

    expected = [{"user_id": 1, "age": 2}, {"user_id": 2, "age": 2}, {"user_id": 3, "age": 33}]
    assert rows(s, "SELECT * FROM t_mor ORDER BY user_id") == expected
    assert rows(s, "SELECT * FROM t_dv ORDER BY user_id") == expected
    assert (
        rows(
            s,
            "(SELECT * FROM t_mor EXCEPT SELECT * FROM t_dv) UNION ALL "
            "(SELECT * FROM t_dv EXCEPT SELECT * FROM t_mor)",
        )
        == []
    )
    (dv_plan,) = s.execute("EXPLAIN SELECT * FROM t_dv")
    assert "bucket 0: raw" in dv_plan.message
