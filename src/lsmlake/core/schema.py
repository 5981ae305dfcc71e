"""Table schema files (`schema/schema-<id>`): the TableSchema model and its Java-compatible JSON."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.core.types import (
    DataField,
    DataType,
    field_from_json,
    field_to_json,
    json_text,
    to_arrow_field,
    type_from_json,
)
from lsmlake.errors import CorruptFileError, UnsupportedError

CURRENT_VERSION = 3
PAIMON_07_VERSION = 1
PAIMON_08_VERSION = 2
SCHEMA_PREFIX = "schema-"


def schema_file_name(schema_id: int) -> str:
    """The file name of schema ``schema_id`` inside ``<table>/schema/``."""
    return f"{SCHEMA_PREFIX}{schema_id}"


def _frozen(options: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(options or {}))


@dataclass(frozen=True, eq=False, kw_only=True)
class TableSchema:
    """One immutable version of a table's schema (api:`schema/TableSchema.java`)."""

    version: int = CURRENT_VERSION
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    comment: str | None = None
    time_millis: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "partition_keys", tuple(self.partition_keys))
        object.__setattr__(self, "primary_keys", tuple(self.primary_keys))
        if not isinstance(self.options, MappingProxyType):
            object.__setattr__(self, "options", _frozen(self.options))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TableSchema):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (
            self.version,
            self.id,
            self.fields,
            self.highest_field_id,
            self.partition_keys,
            self.primary_keys,
            tuple(self.options.items()),
            self.comment,
            self.time_millis,
        )

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        """The top-level field called ``name`` (KeyError if there is none)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no field {name!r} in schema {self.id} (fields: {self.field_names})")

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """Primary keys minus partition keys, in primary-key order."""
        if not self.primary_keys:
            return []
        trimmed = [k for k in self.primary_keys if k not in self.partition_keys]
        if not trimmed:
            raise ValueError(
                f"primary key {list(self.primary_keys)} must not equal partition keys "
                f"{list(self.partition_keys)}"
            )
        return trimmed

    @property
    def bucket_keys(self) -> list[str]:
        """Option ``bucket-key`` (comma separated) when set, else the trimmed primary keys."""
        raw = self.options.get(CoreOptions.BUCKET_KEY.key)
        if raw is not None and raw.strip():
            return raw.split(",")
        return self.trimmed_primary_keys

    @property
    def effective_options(self) -> dict[str, str]:
        """Options with the legacy defaults Java injects for old schema versions (bucket=1, orc)."""
        out = dict(self.options)
        if self.version <= PAIMON_07_VERSION and CoreOptions.BUCKET.key not in out:
            out[CoreOptions.BUCKET.key] = "1"
        if self.version <= PAIMON_08_VERSION and CoreOptions.FILE_FORMAT.key not in out:
            out[CoreOptions.FILE_FORMAT.key] = "orc"
        return out

    def logical_arrow_schema(self) -> pa.Schema:
        """The table's columns as an Arrow schema (field ids kept as Parquet field-id metadata)."""
        for f in self.fields:
            if f.type.root == "VECTOR":
                raise UnsupportedError(f"column {f.name!r} has VECTOR type, which lsmlake cannot read")
        return pa.schema([to_arrow_field(f) for f in self.fields])


# --------------------------------------------------------------------------- Java-style JSON


def _java_string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            short = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}.get(o)
            out.append(short if short else f"\\u{o:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _java_value(value: Any, level: int) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return _java_string(value)
    if isinstance(value, Mapping):
        if not value:
            return "{ }"
        pad = "  " * (level + 1)
        items = [f"{pad}{_java_string(str(k))} : {_java_value(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * level + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_java_value(v, level) for v in value) + " ]"
    raise TypeError(f"cannot serialize {type(value).__name__} to JSON")


def java_pretty_json(value: Any) -> str:
    """Render JSON the way Jackson's default pretty printer does (`"k" : v`, 2-space indent)."""
    return _java_value(value, 0)


# --------------------------------------------------------------------------- codec


def _field_to_json(f: DataField) -> dict[str, Any]:
    if f.type.root != "VECTOR":
        return field_to_json(f)
    t = f.type
    assert t.element is not None
    type_json: dict[str, Any] = {
        "type": "VECTOR" + ("" if t.nullable else " NOT NULL"),
        "element": _field_to_json(DataField(0, "", t.element))["type"],
        "length": t.length,
    }
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_json}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


def _field_from_json(obj: dict[str, Any]) -> DataField:
    t = obj.get("type")
    if isinstance(t, dict) and str(t.get("type", "")).strip().upper().split(" ")[0] == "VECTOR":
        head = str(t["type"]).strip().upper()
        vector = DataType(
            "VECTOR",
            not head.endswith("NOT NULL"),
            length=int(t["length"]),
            element=type_from_json(t["element"]),
        )
        return DataField(
            int(obj["id"]),
            str(obj["name"]),
            vector,
            obj.get("description"),
            json_text(obj.get("defaultValue")),
        )
    return field_from_json(obj)


def schema_to_json(s: TableSchema) -> dict[str, Any]:
    """The schema as a JSON-ready dict with Java's key order."""
    out: dict[str, Any] = {
        "version": s.version,
        "id": s.id,
        "fields": [_field_to_json(f) for f in s.fields],
        "highestFieldId": s.highest_field_id,
        "partitionKeys": list(s.partition_keys),
        "primaryKeys": list(s.primary_keys),
        "options": dict(s.options),
    }
    if s.comment is not None:
        out["comment"] = s.comment
    out["timeMillis"] = s.time_millis
    return out


def encode_schema(s: TableSchema) -> str:
    """Serialize like Java's SchemaSerializer (pretty-printed, Java field order)."""
    return java_pretty_json(schema_to_json(s))


def schema_from_json(obj: Mapping[str, Any], *, name: str = "<schema>") -> TableSchema:
    """Build a TableSchema from parsed JSON (missing version => 1, missing timeMillis => 0)."""
    try:
        options = obj.get("options") or {}
        comment = obj.get("comment")
        return TableSchema(
            version=int(obj.get("version", PAIMON_07_VERSION)),
            id=int(obj["id"]),
            fields=tuple(_field_from_json(f) for f in obj["fields"]),
            highest_field_id=int(obj["highestFieldId"]),
            partition_keys=tuple(str(k) for k in obj.get("partitionKeys") or ()),
            primary_keys=tuple(str(k) for k in obj.get("primaryKeys") or ()),
            options={str(k): v if isinstance(v, str) else json.dumps(v) for k, v in options.items()},
            comment=None if comment is None else str(comment),
            time_millis=int(obj.get("timeMillis") or 0),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptFileError(f"malformed schema file {name}: {e}") from e


def decode_schema(text: str | bytes, *, name: str = "<schema>") -> TableSchema:
    """Parse a schema file's JSON text."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise CorruptFileError(f"schema file {name} is not valid JSON: {e}") from e
    if not isinstance(obj, dict):
        raise CorruptFileError(f"schema file {name} does not hold a JSON object")
    return schema_from_json(obj, name=name)


def read_schema(io: FileIO, path: str) -> TableSchema:
    return decode_schema(io.read_bytes(path), name=path)


def write_schema(io: FileIO, path: str, s: TableSchema) -> bool:
    """Create the schema file only if absent (schema ids are claimed atomically); True if created."""
    return io.write_if_absent(path, encode_schema(s).encode("utf-8"))
