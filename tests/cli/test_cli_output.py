"""What `lsmlake sql` prints: the row limit and its note, vertical rows, CSV/JSON/Parquet streams, COPY,
wide tables at 80 and 200 columns, the prompt's help and \\x, and the spinner (terminal only)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from lsmlake.catalog import Catalog
from lsmlake.cli.main import main
from lsmlake.cli.output import DEFAULT_MAX_ROWS, Printer
from lsmlake.cli.progress import working
from lsmlake.sql import execute
from lsmlake.system.registry import read_system_table

ROWS = 2500  # more than a chunk of unlimited table output (1000 rows)


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    path = str(tmp_path / "wh")
    execute(
        Catalog(path),
        "CREATE DATABASE db; CREATE TABLE db.n (id INT, name STRING, tags ARRAY<STRING>, raw BYTES,"
        " PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')",
    )
    table = Catalog(path).open_table("db.n")
    ids = list(range(ROWS))
    table.write(
        pa.table(
            {
                "id": pa.array(ids, pa.int32()),
                "name": [None if i == 3 else f"n{i}" for i in ids],
                "tags": [["a", "b"] if i % 2 else [] for i in ids],
                "raw": [bytes([i % 256]) for i in ids],
            }
        )
    )
    table.compact(full=True)
    return path


def invoke(warehouse: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, ["--warehouse", warehouse, *args], input=input)


def data_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"^\s*\d+(\s|$)", line) and "rows" not in line]


def test_table_output_shows_the_first_rows_and_counts_the_rest(warehouse: str) -> None:
    result = invoke(warehouse, "sql", "SELECT id, name FROM db.n ORDER BY id")
    assert result.exit_code == 0, result.output
    assert len(data_lines(result.stdout)) == DEFAULT_MAX_ROWS
    assert f"{ROWS} rows, {DEFAULT_MAX_ROWS} shown" in result.stdout
    everything = invoke(warehouse, "sql", "--max-rows", "0", "SELECT id, name FROM db.n ORDER BY id")
    assert len(data_lines(everything.stdout)) == ROWS and "shown" not in everything.stdout
    few = invoke(warehouse, "sql", "--max-rows", "3", "SELECT id FROM db.n ORDER BY id")
    assert [line.split()[0] for line in data_lines(few.stdout)] == ["0", "1", "2"]
    small = invoke(warehouse, "sql", "SELECT id FROM db.n WHERE id < 5")
    assert len(data_lines(small.stdout)) == 5 and "shown" not in small.stdout


def test_csv_and_json_write_every_row_unless_limited(warehouse: str) -> None:
    csv_out = invoke(warehouse, "-o", "csv", "sql", "SELECT id, name, tags, raw FROM db.n ORDER BY id")
    lines = csv_out.stdout.splitlines()
    assert lines[0] == "id,name,tags,raw" and len(lines) == ROWS + 1
    assert lines[1:5] == [
        '0,"n0","[]","00"',
        '1,"n1","[""a"", ""b""]","01"',
        '2,"n2","[]","02"',
        '3,,"[""a"", ""b""]","03"',
    ]
    docs = json.loads(
        invoke(warehouse, "-o", "json", "sql", "SELECT id, tags, raw FROM db.n ORDER BY id").stdout
    )
    assert len(docs) == ROWS and docs[1] == {"id": 1, "tags": ["a", "b"], "raw": "01"}
    cut = invoke(warehouse, "-o", "json", "sql", "--max-rows", "2", "SELECT id FROM db.n ORDER BY id")
    assert json.loads(cut.stdout) == [{"id": 0}, {"id": 1}] and f"{ROWS} rows, the first 2" in cut.stderr
    empty = invoke(warehouse, "-o", "json", "sql", "SELECT id FROM db.n WHERE id < 0")
    assert json.loads(empty.stdout) == []


def test_vertical_rows(warehouse: str) -> None:
    result = invoke(warehouse, "sql", "--vertical", "SELECT id, name FROM db.n WHERE id = 7")
    assert result.exit_code == 0, result.output
    assert "-[ row 1 ]" in result.stdout
    assert re.search(r"^id\s+\| 7$", result.stdout, re.M) and re.search(
        r"^name\s+\| n7$", result.stdout, re.M
    )


def test_copy_to_parquet_and_csv_equals_the_table(warehouse: str, tmp_path: Path) -> None:
    table = Catalog(warehouse).open_table("db.n")
    target = tmp_path / "out.parquet"
    result = invoke(warehouse, "sql", f"COPY (SELECT * FROM db.n) TO '{target}'")
    assert result.exit_code == 0 and f"copied {ROWS} row(s)" in result.stdout
    expected = table.read()
    assert pq.read_table(target).cast(expected.schema).equals(expected)
    by_name = tmp_path / "by_name.csv"
    assert invoke(warehouse, "sql", f"COPY db.n TO '{by_name}'").exit_code == 0
    assert len(by_name.read_text().splitlines()) == ROWS + 1
    named = tmp_path / "data.bin"
    copied = invoke(
        warehouse, "sql", f"COPY (SELECT id FROM db.n WHERE id < 10) TO '{named}' (FORMAT parquet)"
    )
    assert copied.exit_code == 0 and pq.read_table(named).num_rows == 10
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary left


def test_copy_refuses_bad_targets_and_leaves_nothing(warehouse: str, tmp_path: Path) -> None:
    cases = {
        f"COPY (SELECT 1) TO '{tmp_path / 'x.txt'}'": "cannot tell the format",
        f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}' (FORMAT orc)": "unknown FORMAT 'orc'",
        f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}' (COMPRESSION zstd)": "Parquet files only",
        f"COPY (SELECT 1) TO '{tmp_path / 'nodir' / 'x.csv'}'": "does not exist",
        f"COPY (SELECT nope FROM db.n) TO '{tmp_path / 'x.parquet'}'": "query failed",
        "COPY (SELECT 1) 'x.csv'": "expected TO",
    }
    for statement, message in cases.items():
        result = invoke(warehouse, "sql", statement)
        assert result.exit_code == 2 and message in result.stderr, (statement, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wh"]


def test_parquet_output_needs_a_file(warehouse: str, tmp_path: Path) -> None:
    target = tmp_path / "rows.parquet"
    result = invoke(warehouse, "-o", "parquet", "sql", "--output", str(target), "SELECT * FROM db.n")
    assert result.exit_code == 0 and f"wrote {ROWS} row(s)" in result.stderr and result.stdout == ""
    assert pq.read_table(target).num_rows == ROWS
    by_extension = tmp_path / "rows.csv"
    assert invoke(warehouse, "sql", "--output", str(by_extension), "SELECT id FROM db.n").exit_code == 0
    assert by_extension.read_text().startswith("id\n")
    missing = invoke(warehouse, "-o", "parquet", "sql", "SELECT 1")
    assert missing.exit_code == 2 and "--output" in missing.output
    two = invoke(warehouse, "sql", "--output", str(target), "SELECT 1 AS a; SELECT 2 AS b")
    assert two.exit_code == 2 and "one query" in two.output


def test_a_failing_table_read_keeps_its_error_class(warehouse: str) -> None:
    table = Catalog(warehouse).open_table("db.n")
    for path in read_system_table(table, "files").column("file_path").to_pylist():
        Path(path.removeprefix("file:")).write_bytes(b"not parquet")
    result = invoke(warehouse, "sql", "SELECT * FROM db.n")
    assert result.exit_code == 8 and result.stderr.startswith("error: "), result.output


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("system", ["snapshots", "files", "schemas"])
def test_wide_tables_fit_the_width(
    warehouse: str, width: int, system: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = read_system_table(Catalog(warehouse).open_table("db.n"), system)
    Printer("table", width=width).table(rows, f"db.n${system}")
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= width
    words = set(re.findall(r"[\w-]+", out))
    assert set(rows.column_names) <= words  # every column name is printed whole (not folded)
    first = rows.to_pylist()[0]
    for name in ("snapshot_id", "schema_id", "level", "record_count"):
        if name in first:
            assert str(first[name]) in words


def test_narrow_tables_stay_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    Printer("table", width=80).table(pa.table({"id": [1, 2], "name": ["a", "b"]}))
    out = capsys.readouterr().out
    assert "row 1" not in out and re.search(r"^\s*id\s+name\s*$", out, re.M)


def test_prompt_help_and_vertical_toggle(warehouse: str) -> None:
    lines = "help\n\\x\nSELECT id FROM db.n WHERE id = 1;\n\\x\nSELECT id FROM db.n WHERE id = 2;\nexit\n"
    result = invoke(warehouse, "sql", "-i", input=lines)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "COPY (SELECT ...) TO" in out and "CALL sys.compact" in out and "MERGE INTO" in out
    assert "vertical rows on" in out and "-[ row 1 ]" in out and re.search(r"^id\s+\| 1$", out, re.M)
    assert re.search(r"^\s*2\s*$", out.split("vertical rows off")[1], re.M)


def test_spinner_only_on_a_terminal(warehouse: str) -> None:
    drawn = io.StringIO()
    with working("compacting", console=Console(file=drawn, force_terminal=True, width=60)):
        pass
    assert "compacting" in drawn.getvalue()
    piped = io.StringIO()
    with working("compacting", console=Console(file=piped, force_terminal=False)):
        pass
    assert piped.getvalue() == ""
    result = invoke(warehouse, "compact", "db.n", "--full")
    assert result.exit_code == 0 and result.stderr == ""
