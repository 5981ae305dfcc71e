"""``file.format=avro`` data files: the schema as Java spells it, the codec choice, decimal bytes, rolling,
changelog files, and the types and codecs lsmlake refuses as Java does."""

from __future__ import annotations

import io
import json
import re
from decimal import Decimal
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core.fileio import FileIO
from lsmlake.core.types import DataField, DataType, from_arrow_type
from lsmlake.errors import InvalidOptionError, SchemaMismatchError
from lsmlake.format.avro_data import iter_avro, read_avro
from lsmlake.format.avro_schema import avro_codec, data_file_schema
from lsmlake.format.avro_write import AvroFileSink, _decimal_bytes, avro_column, encode_rows
from lsmlake.format.data_file_writer import WRITE_PIECE_ROWS
from lsmlake.metadata.avro_container import decode_avro_container, strip_logical_types
from lsmlake.schema_change.changes import set_option

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("ms", tz="UTC")),
        pa.field("m", pa.map_(pa.int64(), pa.string())),
        pa.field("r", pa.struct([pa.field("d", pa.decimal128(5, 2))])),
        pa.field("big", pa.list_(pa.decimal128(38, 9))),
    ]
)
BIG = Decimal("-12345678901234567890123456789.123456789")  # 38 digits: more than Python's default 28


def _table(tmp_path: Path, options: dict[str, str], schema: pa.Schema = SCHEMA) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table("db.t", schema=schema, primary_key=["id"], options=options)


def _rows(ids: range) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": i,
                "name": f"n{i}",
                "ts": i * 1000,
                "m": [(i, "x")],
                "r": {"d": Decimal(i).scaleb(-2)},
                "big": [BIG],
            }
            for i in ids
        ],
        schema=SCHEMA,
    )


def _files(table: lsmlake.Table) -> list[Path]:
    return sorted(Path(table.root).rglob("*.avro"))


def test_key_value_schema_is_spelled_as_java_spells_it(tmp_path: Path) -> None:
    """Pinned from a Java Paimon 1.4.2 file of this table (tests/java/test_java_avro.py compares live)."""
    table = _table(tmp_path, {"bucket": "1", "file.format": "avro"})
    table.write(_rows(range(3)))
    (path,) = _files(table)
    contents = decode_avro_container(path.read_bytes(), name=path.name)
    ns = "org.apache.paimon.avro.generated"
    assert json.loads(contents.schema_json) == {
        "type": "record",
        "name": "record",
        "namespace": ns,
        "fields": [
            {"name": "_KEY_id", "type": "int"},
            {"name": "_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_VALUE_KIND", "type": "int"},
            {"name": "id", "type": "int"},
            {"name": "name", "type": ["null", "string"], "default": None},
            {
                "name": "ts",
                "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}],
                "default": None,
            },
            {
                "name": "m",
                "type": [
                    "null",
                    {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "record_m",
                            "fields": [
                                {"name": "key", "type": "long"},
                                {"name": "value", "type": ["null", "string"], "default": None},
                            ],
                        },
                        "logicalType": "map",
                    },
                ],
                "default": None,
            },
            {
                "name": "r",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "record_r",
                        "fields": [
                            {
                                "name": "d",
                                "type": [
                                    "null",
                                    {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
                                ],
                                "default": None,
                            }
                        ],
                    },
                ],
                "default": None,
            },
            {
                "name": "big",
                "type": [
                    "null",
                    {
                        "type": "array",
                        "items": [
                            "null",
                            {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 9},
                        ],
                    },
                ],
                "default": None,
            },
        ],
    }
    assert contents.codec == "zstandard"
    assert table.read().sort_by("id").equals(_rows(range(3)))


@pytest.mark.parametrize(
    ("compression", "option", "expected"),
    [
        ("zstd", None, ("zstandard", 7)),
        ("snappy", None, ("snappy", None)),
        ("null", None, ("null", None)),
        ("lz4", "deflate", ("deflate", None)),
        ("zstd", "zstandard", ("zstandard", 3)),
    ],
)
def test_codec_is_javas_choice(
    compression: str, option: str | None, expected: tuple[str, int | None]
) -> None:
    assert avro_codec(compression=compression, avro_codec_option=option, zstd_level=7) == expected


def test_a_compression_avro_has_no_codec_for_is_an_error_naming_the_option(tmp_path: Path) -> None:
    table = _table(tmp_path, {"bucket": "1", "file.format": "avro", "file.compression": "lz4"})
    with pytest.raises(InvalidOptionError, match=re.escape("'file.compression'='lz4' is not an Avro codec")):
        table.write(_rows(range(3)))
    assert table.read().num_rows == 0 and _files(table) == []
    table = table.with_options({"avro.codec": "bogus"})
    with pytest.raises(InvalidOptionError, match=re.escape("'avro.codec'='bogus'")):
        table.write(_rows(range(3)))


