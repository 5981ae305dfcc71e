"""``lsmlake stream TABLE``: changes printed as lines or JSON lines, consumer resume, Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import lsmlake
from lsmlake.cli.main import main

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    path = str(tmp_path / "wh")
    cat = lsmlake.Catalog(path)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))
    t.delete(pa.table({"id": [1]}, schema=pa.schema([SCHEMA.field("id")])))
    return path


def _run(warehouse: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["--warehouse", warehouse, "stream", "db.t", *args])


def test_prints_changes_until_caught_up(warehouse: str) -> None:
    result = _run(warehouse, "--from-snapshot", "1", "--until-caught-up")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["+I id=1, name=a", "+I id=2, name=b", "-D id=1, name=NULL"]
    full = _run(warehouse, "--until-caught-up")
    assert full.output.splitlines() == ["+I id=2, name=b"]


def test_json_lines_and_consumer_resume(warehouse: str) -> None:
    first = _run(warehouse, "--from-snapshot", "1", "--until-snapshot", "1", "--json", "--consumer-id", "cli")
    assert first.exit_code == 0, first.output
    docs = [json.loads(line) for line in first.output.splitlines()]
    assert docs == [
        {"snapshot_id": 1, "rowkind": "+I", "id": 1, "name": "a"},
        {"snapshot_id": 1, "rowkind": "+I", "id": 2, "name": "b"},
    ]
    rest = _run(warehouse, "--json", "--consumer-id", "cli", "--until-caught-up", "--columns", "id")
    assert [json.loads(line) for line in rest.output.splitlines()] == [
        {"snapshot_id": 2, "rowkind": "-D", "id": 1}
    ]


def test_ctrl_c_stops_with_the_interrupted_exit_code(warehouse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(_: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("lsmlake.table.stream.time.sleep", interrupt)
    result = _run(warehouse, "--mode", "latest")
    assert result.exit_code == 130
    assert "stopped" in result.output


def test_unknown_table_and_bad_mode(warehouse: str) -> None:
    assert CliRunner().invoke(main, ["--warehouse", warehouse, "stream", "db.nope"]).exit_code == 3
    assert _run(warehouse, "--mode", "sideways").exit_code == 2
