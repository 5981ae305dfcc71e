"""table.alter / catalog.alter_table: each kind of change, what is refused, field ids, options, races."""

from __future__ import annotations

import json
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.core.schema import decode_schema
from lsmlake.errors import (
    AlreadyExistsError,
    CommitConflictError,
    InvalidOptionError,
    NoSuchTableError,
    UnsupportedError,
)
from lsmlake.schema_change import SchemaChangeError, schema_ids
from lsmlake.table import Table

SCHEMA = pa.schema(
    [
        pa.field("p", pa.int32(), nullable=False),
        pa.field("k", pa.int32(), nullable=False),
        ("v", pa.int32()),
        ("s", pa.string()),
        ("f", pa.float32()),
        ("d", pa.decimal128(6, 2)),
    ]
)
REFUSED = (SchemaChangeError, UnsupportedError, InvalidOptionError)


def arrow_schema(t: Table) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in t.schema.logical_arrow_schema()])


def write(t: Table, rows: list[dict[str, Any]]) -> None:
    t.write(pa.Table.from_pylist(rows, schema=arrow_schema(t)))


def by_key(t: Table, **kw: Any) -> dict[int, dict[str, Any]]:
    return {r["k"]: r for r in t.read(**kw).to_pylist()}


def schema_files(t: Table) -> list[str]:
    return sorted(p.name for p in (Path(t.root) / "schema").iterdir())


@pytest.fixture
def table(catalog: lsmlake.Catalog) -> Table:
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["p", "k"], partition_keys=["p"], options={"bucket": "2"}
    )
    write(t, [{"p": 1, "k": i, "v": i * 10, "s": f"s{i}", "f": i / 2, "d": Decimal(i) / 4} for i in range(6)])
    return t


# --------------------------------------------------------------------------- each kind of change


def test_add_column_gets_next_field_id_and_reads_null_for_old_rows(
    catalog: lsmlake.Catalog, table: Table
) -> None:
    t = table.alter(sc.add_column("n", pa.int64(), comment="new", after="k"))
    assert t.schema.id == 1 and t.schema.highest_field_id == 6
    assert t.schema.field_names == ["p", "k", "n", "v", "s", "f", "d"]
    assert t.schema.field("n").id == 6 and t.schema.field("n").description == "new"
    assert all(r["n"] is None for r in t.read().to_pylist())
    write(t, [{"p": 1, "k": 9, "n": 2**40, "v": 1, "s": "x", "f": 0.0, "d": None}])
    again = catalog.get_table("db.t")
    assert isinstance(again, Table) and again.schema == t.schema
    assert by_key(again)[9]["n"] == 2**40 and by_key(again)[1]["n"] is None
    files = {f.schema_id for s in again.scan().splits() for f in s.files}
    assert files == {0, 1}


def test_add_column_positions_and_nested_ids(table: Table) -> None:
    t = table.alter(
        sc.add_column("a", "INT", first=True),
        sc.add_column("b", "STRING", before="v"),
        sc.add_column("r", "ROW<x INT, y ARRAY<STRING>>"),
        sc.add_column("m", pa.map_(pa.string(), pa.int32())),
    )
    assert t.schema.field_names == ["a", "p", "k", "b", "v", "s", "f", "d", "r", "m"]
    r = t.schema.field("r")
    assert (t.schema.field("a").id, t.schema.field("b").id, r.id) == (6, 7, 8)
    assert [f.id for f in r.type.fields] == [9, 10]
    assert t.schema.field("m").id == 11 and t.schema.highest_field_id == 11
    rows = t.read().to_pylist()
    assert len(rows) == 6 and all(row["r"] is None and row["m"] is None for row in rows)


def test_drop_column_and_re_add_same_name_is_a_new_column(table: Table) -> None:
    t = table.alter(sc.drop_column("s"))
    assert "s" not in t.schema.field_names and t.read().column_names == ["p", "k", "v", "f", "d"]
    t = t.alter(sc.add_column("s", "STRING"))
    assert t.schema.field("s").id == 6
    assert all(r["s"] is None for r in t.read().to_pylist())  # the old values belong to dropped id 3


def test_rename_keeps_field_id_and_old_files_read(table: Table) -> None:
    t = table.alter(sc.rename_column("v", "value"), sc.rename_column("s", "v"))
    assert (t.schema.field("value").id, t.schema.field("v").id) == (2, 3)
    rows = by_key(t)
    assert rows[3]["value"] == 30 and rows[3]["v"] == "s3"
    assert by_key(t, filter="value >= 40").keys() == {4, 5}
    assert by_key(t, filter="v = 's2'").keys() == {2}