def test_decimals_are_javas_shortest_twos_complement_bytes() -> None:
    edges = [
        0,
        1,
        -1,
        127,
        128,
        -128,
        -129,
        255,
        256,
        -256,
        32767,
        -32768,
        10**37,
        -(10**37),
        10**38 - 1,
        -(10**38) + 1,
    ]
    assert [_decimal_bytes(u) for u in (0, 127, 128, -128, -129)] == [
        b"\x00",
        b"\x7f",
        b"\x00\x80",
        b"\x80",
        b"\xff\x7f",
    ]
    values = [Decimal(f"{u}e-4") for u in edges]  # exact (scaleb rounds to 28 digits)
    column = pa.array([None, *values, None], pa.decimal128(38, 4))
    t = DataType("DECIMAL", True, precision=38, scale=4)
    assert avro_column(column, t) == [None, *(_decimal_bytes(u) for u in edges), None]
    # a slice keeps its offset in the buffers
    assert avro_column(column.slice(3, 5), t) == [_decimal_bytes(u) for u in edges[2:7]]


def test_files_roll_at_the_target_size(tmp_path: Path) -> None:
    """A file rolls between chunks of ``WRITE_PIECE_ROWS`` once it reaches ``target-file-size``."""
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("name", pa.string())])
    options = {"bucket": "1", "file.format": "avro", "target-file-size": "1 kb", "write-buffer-size": "64 mb"}
    table = _table(tmp_path, options, schema)
    n = 2 * WRITE_PIECE_ROWS + 10
    rows = pa.table(
        {"id": pa.array(range(n), pa.int32()), "name": [f"n{i}" for i in range(n)]}, schema=schema
    )
    table.write(rows)
    assert len(_files(table)) == 3
    assert table.read().sort_by("id").equals(rows)
    table.compact(full=True)
    assert table.read().sort_by("id").equals(rows)


def test_changelog_files_in_avro_beside_parquet_data(tmp_path: Path) -> None:
    table = _table(
        tmp_path,
        {"bucket": "1", "changelog-producer": "lookup", "changelog-file.format": "avro"},
    )
    table.write(_rows(range(10)))
    table.write(_rows(range(5, 15)))
    table.compact(full=True)
    changelogs = [p.name for p in _files(table)]
    assert changelogs and all(n.startswith("changelog-") for n in changelogs)
    assert not [p for p in Path(table.root).rglob("data-*.avro")]
    streamed = [
        r
        for part in table.stream(mode="from-snapshot", snapshot_id=1, stop_when_caught_up=True)
        for r in part.to_pylist()
    ]
    assert sorted(r["id"] for r in streamed if r["rowkind"] in ("+I", "+U")) == sorted(
        [*range(10), *range(5, 15)]
    )


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (pa.field("t", pa.timestamp("ns")), "precision above 6"),
        (pa.field("t", pa.time64("us")), "time precision above 3"),
        (pa.field("a", pa.list_(pa.timestamp("ns"))), "precision above 6"),
    ],
)
def test_types_avro_cannot_hold_are_refused_at_create_and_alter(
    tmp_path: Path, field: pa.Field, message: str
) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), field])
    with pytest.raises(SchemaMismatchError, match=message):
        _table(tmp_path, {"bucket": "1", "file.format": "avro"}, schema)
    table = _table(tmp_path, {"bucket": "1"}, schema)
    with pytest.raises(SchemaMismatchError, match=message):
        table.alter(set_option("file.format", "avro"))


def test_a_column_name_avro_cannot_spell_is_refused_before_a_file_is_written(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("my col", pa.int32())])
    table = _table(tmp_path, {"bucket": "1", "file.format": "avro"}, schema)
    with pytest.raises(SchemaMismatchError, match="'my col' is not a valid Avro name"):
        table.write(pa.table({"id": pa.array([1], pa.int32()), "my col": pa.array([2], pa.int32())}))
    assert _files(table) == [] and table.read().num_rows == 0
    assert data_file_schema([DataField(0, "ok_name", DataType("INT", False))])["fields"] == [
        {"name": "ok_name", "type": "int"}
    ]


