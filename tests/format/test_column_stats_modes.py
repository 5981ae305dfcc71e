"""Per-column stats modes as Paimon's StatsCollectorFactories picks them, and the map options they come from."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.options import CoreOptions, validate_create_options
from lsmlake.core.options.map_option import parse_map
from lsmlake.errors import InvalidOptionError, UnsupportedError
from lsmlake.format.changelog_writer import changelog_options
from lsmlake.format.column_stats import column_stats_modes
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
        ({"file.format.per.level": "0:avro"}, UnsupportedError),
        ({"file.format.per.level": "0:csv"}, InvalidOptionError),
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