def test_rename_primary_key_column_is_allowed_like_paimon(table: Table) -> None:
    t = table.alter(sc.rename_column("k", "key"))
    assert t.schema.primary_keys == ("p", "key") and t.schema.field("key").id == 1
    write(t, [{"p": 1, "key": 2, "v": -1, "s": None, "f": None, "d": None}])
    rows = {r["key"]: r for r in t.read().to_pylist()}
    assert len(rows) == 6 and rows[2]["v"] == -1  # merged with the row written before the rename
    assert {r["key"] for r in t.read(filter="key > 3").to_pylist()} == {4, 5}
    t.compact(full=True)
    assert {r["key"]: r["v"] for r in t.read().to_pylist()} == {0: 0, 1: 10, 2: -1, 3: 30, 4: 40, 5: 50}


@pytest.mark.parametrize(
    ("column", "new_type", "expected"),
    [
        ("v", "BIGINT", 30),
        ("v", pa.float64(), 30.0),
        ("v", "DECIMAL(12, 2)", Decimal("30.00")),
        ("f", "DOUBLE", 1.5),
        ("d", "DECIMAL(8, 3)", Decimal("0.750")),
        ("d", "DECIMAL(7, 2)", Decimal("0.75")),
        ("s", "STRING", "s3"),
    ],
)
def test_widening_reads_old_files_cast(table: Table, column: str, new_type: Any, expected: Any) -> None:
    t = table.alter(sc.update_column_type(column, new_type))
    value = by_key(t)[3][column]
    assert value == expected and type(value) is type(expected)


def test_varchar_length_and_timestamp_precision_widen(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.w",
        schema=pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ms"))]),
        primary_key=["id"],
        options={"bucket": "1"},
    )
    t = t.alter(sc.add_column("c", "VARCHAR(5)"), sc.add_column("b", "VARBINARY(4)"))
    t.write(pa.table({"id": [1], "ts": pa.array([1000], pa.timestamp("ms")), "c": ["abc"], "b": [b"xy"]}))
    t = t.alter(
        sc.update_column_type("c", "VARCHAR(10)"),
        sc.update_column_type("ts", "TIMESTAMP(6)"),
        sc.update_column_type("b", "BYTES"),
    )
    row = t.read().to_pylist()[0]
    assert row["c"] == "abc" and row["b"] == b"xy" and row["ts"].timestamp() == pytest.approx(1.0, abs=1e6)
    assert t.read().schema.field("ts").type == pa.timestamp("us")


def test_nullability_comment_position_table_comment(table: Table) -> None:
    t = table.alter(sc.add_column("n", "INT"), sc.update_column_position("n", first=True))
    assert t.schema.field_names[0] == "n"
    t = t.alter(
        sc.update_column_position("n", after="v"),
        sc.update_column_position("d", before="p"),
        sc.update_column_comment("v", "the value"),
        sc.update_comment("a table"),
    )
    assert t.schema.field_names == ["d", "p", "k", "v", "n", "s", "f"]
    assert t.schema.field("v").description == "the value" and t.schema.comment == "a table"
    t = t.alter(sc.update_column_position("d", last=True))
    assert t.schema.field_names[-1] == "d"


