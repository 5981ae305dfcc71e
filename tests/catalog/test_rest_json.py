"""The REST catalog client's pure parts: Paimon's JSON for schema changes, the schema a GetTableResponse
gives, partition statistics of a commit, and HTTP errors as lsmlake errors (the server tests are in
tests/java/test_java_rest_catalog.py)."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator

import pytest

from lsmlake import schema_change as sc
from lsmlake.core.binary_row import serialize_row
from lsmlake.core.types import parse_sql_type
from lsmlake.errors import (
    AlreadyExistsError,
    LsmlakeError,
    MetastoreError,
    NoSuchDatabaseError,
    NoSuchResourceError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchTagError,
    NotAuthorizedError,
    UnsupportedError,
)
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.manifest import FileKind, ManifestEntry
from lsmlake.metadata.stats import SimpleStats
from lsmlake.metastore.rest_client import http_error
from lsmlake.metastore.rest_env import RestPaths
from lsmlake.metastore.rest_json import change_json, table_response
from lsmlake.metastore.rest_stats import PartitionNaming, partition_statistics

DATE, STRING = parse_sql_type("DATE"), parse_sql_type("STRING")


def test_schema_changes_as_paimon_names_them() -> None:
    assert change_json(sc.add_column("n", "INT", comment="c", after="id")) == {
        "action": "addColumn",
        "fieldNames": ["n"],
        "dataType": "INT",
        "comment": "c",
        "move": {"fieldName": "n", "referenceFieldName": "id", "type": "AFTER"},
    }
    assert change_json(sc.rename_column("v", "w")) == {
        "action": "renameColumn",
        "fieldNames": ["v"],
        "newName": "w",
    }
    assert change_json(sc.update_column_type("n", "BIGINT")) == {
        "action": "updateColumnType",
        "fieldNames": ["n"],
        "newDataType": "BIGINT",
        "keepNullability": True,
    }
    assert change_json(sc.update_column_position("n", first=True)) == {
        "action": "updateColumnPosition",
        "move": {"fieldName": "n", "referenceFieldName": None, "type": "FIRST"},
    }
    assert change_json(sc.remove_option("k")) == {"action": "removeOption", "key": "k"}
    assert change_json(sc.drop_column("n"))["action"] == "dropColumn"


def test_a_table_response_gives_its_schema_without_the_path_option() -> None:
    response = {
        "id": "uuid-1",
        "path": "file:/wh/db.db/t",
        "schemaId": 3,
        "schema": {
            "fields": [
                {"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
                {
                    "id": 1,
                    "name": "r",
                    "type": {"type": "ROW", "fields": [{"id": 7, "name": "a", "type": "INT"}]},
                },
            ],
            "partitionKeys": [],
            "primaryKeys": ["id"],
            "options": {"bucket": "1", "path": "file:/wh/db.db/t"},
            "comment": None,
        },
    }
    table_id, path, schema = table_response(response, name="db.t")
    assert (table_id, path, schema.id) == ("uuid-1", "file:/wh/db.db/t", 3)
    assert dict(schema.options) == {"bucket": "1"} and schema.primary_keys == ("id",)
    assert schema.highest_field_id == 7  # the nested field's id, not the column count
    with pytest.raises(MetastoreError, match="malformed"):
        table_response({"id": "x"}, name="db.t")


def _entry(kind: FileKind, partition: bytes, rows: int, size: int, created: int) -> ManifestEntry:
    stats = SimpleStats(b"", b"", None)
    f = DataFileMeta(
        f"f-{rows}-{size}", size, rows, b"", b"", stats, stats, 0, 0, 0, 0, creation_time_millis=created
    )
    return ManifestEntry(kind, partition, 0, 2, f)


@pytest.fixture
def shanghai_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The local time zone is UTC+8 (no daylight saving) for the test."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_partition_statistics_of_a_delta(shanghai_time: None) -> None:
    naming = PartitionNaming(("d", "s"), (DATE, STRING), "__DEFAULT_PARTITION__", legacy=True)
    p1 = serialize_row([dt.date(1970, 1, 11), "x"], [DATE, STRING])
    p2 = serialize_row([dt.date(2024, 1, 1), None], [DATE, STRING])
    delta = [
        _entry(FileKind.ADD, p1, 10, 100, 5_000),
        _entry(FileKind.ADD, p1, 3, 30, 9_000),
        _entry(FileKind.DELETE, p1, 4, 40, 1_000),
        _entry(FileKind.ADD, p2, 1, 7, 2_000),
    ]
    stats = {tuple(s["spec"].items()): s for s in partition_statistics(delta, naming)}
    first = stats[(("d", "10"), ("s", "x"))]  # legacy partition names: a DATE is its day number
    assert (first["recordCount"], first["fileSizeInBytes"], first["fileCount"]) == (9, 90, 1)
    # the newest file's _CREATION_TIME (local wall clock 00:00:09, all kinds, as PartitionEntry.merge)
    # as epoch millis read in the local time zone, UTC+8: 8 hours earlier
    eight_hours = 8 * 3600 * 1000
    assert first["totalBuckets"] == 2 and first["lastFileCreationTime"] == 9_000 - eight_hours
    second = stats[(("d", "19723"), ("s", "__DEFAULT_PARTITION__"))]
    assert (second["recordCount"], second["fileCount"]) == (1, 1)
    assert second["lastFileCreationTime"] == 2_000 - eight_hours
    modern = PartitionNaming(("d", "s"), (DATE, STRING), "__DEFAULT_PARTITION__", legacy=False)
    assert modern.spec(p2) == {"d": "2024-01-01", "s": "__DEFAULT_PARTITION__"}
    assert partition_statistics(delta[:1], PartitionNaming())[0]["spec"] == {}


def test_http_errors_become_lsmlake_errors() -> None:
    body = '{"resourceType": "DATABASE", "resourceName": "d", "message": "Database d does not exist.", "code": 404}'
    error = http_error(404, body, "GET", "/v1/databases/d", "database d")
    assert isinstance(error, NoSuchDatabaseError) and str(error).startswith("database d does not exist")
    error = http_error(
        404, '{"resourceType": "TABLE", "resourceName": "t", "message": "m"}', "GET", "/p", "table db.t"
    )
    assert isinstance(error, NoSuchTableError) and str(error).startswith("table db.t does not exist")
    assert isinstance(http_error(404, "", "GET", "/p", "table db.t"), NoSuchTableError)
    error = http_error(
        409, '{"resourceType": "TABLE", "resourceName": "t", "message": "m"}', "POST", "/p", "x"
    )
    assert isinstance(error, AlreadyExistsError) and "table t already exists" in str(error)
    assert isinstance(http_error(401, "", "GET", "/v1/config", ""), NotAuthorizedError)
    assert "'token'" in str(http_error(403, '{"message": "no"}', "GET", "/p", ""))
    assert isinstance(http_error(501, "", "POST", "/p", ""), UnsupportedError)
    error = http_error(500, "boom", "POST", "/p", "")
    assert isinstance(error, MetastoreError) and "HTTP 500" in str(error) and "boom" in str(error)


def test_a_404_names_the_missing_resource() -> None:
    def not_found(resource: str, name: str, what: str = "table db.t") -> LsmlakeError:
        body = json.dumps({"resourceType": resource, "resourceName": name, "message": "m", "code": 404})
        return http_error(404, body, "GET", "/p", what)

    error = not_found("TAG", "t1")
    assert type(error) is NoSuchTagError and str(error).startswith("tag t1 of table db.t does not exist")
    error = not_found("BRANCH", "b")
    assert type(error) is NoSuchTableError and str(error).startswith("branch b of table db.t does not exist")
    error = not_found("SNAPSHOT", "7")
    assert type(error) is NoSuchSnapshotError
    assert str(error).startswith("snapshot 7 of table db.t does not exist")
    error = not_found("VIEW", "v", what="database db")
    assert type(error) is NoSuchResourceError and str(error).startswith("view v does not exist")
    error = http_error(404, "", "GET", "/v1/config", "warehouse 'w'")
    assert type(error) is NoSuchResourceError and str(error).startswith("warehouse 'w' does not exist")
    error = http_error(404, "", "GET", "/v1/x", "")
    assert type(error) is NoSuchResourceError and "the resource of GET /v1/x does not exist" in str(error)


def test_resource_paths_encode_names_as_java_does() -> None:
    paths = RestPaths("my prefix")
    assert paths.table("d b", "t/1") == "/v1/my+prefix/databases/d+b/tables/t%2F1"
    assert paths.commit("db", "t") == "/v1/my+prefix/databases/db/tables/t/commit"
    assert RestPaths().databases() == "/v1/databases" and RestPaths().rename_table() == "/v1/tables/rename"
