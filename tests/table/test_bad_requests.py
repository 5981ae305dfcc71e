"""Requests that do not fit a table are lsmlake errors (still ValueErrors) naming what is wrong, and
leave the table as it was: unknown columns, unparsable filters, updates of key or partition columns."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import lsmlake
from lsmlake.cli.main import main
from lsmlake.errors import ImmutableColumnError, InvalidFilterError, LsmlakeError, NoSuchColumnError

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), ("v", pa.int64())])


@pytest.fixture
def catalog(tmp_path: Path) -> lsmlake.Catalog:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _table(catalog: lsmlake.Catalog, primary_key: list[str], options: dict[str, str]) -> lsmlake.Table:
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=primary_key, partition_keys=["dt"], options=options
    )
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": [10, 20]}, schema=SCHEMA))
    return t


@pytest.mark.parametrize(
    ("primary_key", "options", "values", "error", "message"),
    [
        (["dt", "id"], {"bucket": "1"}, {"nope": 1}, NoSuchColumnError, "unknown column(s) ['nope']"),
        (["dt", "id"], {"bucket": "1"}, {"id": 5}, ImmutableColumnError, "primary-key column(s) ['id']"),
        # a cross-partition table: the key leaves out the partition column, which still places the row
        (["id"], {}, {"dt": "c"}, ImmutableColumnError, "partition column(s) ['dt']"),
    ],
)
def test_update_refuses_columns_it_cannot_set(
    catalog: lsmlake.Catalog,
    primary_key: list[str],
    options: dict[str, str],
    values: dict[str, object],
    error: type[LsmlakeError],
    message: str,
) -> None:
    t = _table(catalog, primary_key, options)
    before = t.snapshot_manager.latest_id()
    with pytest.raises(error) as info:
        t.update("id = 1", values)
    assert isinstance(info.value, ValueError) and "table db.t" in str(info.value) and message in str(info.value)
    assert t.snapshot_manager.latest_id() == before
    assert t.read().sort_by("id").to_pylist() == [
        {"id": 1, "dt": "a", "v": 10},
        {"id": 2, "dt": "b", "v": 20},
    ]


def test_unknown_columns_and_bad_filters(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog, ["dt", "id"], {"bucket": "1"})
    with pytest.raises(NoSuchColumnError, match="'nope'"):
        t.read(columns=["id", "nope"])
    with pytest.raises(NoSuchColumnError, match="unknown column 'nope' in filter"):
        t.read(filter="nope = 1")
    with pytest.raises(InvalidFilterError, match="does not fit column 'v'"):
        t.read(filter="v = 'x'")
    with pytest.raises(InvalidFilterError) as info:
        t.delete("(id = ")
    assert "\x1b" not in str(info.value) and "at line 1, column 5 near '='" in str(info.value)
    assert t.read().num_rows == 2


def test_cli_filter_parse_error_is_plain_text(catalog: lsmlake.Catalog) -> None:
    _table(catalog, ["dt", "id"], {"bucket": "1"})
    result = CliRunner().invoke(main, ["-w", catalog.warehouse, "explain", "db.t", "--filter", "(id = "])
    assert result.exit_code == 2
    assert result.stderr == "error: cannot parse filter '(id = ': " + (
        "Required keyword: 'expression' missing for EQ at line 1, column 5 near '='\n"
    )
