"""`file.format=avro` data files between lsmlake and live Java Paimon: each side reads the other's files (every
type the harness carries, primary-key and append tables), the manifest stats of a file equal Java's for the
same rows in every stats mode, Java's type limits, and a table whose format an ALTER switches mid-life."""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_harness import JavaError, JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.types import DataType
from lsmlake.errors import SchemaMismatchError
from lsmlake.metadata.avro_container import decode_avro_container
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.schema_change.changes import set_option

pytestmark = pytest.mark.java

Row = dict[str, Any]

# (name, Arrow type, Paimon SQL type): every type the harness's JSON carries
TYPES: list[tuple[str, pa.DataType, str]] = [
    ("k", pa.string(), "STRING NOT NULL"),
    ("ti", pa.int8(), "TINYINT"),
    ("si", pa.int16(), "SMALLINT"),
    ("i", pa.int32(), "INT"),
    ("l", pa.int64(), "BIGINT"),
    ("f", pa.float32(), "FLOAT"),
    ("d", pa.float64(), "DOUBLE"),
    ("bo", pa.bool_(), "BOOLEAN"),
    ("s", pa.string(), "STRING"),
    ("b", pa.binary(), "BYTES"),
    ("dec", pa.decimal128(10, 2), "DECIMAL(10, 2)"),
    ("big", pa.decimal128(38, 6), "DECIMAL(38, 6)"),
    ("day", pa.date32(), "DATE"),
    ("ts3", pa.timestamp("ms"), "TIMESTAMP(3)"),
    ("ts6", pa.timestamp("us"), "TIMESTAMP(6)"),
    ("ltz", pa.timestamp("us", tz="UTC"), "TIMESTAMP_LTZ(6)"),
    ("arr", pa.list_(pa.decimal128(10, 2)), "ARRAY<DECIMAL(10, 2)>"),
    ("m", pa.map_(pa.string(), pa.int64()), "MAP<STRING, BIGINT>"),
    ("im", pa.map_(pa.int32(), pa.string()), "MAP<INT, STRING>"),
    (
        "r",
        pa.struct([pa.field("x", pa.int32()), pa.field("t", pa.timestamp("us"))]),
        "ROW<x INT, t TIMESTAMP(6)>",
    ),
]
SCHEMA = pa.schema([pa.field(n, t, nullable=not sql.endswith("NOT NULL")) for n, t, sql in TYPES])
EPOCH = dt.datetime(1970, 1, 1)


def _row(i: int, g: int) -> Row:
    """Row ``i`` of generation ``g``: long and non-ASCII strings, negative decimals, -0.0, nulls."""
    if i % 9 == 4:
        return {"k": f"key-{i:03d}", **{n: None for n, _, _ in TYPES[1:]}}
    return {
        "k": f"key-{i:03d}" + ("-a-long-key-beyond-sixteen" if i % 4 == 0 else ""),
        "ti": (i * 7 + g) % 256 - 128,
        "si": i * 301 - 9000,
        "i": i * 1000 + g,
        "l": (i - 20) * 10**12,
        "f": -0.0 if i % 11 == 0 else (i - 10) / 4,
        "d": 0.0 if i % 10 == 3 else (i - 25) * 1.5e300 / 7,
        "bo": i % 3 == 0,
        "s": ("ünïcödé-" * (i % 5)) + f"s{i}-{g}",
        "b": bytes([i % 256, g % 256, 255]),
        "dec": Decimal(i * 4321 - 60000).scaleb(-2),
        "big": Decimal(i * 10**25 - 3 * 10**26 + g).scaleb(-6),
        "day": dt.date(1960, 1, 1) + dt.timedelta(days=i * 400),
        "ts3": dt.datetime(1965, 1, 1) + dt.timedelta(milliseconds=i * 987_654_321),
        "ts6": dt.datetime(2024, 5, 1) + dt.timedelta(microseconds=i * 123_456_789_011 + g),
        "ltz": dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=i * 77_777_777),
        "arr": None if i % 5 == 0 else [Decimal(i).scaleb(-2), None, Decimal(-g)],
        "m": None if i % 6 == 0 else [(f"m{i}", i * g), ("z", None)],
        "im": [(i, f"v{g}"), (-i - 1, None)],
        "r": None if i % 7 == 0 else {"x": i * g, "t": dt.datetime(1999, 12, 31) + dt.timedelta(seconds=i)},
    }


