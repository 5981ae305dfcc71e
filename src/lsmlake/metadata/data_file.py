"""DataFileMeta: what a manifest records about one data file (core:`io/DataFileMeta.java`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsmlake.metadata.stats import (
    SimpleStats,
    opt_int,
    opt_strs,
    stats_avro_schema,
    stats_from_avro,
    stats_to_avro,
)


@dataclass(frozen=True)
class DataFileMeta:
    """One data (or changelog) file of a bucket, as stored in the manifest's `_FILE` record."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_millis: int | None = None
    """Raw Avro timestamp-millis: the writer's local wall clock encoded as if it were UTC."""
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("extra_files", "value_stats_cols", "write_cols"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def upgrade(self, level: int) -> DataFileMeta:
        """The same file moved to another LSM level (a compaction upgrade, no rewrite)."""
        return dataclasses.replace(self, level=level)

    def identifier(self) -> tuple[Any, ...]:
        """File identity within a bucket: (level, name, extra files, embedded index, external path)."""
        return (self.level, self.file_name, self.extra_files, self.embedded_index, self.external_path)


def _nullable(t: Any) -> dict[str, Any]:
    return {"type": ["null", t], "default": None}


DATA_FILE_AVRO_FIELDS: list[dict[str, Any]] = [
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_MIN_KEY", "type": "bytes"},
    {"name": "_MAX_KEY", "type": "bytes"},
    {"name": "_KEY_STATS", "type": stats_avro_schema("record__FILE__KEY_STATS")},
    {"name": "_VALUE_STATS", "type": stats_avro_schema("record__FILE__VALUE_STATS")},
    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_SCHEMA_ID", "type": "long"},
    {"name": "_LEVEL", "type": "int"},
    {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
    {"name": "_CREATION_TIME", **_nullable({"type": "long", "logicalType": "timestamp-millis"})},
    {"name": "_DELETE_ROW_COUNT", **_nullable("long")},
    {"name": "_EMBEDDED_FILE_INDEX", **_nullable("bytes")},
    {"name": "_FILE_SOURCE", **_nullable("int")},
    {"name": "_VALUE_STATS_COLS", **_nullable({"type": "array", "items": "string"})},
    {"name": "_EXTERNAL_PATH", **_nullable("string")},
    {"name": "_FIRST_ROW_ID", **_nullable("long")},
    {"name": "_WRITE_COLS", **_nullable({"type": "array", "items": "string"})},
]
"""The `_FILE` record fields of the 2.0 layout (stops at `_WRITE_COLS`)."""

DATA_FILE_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__FILE",
    "fields": DATA_FILE_AVRO_FIELDS,
}


def data_file_to_avro(f: DataFileMeta) -> dict[str, Any]:
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": stats_to_avro(f.key_stats),
        "_VALUE_STATS": stats_to_avro(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time_millis,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_index,
        "_FILE_SOURCE": f.file_source,
        "_VALUE_STATS_COLS": None if f.value_stats_cols is None else list(f.value_stats_cols),
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": None if f.write_cols is None else list(f.write_cols),
    }


def data_file_from_avro(rec: Mapping[str, Any]) -> DataFileMeta:
    """Decode a `_FILE` record of any layout since 0.8 (missing trailing fields read as null)."""
    g = rec.get
    embedded = g("_EMBEDDED_FILE_INDEX")
    return DataFileMeta(
        file_name=str(rec["_FILE_NAME"]),
        file_size=int(rec["_FILE_SIZE"]),
        row_count=int(rec["_ROW_COUNT"]),
        min_key=bytes(rec["_MIN_KEY"]),
        max_key=bytes(rec["_MAX_KEY"]),
        key_stats=stats_from_avro(g("_KEY_STATS")),
        value_stats=stats_from_avro(g("_VALUE_STATS")),
        min_sequence_number=int(rec["_MIN_SEQUENCE_NUMBER"]),
        max_sequence_number=int(rec["_MAX_SEQUENCE_NUMBER"]),
        schema_id=int(rec["_SCHEMA_ID"]),
        level=int(rec["_LEVEL"]),
        extra_files=tuple(str(x) for x in g("_EXTRA_FILES") or ()),
        creation_time_millis=opt_int(g("_CREATION_TIME")),
        delete_row_count=opt_int(g("_DELETE_ROW_COUNT")),
        embedded_index=None if embedded is None else bytes(embedded),
        file_source=opt_int(g("_FILE_SOURCE")),
        value_stats_cols=opt_strs(g("_VALUE_STATS_COLS")),
        external_path=g("_EXTERNAL_PATH"),
        first_row_id=opt_int(g("_FIRST_ROW_ID")),
        write_cols=opt_strs(g("_WRITE_COLS")),
    )
