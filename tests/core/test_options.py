"""Option validation: unknown names and malformed values are refused at create, ALTER and read/write time."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.options import CoreOptions, check_option_value, validate_create_options
from lsmlake.errors import CommitConflictError, InvalidOptionError, UnsupportedError
from lsmlake.sql.session import execute

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


@pytest.fixture
def table(catalog: lsmlake.Catalog) -> lsmlake.Table:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    return t


def test_unknown_dynamic_option_is_refused_with_a_suggestion(table: lsmlake.Table) -> None:
    with pytest.raises(
        InvalidOptionError, match=r"db\.t.*'scan\.snapshotid'.*did you mean 'scan\.snapshot-id'"
    ):
        table.with_options({"scan.snapshotid": "1"})
    assert table.with_options({"scan.snapshot-id": "1"}).read().num_rows == 1


def test_unknown_hint_option_is_refused(catalog: lsmlake.Catalog, table: lsmlake.Table) -> None:
    with pytest.raises(InvalidOptionError, match=r"did you mean 'scan\.snapshot-id'"):
        execute(catalog, "SELECT * FROM t /*+ OPTIONS('scan.snapshotid'='1') */", database="db")
    with pytest.raises(InvalidOptionError, match="write-onl"):
        execute(catalog, "INSERT INTO t /*+ OPTIONS('write-onl'='true') */ VALUES (3, 'c')", database="db")
    assert table.read().num_rows == 2
    (result,) = execute(catalog, "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1') */", database="db")
    assert result.table is not None and result.table.num_rows == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scan.snapshot-id": "abc"}, "'scan.snapshot-id': 'abc' is not an integer"),
        ({"scan.timestamp-millis": "soon"}, "is not an integer"),
        ({"scan.mode": "latest-delta"}, "'scan.mode': 'latest-delta' is not one of"),
        ({"write-only": "yes"}, "expected true or false"),
        ({"snapshot.time-retained": "forever"}, "is not a duration"),
        ({"target-file-size": "big"}, "is not a memory size"),
        ({"snapshot.num-retained.max": "5"}, "snapshot.num-retained.max=5 is smaller than"),
    ],
)
def test_malformed_dynamic_values_are_refused(
    table: lsmlake.Table, options: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        table.with_options(options)


def test_dynamic_options_cannot_change_what_alter_cannot(table: lsmlake.Table) -> None:
    with pytest.raises(UnsupportedError, match="bucket"):
        table.with_options({"bucket": "-1"})  # dynamic buckets over fixed-bucket files: refused, as in Paimon
    # another fixed count is accepted (as by Paimon's copy), but its writes into the existing files' table
    # are refused: the keys would go to buckets the files do not have
    with pytest.raises(CommitConflictError, match="written with 2 buckets"):
        table.with_options({"bucket": "4"}).write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    with pytest.raises(UnsupportedError, match="merge-engine"):
        table.with_options({"merge-engine": "first-row"})
    assert table.with_options({"bucket": "2", "write-only": "true"}).options.get_bool("write-only")


def test_create_and_alter_check_values_as_dynamic_options_do(
    catalog: lsmlake.Catalog, table: lsmlake.Table
) -> None:
    with pytest.raises(InvalidOptionError, match=r"table db\.x: option 'commit\.max-retries': 'x'"):
        catalog.create_table("db.x", schema=SCHEMA, primary_key=["id"], options={"commit.max-retries": "x"})
    with pytest.raises(InvalidOptionError, match=r"did you mean 'snapshot\.num-retained\.max'"):
        execute(catalog, "ALTER TABLE t SET ('snapshot.num-retained.mx' = '5')", database="db")
    with pytest.raises(InvalidOptionError, match=r"'scan\.mode'"):
        execute(catalog, "ALTER TABLE t SET ('scan.mode' = 'sideways')", database="db")
    assert "x" not in catalog.list_tables("db")


def test_retention_errors_name_the_options_the_user_set(
    catalog: lsmlake.Catalog, table: lsmlake.Table
) -> None:
    # Paimon refuses this too (snapshot.num-retained.min defaults to 10); the message says why in terms
    # of the option set, not of the changelog options that fall back to it
    with pytest.raises(InvalidOptionError) as e:
        execute(catalog, "ALTER TABLE t SET ('snapshot.num-retained.max' = '5')", database="db")
    assert "snapshot.num-retained.max=5 is smaller than snapshot.num-retained.min=10 (the default)" in str(
        e.value
    )
    assert "changelog" not in str(e.value)
    execute(
        catalog,
        "ALTER TABLE t SET ('snapshot.num-retained.min' = '3', 'snapshot.num-retained.max' = '5')",
        database="db",
    )
    with pytest.raises(
        InvalidOptionError,
        match=r"changelog\.num-retained\.max=2 is smaller than changelog\.num-retained\.min, "
        r"which falls back to snapshot\.num-retained\.min=3",
    ):
        execute(catalog, "ALTER TABLE t SET ('changelog.num-retained.max' = '2')", database="db")
    with pytest.raises(
        InvalidOptionError,
        match=r"snapshot\.num-retained\.min should be at least 1: snapshot\.num-retained\.min=0",
    ):
        validate_create_options({"snapshot.num-retained.min": "0"}, primary_key_table=True)


def test_check_option_value_accepts_well_formed_values() -> None:
    for key, value in [
        ("scan.snapshot-id", " 12 "),
        ("write-only", "TRUE"),
        ("snapshot.time-retained", "30 min"),
        ("target-file-size", "64mb"),
        ("scan.mode", "from-snapshot"),
        ("comment", "anything"),
    ]:
        check_option_value(key, value)


def test_ignore_delete_is_read_as_paimon_reads_fallback_keys() -> None:
    def ignore(options: dict[str, str]) -> bool:
        return CoreOptions.of(options, primary_key_table=True).ignore_delete

    assert ignore({"deduplicate.ignore-delete": "true"})
    assert not ignore({"ignore-delete": "false", "deduplicate.ignore-delete": "true"})  # the main key decides
    assert not ignore({})


def test_conflict_messages_name_the_ignore_delete_key_that_was_set(catalog: lsmlake.Catalog) -> None:
    options = {
        "merge-engine": "partial-update",
        "partial-update.ignore-delete": "true",
        "partial-update.remove-record-on-delete": "true",
    }
    with pytest.raises(InvalidOptionError, match=r"^partial-update\.ignore-delete and partial"):
        catalog.create_table("db.pu", schema=SCHEMA, primary_key=["id"], options=options)