def test_not_null_column_can_become_nullable(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), False), pa.field("x", pa.int32(), False)])
    t = catalog.create_table("db.nn", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "x": [5]}, schema=schema))
    t = t.alter(sc.update_column_nullability("x", True))
    assert t.schema.field("x").type.nullable
    relaxed = pa.schema([schema.field(0), pa.field("x", pa.int32())])
    t.write(pa.table({"id": [2], "x": [None]}, schema=relaxed))
    assert sorted((r["id"], r["x"]) for r in t.read().to_pylist()) == [(1, 5), (2, None)]
    # a type change keeps NOT NULL unless asked otherwise
    t2 = catalog.create_table("db.nn2", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t2 = t2.alter(sc.update_column_type("x", "BIGINT"))
    assert not t2.schema.field("x").type.nullable
    assert t2.alter(sc.update_column_type("x", "BIGINT NOT NULL")).schema.id == t2.schema.id


def test_options_set_and_remove(table: Table) -> None:
    t = table.alter(sc.set_option("snapshot.num-retained.max", 20), sc.set_option("write-only", True))
    assert t.schema.options["snapshot.num-retained.max"] == "20" and t.schema.options["write-only"] == "true"
    assert t.options.get_bool("write-only")
    t = t.alter(sc.remove_option("write-only"), sc.remove_option("not-there-anyway"))
    assert "write-only" not in t.schema.options and t.schema.options["bucket"] == "2"


def test_noop_changes_write_nothing(table: Table) -> None:
    before = schema_files(table)
    assert table.alter().schema.id == 0
    assert table.alter(sc.set_option("bucket", "2"), sc.rename_column("v", "v")).schema.id == 0
    assert table.alter(sc.update_column_type("v", "INT")).schema.id == 0
    assert schema_files(table) == before


def test_schema_file_is_java_shaped(table: Table) -> None:
    t = table.alter(sc.add_column("n", "DECIMAL(10, 2)", comment="money"), sc.rename_column("v", "w"))
    text = (Path(t.root) / "schema" / "schema-1").read_text()
    obj = json.loads(text)
    assert list(obj) == [
        "version",
        "id",
        "fields",
        "highestFieldId",
        "partitionKeys",
        "primaryKeys",
        "options",
        "timeMillis",
    ]
    assert obj["version"] == 3 and obj["id"] == 1 and obj["highestFieldId"] == 6
    assert {"id": 6, "name": "n", "type": "DECIMAL(10, 2)", "description": "money"} in obj["fields"]
    assert {"id": 2, "name": "w", "type": "INT"} in obj["fields"]
    assert '"id" : 1' in text and decode_schema(text) == t.schema


def test_schemas_system_table_shows_history(catalog: lsmlake.Catalog, table: Table) -> None:
    table.alter(sc.add_column("n", "INT")).alter(sc.drop_column("s"))
    history = catalog.get_table("db.t$schemas").read().to_pylist()  # type: ignore[union-attr]
    assert [r["schema_id"] for r in history] == [0, 1, 2]
    assert '"name":"n"' in history[1]["fields"] and '"name":"s"' not in history[2]["fields"]


def test_catalog_alter_table(catalog: lsmlake.Catalog, table: Table) -> None:
    t = catalog.alter_table("db.t", sc.add_column("n", "INT"))
    assert t is not None and t.schema.id == 1
    assert catalog.alter_table("db.missing", sc.add_column("n", "INT"), ignore_missing=True) is None
    with pytest.raises(NoSuchTableError):
        catalog.alter_table("db.missing", sc.add_column("n", "INT"))


def test_alter_applies_to_the_latest_schema_not_a_stale_object(table: Table) -> None:
    table.alter(sc.add_column("a", "INT"))
    t = table.alter(sc.add_column("b", "INT"))  # ``table`` still holds schema 0
    assert t.schema.id == 2 and t.schema.field_names[-2:] == ["a", "b"]
    assert table.latest_schema() == t.schema


def test_legacy_schema_version_keeps_its_implicit_defaults(catalog: lsmlake.Catalog, table: Table) -> None:
    path = Path(table.root) / "schema" / "schema-0"
    obj = json.loads(path.read_text())
    obj["version"] = 1
    obj["options"] = {}
    path.write_text(json.dumps(obj))
    t = catalog.get_table("db.t")
    assert isinstance(t, Table) and t.options.bucket == 1
    t2 = t.alter(sc.add_column("n", "INT"))
    assert t2.schema.version == 3 and t2.schema.options["bucket"] == "1"
    assert t2.schema.options["file.format"] == "orc"  # what Java injects for versions <= 2 as well


# --------------------------------------------------------------------------- refused changes


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (sc.drop_column("k"), SchemaChangeError, "cannot drop primary-key column 'k'"),
        (sc.drop_column("p"), SchemaChangeError, "cannot drop partition column 'p'"),
        (sc.rename_column("p", "q"), SchemaChangeError, "cannot rename partition column 'p'"),
        (sc.update_column_type("k", "BIGINT"), SchemaChangeError, "primary-key column 'k'"),
        (sc.update_column_type("p", "BIGINT"), SchemaChangeError, "partition column 'p'"),
        (sc.update_column_type("v", "SMALLINT"), SchemaChangeError, "without losing information"),
        (sc.update_column_type("v", "STRING"), SchemaChangeError, "INT cannot be converted to STRING"),
        (sc.update_column_type("v", "FLOAT"), SchemaChangeError, "without losing information"),
        (sc.update_column_type("s", "INT"), SchemaChangeError, "without losing information"),
        (sc.update_column_type("d", "DECIMAL(6, 3)"), SchemaChangeError, "without losing information"),
        (sc.update_column_type("d", "DECIMAL(5, 2)"), SchemaChangeError, "without losing information"),
        (sc.update_column_type("f", "DECIMAL(10, 2)"), SchemaChangeError, "without losing information"),
        (sc.update_column_type("v", "BIGINT NOT NULL"), SchemaChangeError, "NOT NULL"),
        (sc.update_column_nullability("v", False), SchemaChangeError, "cannot make column 'v' NOT NULL"),
        (sc.update_column_nullability("k", True), SchemaChangeError, "nullability of primary-key column 'k'"),
        (sc.add_column("v", "INT"), SchemaChangeError, "column 'v' already exists"),
        (sc.add_column("n", "INT NOT NULL"), SchemaChangeError, "cannot be added as NOT NULL"),
        (sc.add_column("n", pa.int32(), nullable=False), SchemaChangeError, "cannot be added as NOT NULL"),
        (sc.add_column("_KEY_n", "INT"), SchemaChangeError, "reserved"),
        (sc.add_column("_SEQUENCE_NUMBER", "INT"), SchemaChangeError, "reserved"),
        (sc.add_column("n", "INT", after="nope"), SchemaChangeError, "column 'nope' does not exist"),
        (sc.rename_column("v", "s"), SchemaChangeError, "column 's' already exists"),
        (sc.rename_column("nope", "x"), SchemaChangeError, "column 'nope' does not exist"),
        (sc.drop_column("nope"), SchemaChangeError, "does not exist"),
        (sc.update_column_position("v", after="v"), SchemaChangeError, "relative to itself"),
        (sc.update_column_position("p", first=True), SchemaChangeError, "first already"),
        (sc.set_option("bucket", "-1"), UnsupportedError, "from one fixed count to another"),
        (sc.remove_option("bucket"), UnsupportedError, "from one fixed count to another"),
        (sc.set_option("merge-engine", "first-row"), UnsupportedError, "option 'merge-engine' cannot change"),
        (sc.set_option("sequence.field", "v"), UnsupportedError, "option 'sequence.field' cannot change"),
        (sc.set_option("deletion-vectors.enabled", "true"), UnsupportedError, "deletion vectors mode"),
        (sc.set_option("primary-key", "k"), UnsupportedError, "primary key cannot change"),
        (sc.set_option("partition", "k"), UnsupportedError, "partition keys cannot change"),
        (sc.set_option("type", "format-table"), UnsupportedError, "'type'"),
        (sc.set_option("no-such-option", "1"), InvalidOptionError, "unknown table option 'no-such-option'"),
        (sc.set_option("file.format", "csv"), InvalidOptionError, "file.format"),
        (sc.set_option("snapshot.num-retained.min", "x"), InvalidOptionError, "not an integer"),
        (sc.set_option("write-only", "yes"), InvalidOptionError, "true or false"),
        (sc.set_option("target-file-size", "big"), InvalidOptionError, "memory size"),
        (sc.set_option("snapshot.time-retained", "soon"), InvalidOptionError, "duration"),
        (sc.set_option("snapshot.time-retained", "2 h"), None, None),
    ],
)
def test_illegal_changes_are_refused_and_write_nothing(
    table: Table,
    change: sc.SchemaChange,
    error: type[Exception] | None,
    message: str | None,
) -> None:
    before = schema_files(table)
    if error is None:  # accepted (values of options lsmlake never parses are not checked)
        table.alter(change)
        return
    with pytest.raises(error, match=message):
        table.alter(sc.add_column("fine", "INT"), change)  # the whole ALTER fails, not just one change
    assert schema_files(table) == before
    assert table.latest_schema() == table.schema