def _table(ids: Sequence[int], g: int) -> pa.Table:
    return pa.Table.from_pylist([_row(i, g) for i in ids], schema=SCHEMA)


def _json(rows: Sequence[Mapping[str, Any]]) -> list[Row]:
    """Rows in one comparable form on both sides: maps as sorted [key, value] lists, nested decimals as text,
    nested timestamps as epoch microseconds."""
    out = []
    for r in rows:
        row = dict(r)
        for name in ("m", "im"):
            if row.get(name) is not None:
                row[name] = sorted([list(p) for p in row[name]], key=str)
        if row.get("arr") is not None:
            row["arr"] = [
                None if v is None else str(Decimal(v).quantize(Decimal("0.01"))) for v in row["arr"]
            ]
        if row.get("r") is not None and isinstance(row["r"].get("t"), dt.datetime):
            t = row["r"]["t"]
            row["r"] = {**row["r"], "t": (t - EPOCH) // dt.timedelta(microseconds=1)}
        if row.get("ltz") is not None and isinstance(row["ltz"], dt.datetime):
            row["ltz"] = (row["ltz"].replace(tzinfo=None) - EPOCH) // dt.timedelta(microseconds=1)
        if row.get("b") is not None and isinstance(row["b"], bytes):
            row["b"] = base64.b64encode(row["b"]).decode()
        out.append(row)
    return sort_rows(out, ["k", "i"])


def _catalog(tmp_path: Path) -> tuple[str, lsmlake.Catalog]:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db", exist_ok=True)
    return warehouse, catalog


def _data_files(table: lsmlake.Table) -> list[DataFileMeta]:
    return [f for s in table.scan().splits() for f in s.files]


LAYOUTS = {
    "pk": {"bucket": "2"},
    "pk-dv": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "append": {"bucket": "2", "bucket-key": "k"},
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_type_both_directions(layout: str, java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """lsmlake writes (and compacts, but not append tables) avro files Java reads; Java writes and compacts
    avro files lsmlake reads."""
    warehouse, catalog = _catalog(tmp_path)
    pk = layout != "append"
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["k"] if pk else None,
        options={"file.format": "avro", **LAYOUTS[layout]},
    )
    model: dict[str, Row] = {}
    appended: list[Row] = []

    def write(rows: pa.Table) -> None:
        for r in arrow_rows(rows):
            if pk:
                model[r["k"]] = r
            else:
                appended.append(r)

    def check(step: str) -> None:
        expected = _json(list(model.values()) if pk else appended)
        ours = _json(arrow_rows(table.read()))
        assert ours == expected, f"{layout}, {step}: lsmlake is not the model"
        assert _json(java_rows(java_paimon.read(warehouse, "db.t"))) == expected, f"{layout}, {step}: Java"

    first = _table(range(40), 1)
    table.write(first)
    write(first)
    check("lsmlake's write")
    second = _table(range(20, 60), 2)
    table.write(second)
    write(second)
    if pk:  # lsmlake does not compact append tables (Java does, below)
        table.compact(full=True)
    check("lsmlake's second write and compaction")
    assert {Path(f.file_name).suffix for f in _data_files(table)} == {".avro"}

    java = arrow_rows(_table(range(50, 80), 3))
    java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in java])
    for r in java:
        if pk:
            model[r["k"]] = r
        else:
            appended.append(r)
    check("Java's write")
    java_paimon.compact(warehouse, "db.t")
    check("Java's compaction")
    table = catalog.open_table("db.t")
    more = _table(range(0, 80, 3), 4)
    table.write(more)
    write(more)
    if pk:
        table.compact(full=True)
    check("lsmlake's write (and compaction) over Java's files")


