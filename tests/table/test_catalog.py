"""Catalog: databases, tables, identifiers, and the errors bad input gets (with nothing written)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import (
    AlreadyExistsError,
    InvalidIdentifierError,
    InvalidOptionError,
    NoSuchDatabaseError,
    NoSuchTableError,
    SchemaMismatchError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32())])


def test_create_list_get_drop(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    assert catalog.list_databases() == ["db"]
    assert catalog.list_tables("db") == ["t"]
    again = catalog.get_table("db.t")
    assert again.schema == t.schema
    assert [f.id for f in again.schema.fields] == [0, 1, 2]
    assert again.schema.field("id").type.nullable is False  # primary keys are NOT NULL
    assert again.schema.highest_field_id == 2
    catalog.drop_table("db.t")
    assert catalog.list_tables("db") == []
    with pytest.raises(NoSuchTableError):
        catalog.get_table("db.t")


def test_schema_file_is_java_shaped(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["id"],
        partition_keys=[],
        options={"bucket": "2", "deletion-vectors.enabled": "true"},
    )
    text = Path(t.root, "schema", "schema-0").read_text()
    assert '"version" : 3' in text and '"type" : "BIGINT NOT NULL"' in text
    assert '"primaryKeys" : [ "id" ]' in text and '"bucket" : "2"' in text


def test_existing_table(catalog: lsmlake.Catalog) -> None:
    catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    with pytest.raises(AlreadyExistsError):
        catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    assert catalog.create_table("db.t", schema=SCHEMA, exist_ok=True).primary_keys == ["id"]


@pytest.mark.parametrize(
    "identifier", ["db", "db.", ".t", "db.../x", "db.a/b", "../x.t", "db.t$x", "a.b.c", ""]
)
def test_invalid_identifiers(catalog: lsmlake.Catalog, identifier: str) -> None:
    with pytest.raises((InvalidIdentifierError, lsmlake.errors.LsmlakeError)):
        catalog.create_table(identifier, schema=SCHEMA)


def test_unknown_database(catalog: lsmlake.Catalog) -> None:
    with pytest.raises(NoSuchDatabaseError):
        catalog.create_table("nodb.t", schema=SCHEMA)
    with pytest.raises(NoSuchDatabaseError):
        catalog.list_tables("nodb")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"primary_key": ["missing"]}, SchemaMismatchError),
        ({"primary_key": ["id"], "partition_keys": ["nope"]}, SchemaMismatchError),
        ({"primary_key": ["id"], "options": {"no-such-option": "1"}}, InvalidOptionError),
        ({"primary_key": ["id"], "options": {"bucket": "0"}}, InvalidOptionError),
        ({"primary_key": ["id"], "options": {"bucket": "x"}}, InvalidOptionError),
        ({"primary_key": ["id"], "partition_keys": ["dt"], "options": {"bucket": "2"}}, InvalidOptionError),
        ({"options": {"bucket": "2"}}, InvalidOptionError),  # append table with buckets needs bucket-key
        ({"primary_key": ["id"], "options": {"merge-engine": "nope"}}, InvalidOptionError),
    ],
)
def test_bad_create_writes_nothing(catalog: lsmlake.Catalog, kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        catalog.create_table("db.t", schema=SCHEMA, **kwargs)
    assert not os.path.exists(os.path.join(catalog.root, "db.db", "t"))
