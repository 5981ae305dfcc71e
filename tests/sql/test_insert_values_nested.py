"""INSERT ... VALUES with nested literals: ROW(...) is positional (as in Flink), wrong shapes and values
are SchemaMismatchErrors naming the nested column, and nothing is written then."""

from __future__ import annotations

import pytest

import lsmlake
from lsmlake.errors import SchemaMismatchError
from lsmlake.sql import execute

CREATE = """
CREATE TABLE db.t (
  id BIGINT, addr ROW<city STRING, zip BIGINT>,
  items ARRAY<ROW<name STRING, price DOUBLE>>, m MAP<STRING, ROW<x INT, y STRING>>, n INT,
  PRIMARY KEY (id) NOT ENFORCED
)
"""


@pytest.fixture
def t(catalog: lsmlake.Catalog) -> lsmlake.Table:
    execute(catalog, CREATE, database="db")
    return catalog.get_table("db.t")


def insert(catalog: lsmlake.Catalog, values: str) -> None:
    execute(catalog, f"INSERT INTO t VALUES {values}", database="db")


def test_row_literal_is_positional(catalog: lsmlake.Catalog, t: lsmlake.Table) -> None:
    insert(catalog, "(1, ROW('paris', 75000), ARRAY[ROW('a', 1.5), NULL], MAP['k', ROW(1, 'z')], 3)")
    assert t.read().to_pylist() == [
        {
            "id": 1,
            "addr": {"city": "paris", "zip": 75000},
            "items": [{"name": "a", "price": 1.5}, None],
            "m": [("k", {"x": 1, "y": "z"})],
            "n": 3,
        }
    ]


def test_null_row_stays_null_and_row_of_nulls_is_kept(catalog: lsmlake.Catalog, t: lsmlake.Table) -> None:
    insert(catalog, "(1, NULL, NULL, NULL, NULL), (2, ROW(NULL, NULL), ARRAY[], MAP['k', NULL], NULL)")
    got = {r["id"]: r for r in t.read().to_pylist()}
    assert got[1] == {"id": 1, "addr": None, "items": None, "m": None, "n": None}
    assert got[2]["addr"] == {"city": None, "zip": None}
    assert got[2]["items"] == []
    assert got[2]["m"] == [("k", None)]


def test_named_struct_from_a_query_is_taken_by_position(catalog: lsmlake.Catalog, t: lsmlake.Table) -> None:
    execute(
        catalog,
        "INSERT INTO t SELECT 1, named_struct('town', 'x', 'code', 7), NULL, NULL, NULL",
        database="db",
    )
    assert t.read().column("addr").to_pylist() == [{"city": "x", "zip": 7}]


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ("(1, ROW('a', 1, 2), NULL, NULL, NULL)", "column addr: ROW value has 3 field(s)"),
        ("(1, ROW('a'), NULL, NULL, NULL)", "column addr: ROW value has 1 field(s)"),
        ("(1, NULL, ARRAY[ROW('a')], NULL, NULL)", "column items[]"),
        ("(1, NULL, NULL, MAP['k', ROW(1, 'z', 3)], NULL)", "column m{}"),
        ("(1, ROW('a', 'b'), NULL, NULL, NULL)", "column addr.zip"),
        ("(1, NULL, NULL, MAP['k', ROW(3000000000, 'z')], NULL)", "column m{}.x"),
        ("(1, 'abc', NULL, NULL, NULL)", "column addr"),
        ("(1, NULL, NULL, NULL, 'abc')", "column n"),
        ("(1, NULL, NULL, NULL, 3000000000)", "column n"),
    ],
)
def test_values_that_do_not_fit_name_the_column(
    catalog: lsmlake.Catalog, t: lsmlake.Table, values: str, needle: str
) -> None:
    insert(catalog, "(9, NULL, NULL, NULL, 1)")
    before = t.read()
    with pytest.raises(SchemaMismatchError, match=r"db\.t") as info:
        insert(catalog, values)
    assert needle in str(info.value)
    assert t.read().equals(before)


def test_update_set_row_is_positional_too(catalog: lsmlake.Catalog, t: lsmlake.Table) -> None:
    insert(catalog, "(1, ROW('paris', 75000), NULL, NULL, 1)")
    execute(catalog, "UPDATE t SET addr = ROW('lyon', 69000) WHERE id = 1", database="db")
    assert t.read().column("addr").to_pylist() == [{"city": "lyon", "zip": 69000}]
    with pytest.raises(SchemaMismatchError, match="column addr"):
        execute(catalog, "UPDATE t SET addr = ROW('lyon') WHERE id = 1", database="db")


def test_static_partition_value_that_does_not_fit_names_the_column(catalog: lsmlake.Catalog) -> None:
    execute(
        catalog,
        "CREATE TABLE p (id BIGINT, dt INT, PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt)",
        database="db",
    )
    with pytest.raises(SchemaMismatchError, match="column dt"):
        execute(catalog, "INSERT OVERWRITE p PARTITION (dt = 'x') SELECT 1 WHERE false", database="db")
    assert catalog.get_table("db.p").latest_snapshot() is None