def _plain(values: Sequence[Any]) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]


def _stats(f: DataFileMeta, names: Sequence[str], types: Sequence[DataType], keys: Sequence[DataType]) -> Row:
    """A file's manifest stats decoded (NaN as text, so that equal stats compare equal)."""
    cols = list(names) if f.value_stats_cols is None else list(f.value_stats_cols)
    kept = [types[list(names).index(c)].copy(nullable=True) for c in cols]
    key_types = [t.copy(nullable=True) for t in keys]
    return {
        "rows": f.row_count,
        "cols": f.value_stats_cols,
        "min": _plain(deserialize_row(f.value_stats.min_values, kept)),
        "max": _plain(deserialize_row(f.value_stats.max_values, kept)),
        "nulls": f.value_stats.null_counts,
        "key_min": _plain(deserialize_row(f.key_stats.min_values, key_types)) if keys else None,
        "key_max": _plain(deserialize_row(f.key_stats.max_values, key_types)) if keys else None,
        "key_nulls": f.key_stats.null_counts,
        "deletes": f.delete_row_count,
    }


STATS_ROWS = [
    {
        "k": "a" * 20,
        "f": float("nan"),
        "d": -0.0,
        "s": "Two roads diverged in a yellow wood",
        "b": b"\x01",
        "n": 3,
    },
    {"k": "b", "f": 1.5, "d": 0.0, "s": "\U0010ffff" * 20, "b": b"\xff", "n": None},
    {"k": "c" * 17, "f": -2.0, "d": float("nan"), "s": None, "b": None, "n": -7},
    {"k": "d", "f": None, "d": 2.5, "s": "short", "b": b"", "n": 1},
]
STATS_FIELDS = [
    ("k", "STRING NOT NULL"),
    ("f", "FLOAT"),
    ("d", "DOUBLE"),
    ("s", "STRING"),
    ("b", "BYTES"),
    ("n", "INT"),
]
STATS_SCHEMA = pa.schema(
    [
        pa.field("k", pa.string(), nullable=False),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("b", pa.binary()),
        pa.field("n", pa.int32()),
    ]
)


@pytest.mark.parametrize("mode", ["truncate(16)", "full", "counts", "none", "truncate(1)"])
@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_manifest_stats_equal_javas(mode: str, pk: bool, java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """The same rows written by each side into its own table: the avro file's key and value stats (NaN the
    maximum of a float column, -0.0 below 0.0, no bytes bounds, truncated strings and keys) are Java's."""
    warehouse, catalog = _catalog(tmp_path)
    options = {"file.format": "avro", "bucket": "1" if pk else "-1", "metadata.stats-mode": mode}
    if not pk:
        options["bucket-key"] = "k"
        options["bucket"] = "1"
    primary = ["k"] if pk else []
    java_paimon.create(warehouse, "db.java", STATS_FIELDS, primary_key=primary, options=options)
    java_paimon.write(warehouse, "db.java", [{"_kind": "+I", **r} for r in STATS_ROWS])
    ours = catalog.create_table("db.ours", schema=STATS_SCHEMA, primary_key=primary or None, options=options)
    ours.write(pa.Table.from_pylist(STATS_ROWS, schema=STATS_SCHEMA))
    theirs = catalog.open_table("db.java")
    names = [n for n, _ in STATS_FIELDS]
    types = [f.type for f in ours.schema.fields]
    key_types = [ours.schema.field("k").type] if pk else []
    (java_file,) = _data_files(theirs)
    (our_file,) = _data_files(ours)
    assert java_file.file_name.endswith(".avro") and our_file.file_name.endswith(".avro")
    assert _stats(our_file, names, types, key_types) == _stats(java_file, names, types, key_types)


def test_java_type_limits_hold(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """Avro holds timestamps up to precision 6: both sides refuse TIMESTAMP(9) in an avro table."""
    warehouse, catalog = _catalog(tmp_path)
    with pytest.raises(JavaError, match="precision"):
        java_paimon.create(
            warehouse,
            "db.j",
            [("id", "INT NOT NULL"), ("t", "TIMESTAMP(9)")],
            options={"file.format": "avro"},
        )
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("t", pa.timestamp("ns"))])
    with pytest.raises(SchemaMismatchError, match="precision"):
        catalog.create_table("db.t", schema=schema, primary_key=["id"], options={"file.format": "avro"})


