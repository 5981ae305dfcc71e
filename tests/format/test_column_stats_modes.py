"""Per-column stats modes as Paimon's StatsCollectorFactories picks them, and the map options they come from."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions, validate_create_options
from lsmlake.core.options.map_option import parse_map
from lsmlake.core.paths import TablePaths
from lsmlake.errors import InvalidOptionError, SchemaMismatchError
from lsmlake.format.changelog_writer import changelog_options
from lsmlake.format.column_stats import column_stats_modes
from lsmlake.format.data_file_writer import DataFileWriter
from lsmlake.format.write_settings import file_settings

NAMES = ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "a", "b", "c"]


def test_field_modes_win_keys_get_truncate_128_and_keep_first_n_counts_table_columns() -> None:
    own = {"b": "full", "_KEY_id": "none"}.get
    assert column_stats_modes(NAMES, "counts", own, -1) == [
        "none",
        "truncate(128)",
        "truncate(128)",
        "counts",
        "counts",
        "full",
        "counts",
    ]
    # the first two table columns (id, a) keep the table's mode; b has its own (and counts); c is past them
    assert column_stats_modes(NAMES, "counts", {"b": "full"}.get, 2) == [
        "truncate(128)",
        "truncate(128)",
        "truncate(128)",
        "counts",
        "counts",
        "full",
        "none",
    ]
    # Avro files: no key or system special case, and every column counts
    assert column_stats_modes(NAMES, "counts", lambda _: None, 4, avro=True) == [
        "counts",
        "counts",
        "counts",
        "counts",
        "none",
        "none",
        "none",
    ]


def test_map_options_parse_as_paimon_splits_them() -> None:
    assert dict(parse_map("k", " 0 : orc , '3:a,b' ")) == {"0": "orc", "3": "a,b"}  # a quoted entry
    with pytest.raises(InvalidOptionError, match="not a key:value pair"):
        parse_map("k", "0:orc,1")
    with pytest.raises(InvalidOptionError, match="given twice"):
        parse_map("k", "0:orc,0:parquet")
    opts = CoreOptions.of(
        {"file.format.per.level.2": "ORC", "file.format.per.level.0": "parquet"}, primary_key_table=True
    )
    assert opts.per_level(CoreOptions.FILE_FORMAT_PER_LEVEL) == {2: "ORC", 0: "parquet"}
    exact = {"file.format.per.level": "1:orc", "file.format.per.level.2": "orc"}
    assert CoreOptions.of(exact, primary_key_table=True).per_level(CoreOptions.FILE_FORMAT_PER_LEVEL) == {
        1: "orc"
    }


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"file.format.per.level": "0:csv"}, InvalidOptionError),
        ({"file.format.per.level": "0:avro", "file.compression.per.level": "0:lz4"}, InvalidOptionError),
        ({"file.format": "avro", "file.compression.per.level": "2:gzip"}, InvalidOptionError),
        ({"file.compression.per.level": "1:zlib"}, InvalidOptionError),  # a Parquet level
        ({"file.format.per.level": "0:orc", "file.compression.per.level": "0:gzip"}, InvalidOptionError),
        ({"metadata.stats-mode.per.level": "0:some"}, InvalidOptionError),
        ({"fields.v.stats-mode": "truncate(x)"}, InvalidOptionError),
        ({"metadata.stats-mode": "everything"}, InvalidOptionError),
    ],
)
def test_bad_file_settings_are_refused(options: dict[str, str], error: type[Exception]) -> None:
    with pytest.raises(error):
        validate_create_options(options, primary_key_table=True)


def test_key_stats_are_truncated_at_128_characters(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("v", pa.string())])
    t = catalog.create_table(
        "db.t", schema=schema, primary_key=["k"], options={"bucket": "1", "metadata.stats-mode": "full"}
    )
    long_key = "k" * 200
    t.write(pa.table({"k": [long_key, "a"], "v": ["x" * 200, "a"]}, schema=schema))
    (f,) = [f for s in t.scan().splits() for f in s.files]
    types = [t.schema.field("k").type.copy(nullable=True)]
    assert deserialize_row(f.key_stats.max_values, types) == ["k" * 127 + "l"]  # an upper bound, 128 long
    assert deserialize_row(f.key_stats.min_values, types) == ["a"]
    vtypes = [t.schema.field(n).type.copy(nullable=True) for n in t.schema.field_names]
    assert deserialize_row(f.value_stats.max_values, vtypes)[1] == "x" * 200  # full: untruncated


def test_changelog_files_take_changelog_settings_before_the_level_ones() -> None:
    """Paimon's key2Format / key2Compress / key2Stats: a changelog-file.* setting, else the level's, else the table's."""
    raw = {
        "file.format.per.level": "0:orc",
        "file.compression.per.level": "0:snappy",
        "metadata.stats-mode.per.level.0": "none",
        "changelog-file.format": "parquet",
    }
    opts = CoreOptions.of(raw, primary_key_table=True)
    data = file_settings(opts, 0, primary_key_table=True)
    changelog = file_settings(changelog_options(opts), 0, primary_key_table=True)
    assert (data.format, data.compression, data.stats_mode) == ("orc", "snappy", "none")
    assert (changelog.format, changelog.compression, changelog.stats_mode) == ("parquet", "snappy", "none")
    assert file_settings(opts, 1, primary_key_table=True).format == "parquet"
    assert file_settings(opts, 0, primary_key_table=False).format == "parquet"  # append tables: no levels


