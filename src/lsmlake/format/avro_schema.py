"""Paimon row types as the Avro schemas of ``file.format=avro`` data files, spelled as Java Paimon's
AvroSchemaConverter spells them, and the Avro codec Paimon's AvroFileFormat picks from the options."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from lsmlake.core.format_types import avro_refusal
from lsmlake.core.types import DataField, DataType
from lsmlake.errors import InvalidOptionError, SchemaMismatchError

RECORD_NAMESPACE = "org.apache.paimon.avro.generated"
RECORD_NAME = "record"
# Avro names (records and fields): Java's SchemaBuilder refuses anything else.
_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PRIMITIVES = {
    "BOOLEAN": "boolean",
    "TINYINT": "int",
    "SMALLINT": "int",
    "INT": "int",
    "BIGINT": "long",
    "FLOAT": "float",
    "DOUBLE": "double",
    "CHAR": "string",
    "VARCHAR": "string",
    "BINARY": "bytes",
    "VARBINARY": "bytes",
    "BLOB": "bytes",
}
# Avro codec names Java's CodecFactory.fromString knows (case-sensitive, as there).
AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")


def _nullable(schema: Any, t: DataType) -> Any:
    return ["null", schema] if t.nullable else schema


def _timestamp_logical(t: DataType, *, local: bool) -> str:
    unit = "millis" if (6 if t.precision is None else t.precision) <= 3 else "micros"
    return f"local-timestamp-{unit}" if local else f"timestamp-{unit}"


def avro_type(t: DataType, row_name: str) -> Any:
    """The Avro schema of one Paimon type; ``row_name`` names a ROW's record (nested ones get ``_<field>``)."""
    reason = avro_refusal(t)
    if reason is not None:
        raise SchemaMismatchError(reason)
    root = t.root
    schema: Any
    if root in _PRIMITIVES:
        schema = _PRIMITIVES[root]
    elif root == "TIMESTAMP":
        schema = {"type": "long", "logicalType": _timestamp_logical(t, local=False)}
    elif root == "TIMESTAMP_LTZ":
        schema = {"type": "long", "logicalType": _timestamp_logical(t, local=True)}
    elif root == "DATE":
        schema = {"type": "int", "logicalType": "date"}
    elif root == "TIME":
        schema = {"type": "int", "logicalType": "time-millis"}
    elif root == "DECIMAL":
        schema = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif root == "ROW":
        schema = record_schema(t.fields, row_name)
    elif root == "ARRAY":
        assert t.element is not None
        schema = {"type": "array", "items": avro_type(t.element, row_name)}
    elif root == "MAP":
        assert t.key is not None and t.value is not None
        if t.key.is_string:
            schema = {"type": "map", "values": avro_type(t.value, row_name)}
        else:  # Avro maps have string keys only: an array of key/value records, tagged as a map
            entry = {
                "type": "record",
                "name": _short(row_name),
                "fields": [
                    {"name": "key", "type": avro_type(t.key, row_name + "_key")},
                    _field("value", avro_type(t.value, row_name + "_value"), t.value),
                ],
            }
            schema = {"type": "array", "items": entry, "logicalType": "map"}
    else:
        raise SchemaMismatchError(f"Avro data files cannot hold type {t}")
    return _nullable(schema, t)


def _short(row_name: str) -> str:
    """A nested record's name inside the top-level namespace (Java prints it without the namespace)."""
    return row_name.rsplit(".", 1)[-1]


def _field(name: str, schema: Any, t: DataType) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": schema}
    if t.nullable:
        out["default"] = None
    return out


def record_schema(fields: Sequence[DataField], row_name: str) -> dict[str, Any]:
    """An Avro record of ``fields``; field names must be Avro names (Java's writer refuses others)."""
    out = []
    for f in fields:
        if not _AVRO_NAME.match(f.name):
            raise SchemaMismatchError(
                f"column {f.name!r} is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*): file.format=avro cannot hold it"
            )
        out.append(_field(f.name, avro_type(f.type, f"{row_name}_{f.name}"), f.type))
    record: dict[str, Any] = {"type": "record", "name": _short(row_name)}
    if row_name == f"{RECORD_NAMESPACE}.{RECORD_NAME}":
        record["namespace"] = RECORD_NAMESPACE
    record["fields"] = out
    return record


def data_file_schema(fields: Sequence[DataField]) -> dict[str, Any]:
    """The Avro schema of a data file whose columns are ``fields`` (Java's record name and namespace)."""
    return record_schema(fields, f"{RECORD_NAMESPACE}.{RECORD_NAME}")


def avro_codec(*, compression: str, avro_codec_option: str | None, zstd_level: int) -> tuple[str, int | None]:
    """The codec (and level) Java's AvroFileFormat writes with: ``avro.codec`` when set, else zstandard
    at ``file.compression.zstd-level`` for ``zstd``, else the compression name itself as an Avro codec."""
    if avro_codec_option is not None:
        name, level = avro_codec_option, None
        what = f"option 'avro.codec'={avro_codec_option!r}"
    elif compression.lower() == "zstd":
        return "zstandard", zstd_level
    else:
        name, level = compression, None
        what = f"option 'file.compression'={compression!r}"
    if name == "zstandard":
        level = 3  # Avro's CodecFactory default level for a named zstandard codec
    if name not in AVRO_CODECS:
        raise InvalidOptionError(
            f"{what} is not an Avro codec for file.format=avro (one of {', '.join(AVRO_CODECS)}, or zstd)"
        )
    return name, level