def test_format_altered_mid_life(java_paimon: JavaPaimon, tmp_path: Path) -> None:
    """parquet -> avro -> parquet by ALTER on either side: mixed files read and compact alike on both sides."""
    warehouse, catalog = _catalog(tmp_path)
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"}
    )
    model: dict[str, Row] = {}

    def put(rows: pa.Table) -> None:
        model.update({r["k"]: r for r in arrow_rows(rows)})

    def check(step: str) -> None:
        expected = _json(list(model.values()))
        assert _json(arrow_rows(catalog.open_table("db.t").read())) == expected, f"{step}: lsmlake"
        assert _json(java_rows(java_paimon.read(warehouse, "db.t"))) == expected, f"{step}: Java"

    rows = _table(range(30), 1)
    table.write(rows)
    put(rows)
    table = table.alter(set_option("file.format", "avro"))
    rows = _table(range(20, 45), 2)
    table.write(rows)
    put(rows)
    check("parquet and avro files")
    suffixes = {Path(f.file_name).suffix for f in _data_files(table)}
    assert suffixes == {".parquet", ".avro"}
    java = arrow_rows(_table(range(40, 50), 3))
    java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in java])
    model.update({r["k"]: r for r in java})
    java_paimon.compact(warehouse, "db.t")
    check("Java's compaction into avro")
    assert {Path(f.file_name).suffix for f in _data_files(catalog.open_table("db.t"))} == {".avro"}
    catalog.open_table("db.t").alter(set_option("file.format", "parquet"))
    table = catalog.open_table("db.t")
    rows = _table(range(0, 50, 2), 4)
    table.write(rows)
    put(rows)
    check("avro and parquet files")
    table.compact(full=True)
    check("lsmlake's compaction into parquet")
    assert {Path(f.file_name).suffix for f in _data_files(catalog.open_table("db.t"))} == {".parquet"}


def _header(table: lsmlake.Table) -> tuple[str, str]:
    """The Avro schema text and codec of the table's one data file."""
    (f,) = _data_files(table)
    contents = decode_avro_container(
        table.io.read_bytes(f"{table.root}/bucket-0/{f.file_name}"), name=f.file_name
    )
    return contents.schema_json, contents.codec


CODECS = [
    {},
    {"file.compression": "snappy"},
    {"file.compression.zstd-level": "5"},
    {"avro.codec": "deflate"},
    {"file.compression": "null", "metadata.stats-mode": "none"},
]


@pytest.mark.parametrize(
    "extra", CODECS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default"
)
@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_schema_and_codec_equal_javas(
    extra: dict[str, str], pk: bool, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Java's AvroSchemaConverter and codec choice, byte for byte in the file header: record names,
    ``["null", T]`` unions with null defaults, logical types, key/value-record maps, the key-value layout."""
    warehouse, catalog = _catalog(tmp_path)
    options = {"file.format": "avro", "bucket": "1", **extra, **({} if pk else {"bucket-key": "k"})}
    primary = ["k"] if pk else []
    rows = _table(range(12), 1)
    # the harness creates tables of atomic types only: lsmlake creates both, Java writes one
    catalog.create_table("db.java", schema=SCHEMA, primary_key=primary or None, options=options)
    java_paimon.write(warehouse, "db.java", [{"_kind": "+I", **r} for r in arrow_rows(rows)])
    ours = catalog.create_table("db.ours", schema=SCHEMA, primary_key=primary or None, options=options)
    ours.write(rows)
    assert _header(ours) == _header(catalog.open_table("db.java"))
    assert _json(java_rows(java_paimon.read(warehouse, "db.ours"))) == _json(arrow_rows(rows))