def test_some_options_may_change_while_the_table_is_empty(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.e", schema=SCHEMA, primary_key=["p", "k"], options={"bucket": "2"})
    t = t.alter(sc.set_option("bucket", "3"), sc.set_option("merge-engine", "first-row"))
    assert t.options.bucket == 3 and t.options.merge_engine == "first-row"
    write(t, [{"p": 1, "k": 1, "v": 1, "s": None, "f": None, "d": None}])
    with pytest.raises(UnsupportedError, match="bucket"):
        t.alter(sc.set_option("bucket", "-2"))
    assert t.alter(sc.set_option("bucket", "4")).options.bucket == 4  # fixed to fixed: Paimon allows it


def test_final_schema_is_validated_like_create_table(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.e", schema=SCHEMA, primary_key=["p", "k"], options={"bucket": "1"})
    with pytest.raises(InvalidOptionError, match="changelog-producer"):
        t.alter(sc.set_option("merge-engine", "first-row"), sc.set_option("changelog-producer", "input"))
    with pytest.raises(InvalidOptionError, match="sequence field 'zz'"):
        t.alter(sc.set_option("sequence.field", "zz"))
    with pytest.raises(InvalidOptionError, match="field 'nope' can not be found"):
        t.alter(sc.set_option("fields.nope.aggregate-function", "sum"))
    assert schema_ids(t.io, t.root) == [0]


def test_columns_named_by_options_cannot_be_dropped_and_renames_follow(catalog: lsmlake.Catalog) -> None:
    options = {
        "bucket": "1",
        "merge-engine": "partial-update",
        "fields.v.sequence-group": "s,f",
        "fields.f.aggregate-function": "max",
        "sequence.field": "d",
    }
    t = catalog.create_table("db.pu", schema=SCHEMA, primary_key=["p", "k"], options=options)
    for column in ("v", "s", "f", "d"):
        with pytest.raises(SchemaChangeError, match=f"cannot drop column '{column}'"):
            t.alter(sc.drop_column(column))
    t = t.alter(sc.rename_column("v", "version"), sc.rename_column("f", "fmax"), sc.rename_column("d", "seq"))
    assert dict(t.schema.options) == {
        "bucket": "1",
        "merge-engine": "partial-update",
        "fields.version.sequence-group": "s,fmax",
        "fields.fmax.aggregate-function": "max",
        "sequence.field": "seq",
    }


def test_bucket_key_column_of_an_append_table(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("a", pa.int32()), ("b", pa.string())])
    t = catalog.create_table("db.ap", schema=schema, options={"bucket": "2", "bucket-key": "a"})
    with pytest.raises(SchemaChangeError, match="bucket-key column 'a'"):
        t.alter(sc.update_column_type("a", "BIGINT"))
    t = t.alter(sc.rename_column("a", "aa"))
    assert t.schema.options["bucket-key"] == "aa"


def test_types_and_change_objects_are_checked() -> None:
    with pytest.raises(ValueError, match="cannot parse type"):
        sc.add_column("x", "NOT A TYPE")
    with pytest.raises(ValueError, match="at most one"):
        sc.add_column("x", "INT", first=True, after="y")
    with pytest.raises(ValueError, match="needs one of"):
        sc.update_column_position("x")
    with pytest.raises(TypeError, match="expected a column type"):
        sc.add_column("x", 42)  # type: ignore[arg-type]
    assert sc.add_column("x", "ARRAY<BIGINT>").type.element is not None
    assert sc.update_column_type("x", "BIGINT NOT NULL").keep_nullability is False


def test_non_change_arguments_are_rejected(table: Table) -> None:
    with pytest.raises(TypeError, match="expected schema changes"):
        table.alter("ADD COLUMN x INT")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- concurrent ALTERs


def _race(table: Table, other: sc.SchemaChange) -> None:
    """Make the next schema write of ``table.io`` lose against ``other``, committed just before it."""
    io = table.io
    original = io.write_if_absent
    fired = []

    def racing(path: str, data: bytes) -> bool:
        if not fired and "/schema/schema-" in path:
            fired.append(path)
            sc.commit_changes(io, table.root, [other])
        return original(path, data)

    io.write_if_absent = racing  # type: ignore[method-assign]


def test_losing_the_race_retries_on_the_new_schema(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.r", schema=SCHEMA, primary_key=["p", "k"], options={"bucket": "1"})
    _race(t, sc.add_column("theirs", "INT"))
    mine = t.alter(sc.add_column("mine", "INT"))
    assert mine.schema.id == 2 and mine.schema.field_names[-2:] == ["theirs", "mine"]
    assert (mine.schema.field("theirs").id, mine.schema.field("mine").id) == (6, 7)


def test_losing_the_race_when_the_change_no_longer_applies(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.r", schema=SCHEMA, primary_key=["p", "k"], options={"bucket": "1"})
    _race(t, sc.drop_column("v"))
    with pytest.raises(CommitConflictError, match="concurrent ALTER committed schema-1 first"):
        t.alter(sc.rename_column("v", "w"))
    assert schema_ids(t.io, t.root) == [0, 1]


def test_many_concurrent_alters_all_land_with_unique_ids(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.r", schema=SCHEMA, primary_key=["p", "k"], options={"bucket": "1"})
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def add(i: int) -> None:
        try:
            barrier.wait()
            lsmlake.Catalog(catalog.warehouse).alter_table("db.r", sc.add_column(f"c{i}", "INT"))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    latest = t.latest_schema()
    assert latest.id == 8 and schema_ids(t.io, t.root) == list(range(9))
    added = [f for f in latest.fields if f.name.startswith("c")]
    assert sorted(f.name for f in added) == [f"c{i}" for i in range(8)]
    assert sorted(f.id for f in added) == list(range(6, 14)) and latest.highest_field_id == 13


# --------------------------------------------------------------------------- table rename


def test_rename_table_moves_the_directory(catalog: lsmlake.Catalog, table: Table) -> None:
    catalog.create_database("other")
    catalog.rename_table("db.t", "other.t2")
    assert not catalog.table_exists("db.t") and catalog.list_tables("other") == ["t2"]
    moved = catalog.get_table("other.t2")
    assert isinstance(moved, Table) and len(moved.read()) == 6
    write(moved, [{"p": 2, "k": 1, "v": 1, "s": "x", "f": 1.0, "d": None}])
    assert len(moved.read()) == 7
    with pytest.raises(NoSuchTableError):
        catalog.rename_table("db.t", "db.t3")
    catalog.create_table("db.t3", schema=SCHEMA, primary_key=["p", "k"], options={"bucket": "1"})
    with pytest.raises(AlreadyExistsError):
        catalog.rename_table("other.t2", "db.t3")


def test_rename_table_refuses_absolute_paths_into_it(
    catalog: lsmlake.Catalog, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsmlake.schema_change import manager

    inside = f"file:{table.root}/p=1/bucket-0/data-1.parquet"
    monkeypatch.setattr(manager, "external_paths", lambda io, root: [inside])
    with pytest.raises(UnsupportedError, match="absolute file paths inside it"):
        catalog.rename_table("db.t", "db.t2")
    assert catalog.table_exists("db.t")
    monkeypatch.undo()
    assert manager.external_paths(table.io, table.root) == []


def test_rename_table_keeps_files_under_external_roots(catalog: lsmlake.Catalog, tmp_path: Path) -> None:
    """Files under a `data-file.external-paths` root outside the table stay there (as in Java)."""
    ext = tmp_path / "ext"
    t = catalog.create_table(
        "db.x",
        schema=SCHEMA,
        primary_key=["p", "k"],
        options={
            "bucket": "1",
            "data-file.external-paths": f"file://{ext}",
            "data-file.external-paths.strategy": "round-robin",
        },
    )
    write(t, [{"p": 1, "k": 1, "v": 1, "s": "x", "f": 1.0, "d": None}])
    catalog.rename_table("db.x", "db.y")
    assert len(catalog.get_table("db.y").read()) == 1 and any(ext.rglob("data-*"))


# --------------------------------------------------------------------------- stale schemas


def test_compaction_by_a_stale_table_keeps_columns_added_since(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([pa.field("k", pa.int32(), False), ("v", pa.int32())])
    stale = catalog.create_table("db.st", schema=schema, primary_key=["k"], options={"bucket": "1"})
    stale.write(pa.table({"k": [1], "v": [1]}, schema=arrow_schema(stale)))
    fresh = stale.alter(sc.add_column("n", "STRING"))
    fresh.write(pa.table({"k": [2], "v": [2], "n": ["keep me"]}, schema=arrow_schema(fresh)))
    stale.compact(full=True)
    assert {r["k"]: r["n"] for r in fresh.read().to_pylist()} == {1: None, 2: "keep me"}


def test_recreated_table_does_not_reuse_cached_schemas_of_the_dropped_one(catalog: lsmlake.Catalog) -> None:
    def cycle(columns: list[str]) -> list[dict[str, Any]]:
        schema = pa.schema([pa.field("k", pa.int32(), False)] + [(c, pa.int32()) for c in columns])
        t = catalog.create_table("db.rc", schema=schema, primary_key=["k"], options={"bucket": "1"})
        t.write(pa.table({"k": [1], **{c: [5] for c in columns}}, schema=schema))
        return t.alter(sc.add_column("z", "INT")).read().to_pylist()

    assert cycle(["a"]) == [{"k": 1, "a": 5, "z": None}]
    catalog.drop_table("db.rc")
    assert cycle(["b", "c"]) == [{"k": 1, "b": 5, "c": 5, "z": None}]
