"""Range-bitmap file indexes between lsmlake and live Java Paimon: the same bytes for the same rows, each
side's indexes read and used by the other (files skipped, rows selected)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from java_harness import JavaPaimon

import lsmlake
from lsmlake.format.file_index.container import read_container
from lsmlake.format.file_index.writer import FileIndexBuilder, FileIndexSpec
from lsmlake.scan.file_index_prune import file_index_blobs
from lsmlake.table import Table

pytestmark = pytest.mark.java

TYPES = [
    ("id", "BIGINT"),
    ("n", "INT"),
    ("sm", "SMALLINT"),
    ("name", "STRING"),
    ("x", "DOUBLE"),
    ("f", "FLOAT"),
    ("ts", "TIMESTAMP(6)"),
    ("t3", "TIMESTAMP(3)"),
    ("d", "DATE"),
    ("b", "BOOLEAN"),
    ("dec", "DECIMAL(10, 2)"),
]
COLUMNS = ",".join(name for name, _ in TYPES)
EPOCH = dt.datetime(1970, 1, 1)


def _value(column: str, h: int) -> Any:
    """Column ``column`` of the row with hash ``h`` (None for about one row in 13), as Python values."""
    if (h + len(column)) % 13 == 0:
        return None
    return {
        "id": h,
        "n": h - 50_000,
        "sm": h % 3000 - 1500,
        "name": f"k{h % 40_000:06d}",
        "x": (h % 5000) / 8 - 300,
        "f": float((h % 700) / 4 - 80),
        "ts": EPOCH + dt.timedelta(microseconds=h * 1_000_003),
        "t3": EPOCH + dt.timedelta(milliseconds=h * 1_013),
        "d": dt.date(1970, 1, 1) + dt.timedelta(days=h % 20_000),
        "b": h % 3 == 0,
        "dec": decimal.Decimal(h % 90_000 - 45_000).scaleb(-2),
    }[column]


def _hashes(part: int) -> list[int]:
    return [(i * 7919) % 100_003 for i in range(part * 200, part * 200 + 200)]


def _java_json(column: str, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        return (v - EPOCH) // dt.timedelta(microseconds=1)
    if isinstance(v, (dt.date, decimal.Decimal)):
        return str(v)
    return v


def _java_rows(part: int) -> list[dict[str, Any]]:
    return [{c: _java_json(c, _value(c, h)) for c, _ in TYPES} for h in _hashes(part)]


def _arrow_part(part: int) -> pa.Table:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("n", pa.int32()),
            ("sm", pa.int16()),
            ("name", pa.string()),
            ("x", pa.float64()),
            ("f", pa.float32()),
            ("ts", pa.timestamp("us")),
            ("t3", pa.timestamp("ms")),
            ("d", pa.date32()),
            ("b", pa.bool_()),
            ("dec", pa.decimal128(10, 2)),
        ]
    )
    hs = _hashes(part)
    return pa.table({c: [_value(c, h) for h in hs] for c in schema.names}, schema=schema)


def _sql(v: Any) -> str:
    if isinstance(v, str):
        return f"'{v}'"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    return str(v)


def _case(column: str, op: str, *literals: Any) -> tuple[str, pc.Expression, list[Any]]:
    """(lsmlake SQL text, the model as a pyarrow expression, Java's [column, op, literals...])."""
    f = pc.field(column)
    java = [column, op, *(_java_json(column, v) for v in literals)]
    if op == "is_null":
        return f"{column} IS NULL", f.is_null(), java
    if op == "is_not_null":
        return f"{column} IS NOT NULL", f.is_valid(), java
    if op == "in":
        return f"{column} IN ({', '.join(_sql(v) for v in literals)})", f.isin(list(literals)), java
    if op == "between":
        lo, hi = literals
        return f"{column} BETWEEN {_sql(lo)} AND {_sql(hi)}", (f >= lo) & (f <= hi), java
    (v,) = literals
    expr = {"=": f == v, "!=": f != v, "<": f < v, "<=": f <= v, ">": f > v, ">=": f >= v}[op]
    return f"{column} {op} {_sql(v)}", expr, java


def _probe(part: int) -> int:
    """A row hash of the part with no null value."""
    return next(h for h in _hashes(part) if all(_value(c, h) is not None for c, _ in TYPES))


def _cases() -> list[tuple[str, pc.Expression, list[Any]]]:
    probe = _probe(2)
    out = []
    for column, _ in TYPES:
        v = _value(column, probe)
        w = _value(column, _probe(4))
        lo, hi = (v, w) if v <= w else (w, v)
        out += [_case(column, "=", v), _case(column, "<", v), _case(column, ">=", v)]
        out += [_case(column, "in", v, w), _case(column, "is_null"), _case(column, "is_not_null")]
        if column != "b":
            out += [_case(column, "between", lo, hi), _case(column, "<=", lo), _case(column, ">", hi)]
    out.append(_case("id", "between", probe - 60, probe + 60))  # a narrow range: most files hold none of it
    return out


def _sorted_ids(t: pa.Table) -> list[int]:
    return sorted(v for v in t.column("id").to_pylist() if v is not None)


def test_lsmlake_reads_and_uses_java_written_range_bitmaps(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    options = {
        "file-index.range-bitmap.columns": COLUMNS,
        "bucket": "-1",
        "file-index.in-manifest-threshold": "1 b",
    }
    options["file-index.range-bitmap.name.chunk-size"] = "64b"  # many dictionary chunks
    java_paimon.create(warehouse, "db.t", TYPES, options=options)
    for part in range(6):
        java_paimon.write(warehouse, "db.t", _java_rows(part))
    table = lsmlake.Catalog(warehouse).get_table("db.t")
    full = table.read()
    assert full.num_rows == 1200
    unindexed = table.with_options({"file-index.read.enabled": "false"})
    pruned_total = 0
    for text, expr, _ in _cases():
        expected = _sorted_ids(full.filter(expr))
        assert _sorted_ids(table.read(filter=text)) == expected, text
        assert _sorted_ids(unindexed.read(filter=text)) == expected, text
        pruned_total += len(table.scan(filter=text).plan.counts.by_file_index)
    narrow = _cases()[-1][0]
    assert len(table.scan(filter=narrow).plan.counts.by_file_index) >= 3
    assert pruned_total > 30
    _assert_same_index_bytes(table)


def _assert_same_index_bytes(table: Table, columns: int = len(TYPES)) -> None:
    """Each data file's range bitmaps as lsmlake builds them from the file's rows equal the stored ones."""
    spec = FileIndexSpec.of(table.schema, table.options)
    assert spec is not None
    checked = 0
    for split in table.scan().splits():
        for f in split.files:
            found = file_index_blobs(table.io, f, split.bucket_path)
            assert found is not None
            theirs = {(b.column, b.index_type): b.data for b in found[0]}
            builder = FileIndexBuilder(spec)
            with table.io.open_input_file(f"{split.bucket_path}/{f.file_name}") as src:
                builder.add(pq.read_table(src))
            ours = {(b.column, b.index_type): b.data for b in read_container(builder.encode(), source="ours")}
            assert set(ours) == set(theirs)
            for key, data in ours.items():
                assert data == theirs[key], (f.file_name, key)
                checked += 1
    assert checked == sum(len(s.files) for s in table.scan().splits()) * columns


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"])  # embedded in the manifest / separate .index files
def test_java_uses_lsmlake_written_range_bitmaps(
    java_paimon: JavaPaimon, tmp_path: Path, threshold: str
) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    options = {"file-index.range-bitmap.columns": COLUMNS, "file-index.in-manifest-threshold": threshold}
    table = catalog.create_table("db.t", schema=_arrow_part(0).schema, options=options)
    for part in range(6):
        table.write(_arrow_part(part))
    full = table.read()
    files = {f.file_name: (s, f) for s in table.scan().splits() for f in s.files}
    rows_of = {name: _file_rows(table, s, f) for name, (s, f) in files.items()}
    for text, expr, where in _cases():
        expected = _sorted_ids(full.filter(expr))
        verdicts = java_paimon.index_eval(warehouse, "db.t", where)
        assert len(verdicts) == 6 and all(v["indexed"] for v in verdicts)
        for v in verdicts:
            matching = _positions(rows_of[v["file"]], expr)
            # Java's range bitmap is exact: the rows it selects are the matching ones
            assert v["remain"] == bool(matching), (text, v["file"])
            if "rows" in v:
                assert v["rows"] == matching, (text, v["file"])
        java_rows, _ = java_paimon.read_where(warehouse, "db.t", where)
        # Java reads only the rows its index selects (whole files would return the others too)
        assert sorted(r["id"] for r in java_rows if r["id"] is not None) == expected, text
        assert len(java_rows) == full.filter(expr).num_rows, text


def _file_rows(table: Table, split: Any, f: Any) -> pa.Table:
    with table.io.open_input_file(f"{split.bucket_path}/{f.file_name}") as src:
        return pq.read_table(src)


def _positions(rows: pa.Table, expr: pc.Expression) -> list[int]:
    marked = rows.append_column("_pos", pa.array(range(rows.num_rows), pa.int64()))
    out: Sequence[int] = marked.filter(expr).column("_pos").to_pylist()
    return sorted(out)


PK_TYPES = [("k", "BIGINT NOT NULL"), ("v", "BIGINT"), ("name", "STRING")]
PK_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("name", pa.string())])
PK_CASES = [
    (
        "v BETWEEN 4990 AND 5010",
        (pc.field("v") >= 4990) & (pc.field("v") <= 5010),
        ["v", "between", 4990, 5010],
    ),
    ("v < 100", pc.field("v") < 100, ["v", "<", 100]),
    ("v IS NULL", pc.field("v").is_null(), ["v", "is_null"]),
    ("name >= 'n0990'", pc.field("name") >= "n0990", ["name", ">=", "n0990"]),
]


