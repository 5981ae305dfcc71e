"""A table whose stored options were set outside lsmlake (by Java, or an older lsmlake that accepted them):
reads fail naming an option that changes what a reader must return, writes, compactions and commits fail
before anything is written naming one that changes what a writer must do, and harmless ones change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import InvalidOptionError, UnsupportedError

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])
ROWS = [{"id": 1, "v": 10}, {"id": 2, "v": 20}]


def _java_table(tmp_path: Path, stored: dict[str, str], *, bucket: str = "1") -> lsmlake.Table:
    """A table holding ROWS whose schema file then gains ``stored`` options, as a Java DDL would store them."""
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": bucket})
    table.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    if bucket == "-2":
        table.compact()
    path = Path(table.root) / "schema" / "schema-0"
    doc = json.loads(path.read_text())
    doc["options"].update(stored)
    path.write_text(json.dumps(doc, indent=2))
    lsmlake.clear_caches()
    return lsmlake.Catalog(str(tmp_path / "wh")).get_table("db.t")


def _files(table: lsmlake.Table) -> set[Path]:
    return {p for p in Path(table.root).rglob("*") if p.is_file()}


def _rows(table: lsmlake.Table) -> list[dict[str, object]]:
    return table.read().sort_by("id").to_pylist()


WRITE_SIDE = {
    "manifest.format": "orc",  # Java reads the manifests in this format: Avro ones would break it
    "commit.callbacks": "com.example.Callback",
    "metastore.partitioned-table": "true",
    "lookup.remote-file.enabled": "true",
}


@pytest.mark.parametrize(("key", "value"), sorted(WRITE_SIDE.items()))
def test_a_write_side_option_reads_but_refuses_every_write(tmp_path: Path, key: str, value: str) -> None:
    table = _java_table(tmp_path, {key: value})
    assert _rows(table) == ROWS
    before = _files(table)
    for verb in (
        lambda: table.write(pa.Table.from_pylist([{"id": 3, "v": 30}], schema=SCHEMA)),
        lambda: table.delete("id = 1"),
        lambda: table.compact(full=True),
        lambda: table.truncate(),
    ):
        with pytest.raises(UnsupportedError, match=rf"cannot write it: stored option '{key}'"):
            verb()
    assert _files(table) == before  # nothing written
    assert _rows(table) == ROWS


def test_stored_per_level_per_column_and_external_path_options_are_honoured(tmp_path: Path) -> None:
    """Options lsmlake once refused and now honours, stored by Java: writes follow them."""
    ext = tmp_path / "ext"
    stored = {
        "file.format.per.level": "0:avro",
        "fields.v.stats-mode": "none",
        "data-file.external-paths": f"file://{ext}",
        "data-file.external-paths.strategy": "round-robin",
    }
    table = _java_table(tmp_path, stored)
    table.write(pa.Table.from_pylist([{"id": 3, "v": 30}], schema=SCHEMA))
    new = [f for s in table.scan().splits() for f in s.files if f.external_path is not None]
    assert len(new) == 1 and new[0].file_name.endswith(".avro") and new[0].level == 0
    assert new[0].value_stats_cols == ("id",)  # v: its own mode none
    assert list(ext.rglob(new[0].file_name))
    assert _rows(table) == [*ROWS, {"id": 3, "v": 30}]


READ_SIDE = {
    "chain-table.enabled": "true",
    "query-auth.enabled": "true",
    "scan.file-creation-time-millis": "1700000000000",
    "type": "format-table",
    "pk-clustering-override": "true",
    "data-evolution.enabled": "true",
}


@pytest.mark.parametrize(("key", "value"), sorted(READ_SIDE.items()))
def test_a_read_side_option_refuses_reads_and_writes(tmp_path: Path, key: str, value: str) -> None:
    table = _java_table(tmp_path, {key: value})
    with pytest.raises(UnsupportedError, match=rf"cannot read it: stored option '{key}'"):
        table.read()
    with pytest.raises(UnsupportedError, match=rf"stored option '{key}'"):
        table.lookup(pa.table({"id": pa.array([1], pa.int32())}))
    with pytest.raises(UnsupportedError, match=rf"stored option '{key}'"):
        table.with_options({"incremental-between": "0,1"}).read()
    with pytest.raises(UnsupportedError, match=rf"cannot write it: stored option '{key}'"):
        table.write(pa.Table.from_pylist([{"id": 3, "v": 30}], schema=SCHEMA))


HARMLESS = {
    "branch": "main",
    "type": "table",
    "commit.force-compact": "true",  # lsmlake's writes always wait for their compaction
    "chain-table.enabled": "false",
    "scan.ignore-lost-files": "true",
    "materialized-table.refresh-status": "ACTIVATED",
    "deletion-vectors.modifiable": "true",
    "partition.mark-done-action": "done-partition",  # asks something only of a write that marks partitions done
    "sort-engine": "min-heap",
    "snapshot.ignore-empty-commit": "true",
    "some.custom.property": "x",  # Paimon keeps properties it does not know
}


def test_harmless_options_change_nothing(tmp_path: Path) -> None:
    table = _java_table(tmp_path, HARMLESS)
    assert _rows(table) == ROWS
    table.write(pa.Table.from_pylist([{"id": 3, "v": 30}], schema=SCHEMA))
    table.compact(full=True)
    assert _rows(table) == [*ROWS, {"id": 3, "v": 30}]


def test_a_malformed_stored_value_refuses_writes_naming_it(tmp_path: Path) -> None:
    table = _java_table(tmp_path, {"write-only": "maybe"})
    with pytest.raises(InvalidOptionError, match=r"cannot write it: .*write-only"):
        table.write(pa.Table.from_pylist([{"id": 3, "v": 30}], schema=SCHEMA))


def test_a_refused_combination_refuses_writes(tmp_path: Path) -> None:
    table = _java_table(
        tmp_path, {"changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"}
    )
    with pytest.raises(InvalidOptionError, match=r"cannot write it: Deletion vectors mode"):
        table.write(pa.Table.from_pylist([{"id": 3, "v": 30}], schema=SCHEMA))


def test_mark_partitions_done_refuses_an_action_lsmlake_lacks(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([*SCHEMA, pa.field("dt", pa.string())])
    table = catalog.create_table("db.t", schema=schema, primary_key=["id", "dt"], partition_keys=["dt"])
    table.write(pa.table({"id": pa.array([1], pa.int32()), "v": [1], "dt": ["a"]}))
    path = Path(table.root) / "schema" / "schema-0"
    doc = json.loads(path.read_text())
    doc["options"]["partition.mark-done-action"] = "success-file,done-partition"
    path.write_text(json.dumps(doc))
    lsmlake.clear_caches()
    table = catalog.get_table("db.t")
    with pytest.raises(UnsupportedError, match=r"partition\.mark-done-action"):
        table.mark_partitions_done({"dt": "a"})
    assert not list(Path(table.root).rglob("_SUCCESS"))


def test_postpone_merge_on_read_refuses_batch_reads_of_a_postpone_table(tmp_path: Path) -> None:
    table = _java_table(tmp_path, {"postpone.merge-on-read": "true"}, bucket="-2")
    table.write(
        pa.Table.from_pylist([{"id": 1, "v": 11}], schema=SCHEMA)
    )  # postponed: Java's read shows v=11
    with pytest.raises(UnsupportedError, match=r"cannot read it: option 'postpone.merge-on-read'=true"):
        table.read()
    with pytest.raises(UnsupportedError, match=r"postpone\.merge-on-read"):
        table.with_options({"postpone.merge-on-read": "true"})
    table.compact()
    assert table.with_options({"postpone.merge-on-read": "false"}).read().sort_by("id").to_pylist() == [
        {"id": 1, "v": 11},
        {"id": 2, "v": 20},
    ]


def test_postpone_merge_on_read_true_is_refused_at_create(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    with pytest.raises(UnsupportedError, match=r"postpone\.merge-on-read"):
        catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["id"],
            options={"bucket": "-2", "postpone.merge-on-read": "true"},
        )
