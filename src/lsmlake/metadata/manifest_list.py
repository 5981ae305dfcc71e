"""Manifest lists (`manifest/manifest-list-*`): one ManifestFileMeta per manifest file (§4.1)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lsmlake.core.caches import MB
from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import check_names
from lsmlake.errors import CorruptFileError
from lsmlake.metadata.avro_container import decode_records, encode_avro_container, java_schema_json
from lsmlake.metadata.decoded_cache import DecodedFileCache
from lsmlake.metadata.stats import SimpleStats, opt_int, stats_avro_schema, stats_from_avro, stats_to_avro

MANIFEST_LIST_VERSION = 2


@dataclass(frozen=True)
class ManifestFileMeta:
    """A manifest file's name, size, entry counts and pruning statistics."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None


def _nullable(t: str) -> dict[str, Any]:
    return {"type": ["null", t], "default": None}


MANIFEST_LIST_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": stats_avro_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_MIN_BUCKET", **_nullable("int")},
        {"name": "_MAX_BUCKET", **_nullable("int")},
        {"name": "_MIN_LEVEL", **_nullable("int")},
        {"name": "_MAX_LEVEL", **_nullable("int")},
        {"name": "_MIN_ROW_ID", **_nullable("long")},
        {"name": "_MAX_ROW_ID", **_nullable("long")},
    ],
}
MANIFEST_LIST_SCHEMA_JSON = java_schema_json(MANIFEST_LIST_AVRO_SCHEMA)
"""The writer schema text in the Avro header, byte-identical to Java 2.0's."""


def _meta_to_avro(m: ManifestFileMeta) -> dict[str, Any]:
    return {
        "_VERSION": MANIFEST_LIST_VERSION,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": m.num_added_files,
        "_NUM_DELETED_FILES": m.num_deleted_files,
        "_PARTITION_STATS": stats_to_avro(m.partition_stats),
        "_SCHEMA_ID": m.schema_id,
        "_MIN_BUCKET": m.min_bucket,
        "_MAX_BUCKET": m.max_bucket,
        "_MIN_LEVEL": m.min_level,
        "_MAX_LEVEL": m.max_level,
        "_MIN_ROW_ID": m.min_row_id,
        "_MAX_ROW_ID": m.max_row_id,
    }


def _meta_from_avro(rec: Mapping[str, Any], name: str) -> ManifestFileMeta:
    version = rec.get("_VERSION")
    if version != MANIFEST_LIST_VERSION:
        raise CorruptFileError(
            f"manifest list {name} has entry version {version}, expected {MANIFEST_LIST_VERSION}"
        )
    g = rec.get
    return ManifestFileMeta(
        file_name=str(rec["_FILE_NAME"]),
        file_size=int(rec["_FILE_SIZE"]),
        num_added_files=int(rec["_NUM_ADDED_FILES"]),
        num_deleted_files=int(rec["_NUM_DELETED_FILES"]),
        partition_stats=stats_from_avro(g("_PARTITION_STATS")),
        schema_id=int(rec["_SCHEMA_ID"]),
        min_bucket=opt_int(g("_MIN_BUCKET")),
        max_bucket=opt_int(g("_MAX_BUCKET")),
        min_level=opt_int(g("_MIN_LEVEL")),
        max_level=opt_int(g("_MAX_LEVEL")),
        min_row_id=opt_int(g("_MIN_ROW_ID")),
        max_row_id=opt_int(g("_MAX_ROW_ID")),
    )


def encode_manifest_list(
    metas: Iterable[ManifestFileMeta], codec: str = "zstandard", *, sync_marker: bytes | None = None
) -> bytes:
    """An Avro manifest list with Java's 2.0 writer schema."""
    return encode_avro_container(
        MANIFEST_LIST_SCHEMA_JSON, (_meta_to_avro(m) for m in metas), codec=codec, sync_marker=sync_marker
    )


def decode_manifest_list(data: bytes, name: str = "") -> list[ManifestFileMeta]:
    """Entries of a manifest list: Avro of any layout since 0.9 and codec, or legacy ORC."""
    name = name or "<manifest list>"
    records = decode_records(data, name=name)
    try:
        metas = [_meta_from_avro(r, name) for r in records]
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFileError(f"malformed entry in manifest list {name}: {e!r}") from e
    check_names((m.file_name for m in metas), source=f"manifest list {name}", field="_FILE_NAME")
    return metas


_cache = DecodedFileCache(
    lambda data, path: decode_manifest_list(data, name=path),
    64 * MB,
    kind="manifest list",
    name="decoded manifest lists",
)


def read_manifest_list(io: FileIO, path: str) -> list[ManifestFileMeta]:
    """A manifest list's entries (immutable file: decoded once per process, then cached)."""
    return _cache.read(io, path)


def write_manifest_list(
    io: FileIO, path: str, metas: Iterable[ManifestFileMeta], codec: str = "zstandard"
) -> int:
    """Write a manifest list; returns its size in bytes."""
    data = encode_manifest_list(metas, codec)
    io.write_bytes(path, data)
    _cache.remember(io, path, data)
    return len(data)