def _pk_rows(keys: range, bump: int) -> list[dict[str, Any]]:
    return [
        {
            "k": k,
            "v": None if k % 23 == 0 else (k * 7919 + bump) % 10_007,
            "name": f"n{(k * 31 + bump) % 997:04d}",
        }
        for k in keys
    ]


def _check_pk_dv(table: Table, java_rows: Any) -> None:
    """lsmlake's indexed read equals the model; Java's read (index row selection and deletion vectors,
    both applied by Java) returns exactly the matching rows too."""
    full = table.read()
    masked = 0
    for text, model, where in PK_CASES:
        expected = sorted(full.filter(model).column("k").to_pylist())
        assert sorted(table.read(filter=text).column("k").to_pylist()) == expected, text
        assert sorted(r["k"] for r in java_rows(where)) == expected, text
        masked += len(table.scan(filter=text).plan.counts.rows_by_file_index)
    assert masked > 0


def test_primary_key_deletion_vector_tables_both_ways(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    options = {"file-index.range-bitmap.columns": "v,name", "deletion-vectors.enabled": "true", "bucket": "2"}
    # lsmlake writes; the updates' compaction marks the old rows in deletion vectors
    ours = str(tmp_path / "ours")
    catalog = lsmlake.Catalog(ours)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=PK_SCHEMA, primary_key=["k"], options=options)
    table.write(pa.Table.from_pylist(_pk_rows(range(3000), 0), schema=PK_SCHEMA))
    table.compact(full=True)
    table.write(pa.Table.from_pylist(_pk_rows(range(0, 3000, 7), 5), schema=PK_SCHEMA))
    table.compact()
    assert any(d is not None for s in table.scan().splits() for d in s.deletion_files)
    _check_pk_dv(table, lambda where: java_paimon.read_where(ours, "db.t", where)[0])
    # Java writes; lsmlake reads its deletion vectors and range bitmaps
    theirs = str(tmp_path / "theirs")
    java_paimon.create(theirs, "db.t", PK_TYPES, primary_key=["k"], options=options)
    java_paimon.write(theirs, "db.t", _pk_rows(range(3000), 0))
    java_paimon.write(theirs, "db.t", _pk_rows(range(0, 3000, 7), 5))
    java_table = lsmlake.Catalog(theirs).get_table("db.t")
    assert any(d is not None for s in java_table.scan().splits() for d in s.deletion_files)
    _check_pk_dv(java_table, lambda where: java_paimon.read_where(theirs, "db.t", where)[0])