def test_avro_levels_take_avro_codecs_unless_avro_codec_is_set() -> None:
    ok = {"file.format.per.level": "0:avro,5:parquet", "file.compression.per.level": "0:snappy,5:gzip"}
    validate_create_options(ok, primary_key_table=True)
    # Java's Avro writer takes avro.codec over the level's compression: any name then goes
    validate_create_options(
        {"file.format.per.level": "0:avro", "file.compression.per.level": "0:lz4", "avro.codec": "deflate"},
        primary_key_table=True,
    )


def test_a_type_avro_cannot_hold_is_refused_for_an_avro_level(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("t", pa.timestamp("ns"))])
    with pytest.raises(SchemaMismatchError, match=r"column 't'.*file.format.per.level entry '2:avro'"):
        catalog.create_table(
            "db.t", schema=schema, primary_key=["k"], options={"file.format.per.level": "2:avro"}
        )
    # append tables have no levels: Paimon ignores the per-level options there
    catalog.create_table("db.a", schema=schema, options={"file.format.per.level": "2:avro", "bucket": "-1"})


def _kv_types(t: lsmlake.Table) -> tuple[list[object], list[object]]:
    key = [t.schema.field(k).type.copy(nullable=True) for k in t.schema.primary_keys]
    return key, [f.type.copy(nullable=True) for f in t.schema.fields]