ENCODED = pa.schema(
    [
        pa.field("l", pa.int64(), nullable=False),
        pa.field("i", pa.int32()),
        pa.field("t", pa.int8()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64(), nullable=False),
        pa.field("bo", pa.bool_()),
        pa.field("s", pa.string()),
        pa.field("b", pa.binary(), nullable=False),
        pa.field("dec", pa.decimal128(38, 3)),
        pa.field("ts", pa.timestamp("us")),
        pa.field("ts0", pa.timestamp("s")),
        pa.field("day", pa.date32()),
        pa.field("arr", pa.list_(pa.string())),
    ]
)
_NULL = st.none()
ENCODED_ROW = st.fixed_dictionaries(
    {
        "l": st.integers(-(2**63), 2**63 - 1),
        "i": _NULL | st.integers(-(2**31), 2**31 - 1),
        "t": _NULL | st.integers(-128, 127),
        "f": _NULL | st.floats(width=32, allow_nan=False),
        "d": st.floats(allow_nan=False),
        "bo": _NULL | st.booleans(),
        "s": _NULL | st.text(max_size=12),
        "b": st.binary(max_size=300),
        "dec": _NULL | st.integers(-(10**38) + 1, 10**38 - 1).map(lambda u: Decimal(f"{u}e-3")),
        # within Python's datetime range (year 1 to 9999), negative epochs included
        "ts": _NULL
        | st.integers(-(6 * 10**16), 25 * 10**16).map(lambda us: pa.scalar(us, pa.timestamp("us")).as_py()),
        "ts0": _NULL
        | st.integers(-(6 * 10**10), 25 * 10**10).map(lambda s: pa.scalar(s, pa.timestamp("s")).as_py()),
        "day": _NULL | st.integers(-700_000, 2_900_000).map(lambda d: pa.scalar(d, pa.date32()).as_py()),
        "arr": _NULL | st.lists(_NULL | st.text(max_size=3), max_size=3),
    }
)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(ENCODED_ROW, max_size=40), offset=st.integers(0, 3))
def test_vectorized_records_are_fastavros_bytes(rows: list[dict[str, object]], offset: int) -> None:
    """The numpy encoding of flat columns (zig-zag varints, unions, lengths, little-endian floats) is what
    fastavro writes for the same values, row after row; slices keep their offsets."""
    table = pa.Table.from_pylist(rows, schema=ENCODED).slice(min(offset, len(rows)))
    fields = [DataField(i, f.name, from_arrow_type(f.type, f.nullable)) for i, f in enumerate(ENCODED)]
    schema = data_file_schema(fields)
    stripped = fastavro.parse_schema(strip_logical_types(schema))
    named: dict[str, object] = {}
    parsed = [
        fastavro.parse_schema(strip_logical_types(f["type"]), named_schemas=named) for f in schema["fields"]
    ]
    expected = io.BytesIO()
    columns = {f.name: avro_column(table.column(f.name).combine_chunks(), f.type) for f in fields}
    for values in zip(*columns.values(), strict=True):
        fastavro.schemaless_writer(expected, stripped, dict(zip(columns, values, strict=True)))
    assert encode_rows(table, fields, parsed) == expected.getvalue()


@pytest.mark.parametrize("mode", ["none", "counts", "truncate(2)"])
def test_filters_prune_on_truncated_or_missing_stats_as_on_full_ones(tmp_path: Path, mode: str) -> None:
    """Avro keys get the stats mode too (truncated, counted or none): filters on keys and values read the
    rows a parquet table reads."""
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.string())])
    rows = pa.table(
        {"k": [f"key-{i:04d}-long" for i in range(300)], "v": [f"v{i % 7}" * 3 for i in range(300)]}
    )
    tables = {}
    for fmt in ("parquet", "avro"):
        catalog = lsmlake.Catalog(str(tmp_path / fmt))
        catalog.create_database("db")
        options = {"bucket": "2", "file.format": fmt, "metadata.stats-mode": mode}
        t = catalog.create_table("db.t", schema=schema, primary_key=["k"], options=options)
        for start in range(0, 300, 100):
            t.write(rows.slice(start, 100).cast(schema))
        tables[fmt] = t
    for where in (
        "k = 'key-0042-long'",
        "k > 'key-0250'",
        "k < 'key-0010-long' OR v = 'v3v3v3'",
        "v >= 'v5'",
    ):
        got = tables["avro"].read(filter=where).sort_by("k")
        assert got.equals(tables["parquet"].read(filter=where).sort_by("k")), where
        assert got.num_rows > 0, where


def test_a_file_is_read_block_by_block_with_row_positions(tmp_path: Path) -> None:
    """Pieces of whole blocks, about ``max_rows`` rows each, positioned in the file; whole without it."""
    fields = [DataField(0, "id", DataType("INT", False)), DataField(1, "s", DataType("VARCHAR", True))]
    path = tmp_path / "f.avro"
    with path.open("wb") as out:
        sink = AvroFileSink(out, fields, codec="deflate", level=None)
        for start, n in ((0, 5), (5, 7), (12, 1), (13, 9)):  # four blocks
            ids = list(range(start, start + n))
            sink.write(
                pa.table({"id": pa.array(ids, pa.int32()), "s": [None if i % 3 else f"s{i}" for i in ids]})
            )
    io_ = FileIO.for_uri(str(tmp_path))[0]
    whole = read_avro(io_, str(path), None)
    assert whole.column("id").to_pylist() == list(range(22))
    pieces = list(iter_avro(io_, str(path), ["s"], max_rows=6))
    assert [len(t) for t, _ in pieces] == [12, 10]  # blocks are never split
    assert pa.concat_tables([t for t, _ in pieces]).equals(whole.select(["s"]))
    positions = [p for _, p in pieces]
    assert all(p is not None for p in positions)
    assert np.concatenate([p for p in positions if p is not None]).tolist() == list(range(22))
    ((_, none),) = iter_avro(io_, str(path), ["id"])
    assert none is None