def test_same_bytes_for_empty_and_narrow_columns(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """All-null columns (no key: Java still writes 64 empty slices), one-byte keys (no chunking) and
    local-zone timestamps: lsmlake builds the bytes Java wrote."""
    warehouse = str(tmp_path / "warehouse")
    types = [
        ("id", "BIGINT"),
        ("ti", "TINYINT"),
        ("z", "INT"),
        ("zs", "STRING"),
        ("lz", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ]
    options = {"file-index.range-bitmap.columns": "ti,z,zs,lz", "bucket": "-1"}
    java_paimon.create(warehouse, "db.t", types, options=options)
    for part in range(2):
        rows = [
            {
                "id": i,
                "ti": (i * 37) % 256 - 128,
                "z": None,
                "zs": None,
                "lz": None if i % 5 == 0 else i * 1_000_000,
            }
            for i in range(part * 300, part * 300 + 300)
        ]
        java_paimon.write(warehouse, "db.t", rows)
    table = lsmlake.Catalog(warehouse).get_table("db.t")
    _assert_same_index_bytes(table, columns=4)
    assert table.read(filter="z IS NULL").num_rows == 600
    assert table.read(filter="zs = 'a'").num_rows == 0
    assert sorted(table.read(filter="ti = 5").column("id").to_pylist()) == [
        i for i in range(600) if (i * 37) % 256 - 128 == 5
    ]