def test_avro_level_files_collect_stats_as_createStatsFactoriesForAvro(catalog: lsmlake.Catalog) -> None:
    """An Avro level-0 file: the key column takes the table's mode (truncate(16), not truncate(128)), a
    column's fields.<f>.stats-mode wins, keep-first-n counts the key and system columns too; the Parquet
    file a full compaction writes at the top level takes truncate(128) key stats and its own modes."""
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("a", pa.string()), ("b", pa.float64())])
    options = {
        "bucket": "1",
        "file.format.per.level": "0:avro,5:parquet",
        "file.compression.per.level": "0:deflate",
        "fields.b.stats-mode": "full",
        "metadata.stats-keep-first-n-columns": "4",
    }
    t = catalog.create_table("db.t", schema=schema, primary_key=["k"], options=options)
    keys = ["k" * 40, "a"]
    t.write(pa.table({"k": keys, "a": ["x" * 30, None], "b": [float("nan"), 1.5]}, schema=schema))
    (f,) = [f for s in t.scan().splits() for f in s.files]
    assert f.file_name.endswith(".avro") and f.level == 0
    key_types, value_types = _kv_types(t)
    # key: truncate(16) as the table's mode says, and counted (with _SEQUENCE_NUMBER, _VALUE_KIND) among
    # the first 4 columns, so only k (the value) keeps its stats; b has its own mode
    assert deserialize_row(f.key_stats.max_values, key_types) == ["k" * 15 + "l"]
    assert deserialize_row(f.key_stats.min_values, key_types) == ["a"]
    assert f.value_stats_cols == ("k", "b")
    assert f.value_stats.null_counts == (0, 0)
    dense_types = [value_types[0], value_types[2]]
    assert deserialize_row(f.value_stats.min_values, dense_types) == ["a", 1.5]
    max_b = deserialize_row(f.value_stats.max_values, dense_types)[1]
    assert isinstance(max_b, float) and math.isnan(max_b)  # Java's per-record compareTo: NaN is the maximum
    t.write(pa.table({"k": ["a"], "a": [None], "b": [float("nan")]}, schema=schema))
    t.compact(full=True)  # two overlapping files merged (one alone would move up unchanged)
    (top,) = [f for s in catalog.get_table("db.t").scan().splits() for f in s.files]
    assert top.file_name.endswith(".parquet") and top.level == 5
    assert deserialize_row(top.key_stats.max_values, key_types) == ["k" * 40]  # truncate(128)
    # Parquet: key and system columns are not counted, so k and a keep truncate(16); b stays full but
    # Java's Parquet footer has no bounds with a NaN in the column
    assert top.value_stats_cols is None
    assert deserialize_row(top.value_stats.max_values, value_types) == ["k" * 15 + "l", "x" * 15 + "y", None]
    assert deserialize_row(top.value_stats.min_values, value_types) == ["a", "x" * 16, None]
    assert sorted(catalog.get_table("db.t").read().column("k").to_pylist()) == sorted(keys)


def test_avro_level_with_stats_mode_none_lists_no_stats_columns(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    options = {"bucket": "1", "file.format.per.level": "0:avro", "metadata.stats-mode.per.level": "0:none"}
    t = catalog.create_table("db.t", schema=schema, primary_key=["k"], options=options)
    t.write(pa.table({"k": [3, 1], "v": ["x", None]}, schema=schema))
    (f,) = [f for s in t.scan().splits() for f in s.files]
    assert f.file_name.endswith(".avro") and f.value_stats_cols == ()
    key_types, _ = _kv_types(t)
    assert deserialize_row(f.key_stats.min_values, key_types) == [None]  # an Avro key column: mode none
    assert f.key_stats.null_counts == (None,)
    assert t.read(filter="k = 1").column("v").to_pylist() == [None]


def test_writer_dispatches_each_level_to_its_format(catalog: lsmlake.Catalog, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    options = {"bucket": "1", "file.format.per.level": "0:avro,1:orc,2:parquet"}
    t = catalog.create_table("db.t", schema=schema, primary_key=["k"], options=options)
    io, root = FileIO.for_uri(str(tmp_path / "w"))
    opts = CoreOptions.of(t.schema.options, primary_key_table=True)
    writer = DataFileWriter(io, TablePaths(root), t.schema, opts, f"{root}/bucket-0")
    assert [writer.settings(level).format for level in range(4)] == ["avro", "orc", "parquet", "parquet"]
    assert [writer.streams(level) for level in range(3)] == [True, False, True]
    kv = pa.table(
        {
            "_KEY_k": pa.array([1, 2], pa.int64()),
            "_SEQUENCE_NUMBER": pa.array([0, 1], pa.int64()),
            "_VALUE_KIND": pa.array([0, 0], pa.int8()),
            "k": pa.array([1, 2], pa.int64()),
            "v": ["a", None],
        }
    )
    written = {level: writer.write(kv, level=level) for level in range(3)}
    assert {level: [m.file_name.rsplit(".", 1)[1] for m in ms] for level, ms in written.items()} == {
        0: ["avro"],
        1: ["orc"],
        2: ["parquet"],
    }
