"""The JSON of Paimon's REST catalog API that lsmlake sends and reads: identifiers, schemas, schema changes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lsmlake.core.schema import CURRENT_VERSION, TableSchema, schema_from_json, schema_to_json
from lsmlake.core.types import DataField, DataType, type_to_json
from lsmlake.errors import MetastoreError, UnsupportedError
from lsmlake.schema_change import (
    AddColumn,
    DropColumn,
    Move,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
)

PATH_OPTION = "path"


def identifier(database: str, table: str) -> dict[str, str]:
    """Paimon's Identifier as Jackson writes it."""
    return {"database": database, "object": table}


def schema_request(schema: TableSchema) -> dict[str, Any]:
    """Paimon's ``Schema`` (CreateTableRequest.schema): fields with their ids, keys, options, comment."""
    full = schema_to_json(schema)
    return {
        "fields": full["fields"],
        "partitionKeys": full["partitionKeys"],
        "primaryKeys": full["primaryKeys"],
        "options": full["options"],
        "comment": schema.comment,
    }


def _highest_id(fields: Iterable[DataField]) -> int:
    highest = -1
    for f in fields:
        highest = max(highest, f.id, _highest_in_type(f.type))
    return highest


def _highest_in_type(t: DataType | None) -> int:
    if t is None:
        return -1
    return max(
        _highest_id(t.fields), _highest_in_type(t.element), _highest_in_type(t.key), _highest_in_type(t.value)
    )


def table_response(response: Any, *, name: str) -> tuple[str, str, TableSchema]:
    """A GetTableResponse's (id, path, schema): the schema of id ``schemaId``, without the ``path``
    option, its highest field id the highest one its (nested) fields use, as Java's RESTCatalog builds it."""
    if not isinstance(response, Mapping):
        raise MetastoreError(f"REST catalog: table {name}: the answer is not a JSON object: {response!r}")
    try:
        schema = dict(response["schema"])
        options = {str(k): str(v) for k, v in (schema.get("options") or {}).items() if k != PATH_OPTION}
        path = str(response["path"])
        table_id = str(response["id"])
        schema_id = int(response["schemaId"])
    except (KeyError, TypeError, ValueError) as e:
        raise MetastoreError(f"REST catalog: table {name}: malformed answer ({e}): {response!r}") from None
    obj = {**schema, "version": CURRENT_VERSION, "id": schema_id, "highestFieldId": 0, "options": options}
    parsed = schema_from_json(obj, name=f"the REST catalog's schema of {name}")
    highest = _highest_id(parsed.fields)
    return table_id, path, schema_from_json({**obj, "highestFieldId": highest}, name=name)


def _move(column: str, move: Move) -> dict[str, Any]:
    return {"fieldName": column, "referenceFieldName": move.reference, "type": move.kind.upper()}


def change_json(change: SchemaChange) -> dict[str, Any]:
    """One schema change as Paimon's SchemaChange JSON (``action`` names its kind)."""
    if isinstance(change, SetOption):
        return {"action": "setOption", "key": change.key, "value": change.value}
    if isinstance(change, RemoveOption):
        return {"action": "removeOption", "key": change.key}
    if isinstance(change, UpdateComment):
        return {"action": "updateComment", "comment": change.comment}
    if isinstance(change, AddColumn):
        return {
            "action": "addColumn",
            "fieldNames": [change.name],
            "dataType": type_to_json(change.type),
            "comment": change.comment,
            "move": None if change.move is None else _move(change.name, change.move),
        }
    if isinstance(change, RenameColumn):
        return {"action": "renameColumn", "fieldNames": [change.name], "newName": change.new_name}
    if isinstance(change, DropColumn):
        return {"action": "dropColumn", "fieldNames": [change.name]}
    if isinstance(change, UpdateColumnType):
        return {
            "action": "updateColumnType",
            "fieldNames": [change.name],
            "newDataType": type_to_json(change.type),
            "keepNullability": change.keep_nullability,
        }
    if isinstance(change, UpdateColumnNullability):
        return {
            "action": "updateColumnNullability",
            "fieldNames": [change.name],
            "newNullability": change.nullable,
        }
    if isinstance(change, UpdateColumnComment):
        return {"action": "updateColumnComment", "fieldNames": [change.name], "newComment": change.comment}
    if isinstance(change, UpdateColumnPosition):
        return {"action": "updateColumnPosition", "move": _move(change.name, change.move)}
    raise UnsupportedError(f"the REST catalog client cannot send the schema change {change!r}")
