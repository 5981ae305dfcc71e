"""The command line through click's CliRunner: output formats, scripts, the prompt, exit codes."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

import lsmlake
from lsmlake.cli import stream as cli_stream
from lsmlake.cli.main import COMMANDS, EXIT_CODES, EXIT_CODES_HELP, INTERRUPTED, main
from lsmlake.cli.prompt import statement_complete
from lsmlake.table import stream as table_stream

SETUP = (
    "CREATE DATABASE db; "
    "CREATE TABLE db.t (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1'); "
    "INSERT INTO db.t VALUES (1, 'ann'), (2, 'bob')"
)


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    path = str(tmp_path / "wh")
    result = invoke(path, "sql", SETUP)
    assert result.exit_code == 0, result.output
    return path


def invoke(warehouse: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, ["--warehouse", warehouse, *args], input=input)


def test_sql_table_format(warehouse: str) -> None:
    result = invoke(
        warehouse, "sql", "SELECT * FROM db.t ORDER BY id; UPDATE db.t SET name = 'al' WHERE id = 1"
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert any("id" in line and "name" in line for line in lines)
    assert any("ann" in line for line in lines) and any("bob" in line for line in lines)
    assert "updated 1 row(s) in db.t (snapshot 2)" in result.stdout


def test_sql_json_and_csv(warehouse: str) -> None:
    result = invoke(warehouse, "--format", "json", "sql", "SELECT * FROM db.t ORDER BY id")
    assert result.exit_code == 0 and json.loads(result.stdout) == [
        {"id": 1, "name": "ann"},
        {"id": 2, "name": "bob"},
    ]
    result = invoke(
        warehouse, "sql", "-o", "csv", "INSERT INTO db.t VALUES (3, NULL); SELECT * FROM db.t ORDER BY id"
    )
    assert result.exit_code == 0
    assert result.stdout == 'id,name\n1,"ann"\n2,"bob"\n3,\n'  # strings quoted, NULL empty
    assert "inserted 1 row(s)" in result.stderr  # messages stay off stdout in csv/json
    files = invoke(warehouse, "-o", "json", "sql", "SELECT level, record_count FROM db.`t$files`")
    assert json.loads(files.stdout) == [{"level": 0, "record_count": 2}, {"level": 0, "record_count": 1}]


def test_sql_file_and_stdin(warehouse: str, tmp_path: Path) -> None:
    script = tmp_path / "q.sql"
    script.write_text("USE db;\n-- count them\nSELECT count(*) AS n FROM t;\n")
    result = invoke(warehouse, "-o", "json", "sql", "-f", str(script))
    assert result.exit_code == 0 and json.loads(result.stdout) == [{"n": 2}]
    piped = invoke(warehouse, "-o", "json", "sql", "--database", "db", input="SELECT max(id) AS m FROM t;")
    assert piped.exit_code == 0 and json.loads(piped.stdout) == [{"m": 2}]
    both = invoke(warehouse, "sql", "SELECT 1", "-f", str(script))
    assert both.exit_code == 2 and "not both" in both.output


def test_interactive_prompt_keeps_going_after_errors(warehouse: str) -> None:
    lines = (
        "USE db;\nSELECT name\n  FROM t WHERE id = 2;\nSELECT * FROM nope;\nSELECT 'still here' AS s;\nexit\n"
    )
    result = invoke(warehouse, "-o", "csv", "sql", "-i", input=lines)
    assert result.exit_code == 0
    assert 'name\n"bob"\n' in result.stdout and 's\n"still here"\n' in result.stdout
    assert "error: statement 1 (line 1: SELECT * FROM nope): table db.nope does not exist" in result.stderr


def test_statement_complete() -> None:
    assert statement_complete("SELECT 1;")
    assert not statement_complete("SELECT ';")
    assert not statement_complete("SELECT 1 -- ;")
    assert statement_complete("SELECT 1; -- done\n;")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["sql", "SELECT * FROM db.missing"], 3, "table db.missing does not exist"),
        (["sql", "SELEC 1"], 2, "unsupported statement starting with 'SELEC'"),
        (["sql", "SELECT * FROM db.t WHERE (id = "], 2, "cannot parse"),
        (["sql", "SELECT nope FROM db.t"], 2, "query failed"),
        (["sql", "CREATE DATABASE db"], 4, "database db already exists"),
        (["sql", "ALTER TABLE db.t ADD PARTITION (x = 1)"], 9, "ADD PARTITION is not supported"),
        (["sql", "INSERT INTO db.t VALUES (NULL, 'x')"], 5, "primary key column id"),
        (["snapshots", "db.missing"], 3, "table db.missing does not exist"),
        (["explain", "db.t", "--filter", "nope = 1"], 2, "unknown column"),
    ],
)
def test_exit_codes_by_error_class(warehouse: str, args: list[str], code: int, message: str) -> None:
    result = invoke(warehouse, *args)
    assert result.exit_code == code, result.output
    assert result.stderr.startswith("error: ") and message in result.stderr


def test_earlier_statements_print_before_an_error(warehouse: str) -> None:
    result = invoke(warehouse, "-o", "json", "sql", "SELECT 1 AS x; SELECT * FROM db.missing")
    assert result.exit_code == 3 and json.loads(result.stdout) == [{"x": 1}]
    assert "statement 2" in result.stderr


def test_explain_compact_snapshots_inspect(warehouse: str) -> None:
    plan = invoke(warehouse, "explain", "db.t", "--filter", "id = 1")
    assert plan.exit_code == 0 and "table db.t: snapshot 1" in plan.stdout and "bucket 0:" in plan.stdout
    compacted = invoke(warehouse, "-o", "json", "compact", "db.t", "--full")
    assert json.loads(compacted.stdout) == {"table": "db.t", "full": True, "snapshot_id": 2}
    snaps = invoke(warehouse, "snapshots", "db.t", "-o", "json")
    assert [(s["id"], s["kind"], s["records"]) for s in json.loads(snaps.stdout)] == [
        (1, "APPEND", 2),
        (2, "COMPACT", 2),
    ]
    doc = json.loads(invoke(warehouse, "-o", "json", "inspect", "db.t").stdout)
    assert doc["primary_keys"] == ["id"] and doc["options"] == [{"key": "bucket", "value": "1"}]
    assert [c["name"] for c in doc["schema"]] == ["id", "name"] and doc["snapshot"][0]["id"] == 2
    assert [(f["bucket"], f["level"], f["files"], f["records"]) for f in doc["files"]] == [(0, 5, 1, 2)]
    text = invoke(warehouse, "inspect", "db.t")
    assert text.exit_code == 0 and "files" in text.stdout and "COMPACT" in text.stdout
    csv_out = invoke(warehouse, "inspect", "db.t", "-o", "csv").stdout
    assert '# files\npartition,bucket,level,files,records,bytes\n"{}",0,5,1,2,' in csv_out


def test_demo(tmp_path: Path) -> None:
    result = invoke(str(tmp_path / "wh"), "demo")
    assert result.exit_code == 0, result.output
    listed = invoke(str(tmp_path / "wh"), "-o", "json", "sql", "SHOW TABLES FROM demo")
    assert listed.exit_code == 0 and json.loads(listed.stdout)  # the demo's tables are there


def test_entry_point_exit_code(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lsmlake", "--warehouse", str(tmp_path / "wh"), "sql", "SELECT * FROM db.t"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3 and proc.stderr.startswith("error: ") and proc.stdout == ""


def test_help_lists_every_exit_code() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    listed = {int(code) for code in re.findall(r"^ {2}(\d+) {2,}", EXIT_CODES_HELP, re.M)}
    assert {code for _, code in EXIT_CODES} | {0, INTERRUPTED} == listed
    assert all(f"  {code}  " in result.stdout for code in listed)


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"lsmlake, version {lsmlake.__version__}\n"
    assert lsmlake.__version__ == importlib.metadata.version("lsmlake")  # pyproject.toml's version


def test_help_imports_no_table_layer() -> None:
    """`lsmlake --help` loads click and the error classes only (it answered in 2 s when it loaded all)."""
    code = (
        "import sys\n"
        "from lsmlake.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = {'pyarrow', 'pandas', 'numpy', 'duckdb', 'sqlglot', 'rich', 'lsmlake.catalog'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines()[-1] == "[]"


def test_lazy_commands_are_listed_with_their_own_help() -> None:
    """`lsmlake --help` lists each command from the lazy table, as click would from the loaded command."""
    ctx = click.Context(main)
    for name, (_, summary) in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
        assert command.get_short_help_str(200) == click.Command(name, help=summary).get_short_help_str(200)
    assert set(COMMANDS) == set(main.list_commands(ctx))


def test_stream_modes_match_the_table_layer() -> None:
    assert cli_stream.STREAM_MODES == table_stream.STREAM_MODES


def test_inspect_png_names_its_extra(warehouse: str, tmp_path: Path) -> None:
    png = tmp_path / "levels.png"
    result = invoke(warehouse, "inspect", "db.t", "--png", str(png))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert result.exit_code == 1 and "'png' extra" in result.stderr and "pip install '.[png]'" in result.stderr
        assert not png.exists()
    else:
        assert result.exit_code == 0 and png.read_bytes().startswith(b"\x89PNG")


def test_sql_parse_errors_name_sqlglot_classes_plainly(warehouse: str) -> None:
    result = invoke(warehouse, "sql", "SELECT * FROM db.t WHERE (id = ")
    assert result.exit_code == 2
    assert "missing for EQ at line 1, column 30 near '='" in result.stderr and "<class" not in result.stderr
