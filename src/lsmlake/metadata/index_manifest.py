"""Index manifests (`manifest/index-manifest-*`): live index files (DV, HASH, global) of a snapshot (§4.4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lsmlake.core.caches import MB
from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import check_location, check_name
from lsmlake.errors import CorruptFileError
from lsmlake.metadata.avro_container import decode_records, encode_avro_container, java_schema_json
from lsmlake.metadata.decoded_cache import DecodedFileCache
from lsmlake.metadata.manifest import FileKind
from lsmlake.metadata.stats import opt_int

INDEX_MANIFEST_VERSION = 1
DELETION_VECTORS_INDEX = "DELETION_VECTORS"
HASH_INDEX = "HASH"

GLOBAL_INDEX_KEYS = (
    "_ROW_RANGE_START",
    "_ROW_RANGE_END",
    "_INDEX_FIELD_ID",
    "_EXTRA_FIELD_IDS",
    "_INDEX_META",
    "_SOURCE_META",
)


@dataclass(frozen=True)
class DeletionVectorMeta:
    """Where one data file's deletion vector sits inside a DV index file (§7.2 for `length`)."""

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True)
class IndexFileMeta:
    """One index file; ``global_index`` is the raw `_GLOBAL_INDEX` record, kept for round trips."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.dv_ranges is not None and not isinstance(self.dv_ranges, tuple):
            object.__setattr__(self, "dv_ranges", tuple(self.dv_ranges))

    def dv_map(self) -> dict[str, DeletionVectorMeta]:
        """Deletion-vector ranges keyed by data file name (empty when there are none)."""
        return {d.data_file_name: d for d in self.dv_ranges or ()}


@dataclass(frozen=True)
class IndexManifestEntry:
    """An ADD (or, in commit changes only, a DELETE) of an index file for a (partition, bucket)."""

    kind: FileKind
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    def __post_init__(self) -> None:
        if not isinstance(self.kind, FileKind):
            object.__setattr__(self, "kind", FileKind(self.kind))


def hash_index_files(files: tuple[IndexFileMeta, ...]) -> tuple[IndexFileMeta, ...]:
    """The HASH index files among ``files``: they are published with the data files (APPEND)."""
    return tuple(f for f in files if f.index_type == HASH_INDEX)


def other_index_files(files: tuple[IndexFileMeta, ...]) -> tuple[IndexFileMeta, ...]:
    """The other (deletion-vector) index files: they go with the compaction (COMPACT)."""
    return tuple(f for f in files if f.index_type != HASH_INDEX)


def _nullable(t: Any) -> dict[str, Any]:
    return {"type": ["null", t], "default": None}


INDEX_MANIFEST_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {
            "name": "_DELETIONS_VECTORS_RANGES",
            **_nullable(
                {
                    "type": "array",
                    "items": [
                        "null",
                        {
                            "type": "record",
                            "name": "record__DELETIONS_VECTORS_RANGES",
                            "fields": [
                                {"name": "f0", "type": "string"},
                                {"name": "f1", "type": "int"},
                                {"name": "f2", "type": "int"},
                                {"name": "_CARDINALITY", **_nullable("long")},
                            ],
                        },
                    ],
                }
            ),
        },
        {"name": "_EXTERNAL_PATH", **_nullable("string")},
        {
            "name": "_GLOBAL_INDEX",
            **_nullable(
                {
                    "type": "record",
                    "name": "record__GLOBAL_INDEX",
                    "fields": [
                        {"name": "_ROW_RANGE_START", "type": "long"},
                        {"name": "_ROW_RANGE_END", "type": "long"},
                        {"name": "_INDEX_FIELD_ID", "type": "int"},
                        {"name": "_EXTRA_FIELD_IDS", **_nullable({"type": "array", "items": "int"})},
                        {"name": "_INDEX_META", **_nullable("bytes")},
                        {"name": "_SOURCE_META", **_nullable("bytes")},
                    ],
                }
            ),
        },
    ],
}
INDEX_MANIFEST_SCHEMA_JSON = java_schema_json(INDEX_MANIFEST_AVRO_SCHEMA)
"""The writer schema text in the Avro header, byte-identical to Java 2.x's."""


def _entry_to_avro(e: IndexManifestEntry) -> dict[str, Any]:
    f = e.index_file
    ranges = None
    if f.dv_ranges is not None:
        ranges = [
            {"f0": d.data_file_name, "f1": d.offset, "f2": d.length, "_CARDINALITY": d.cardinality}
            for d in f.dv_ranges
        ]
    return {
        "_VERSION": INDEX_MANIFEST_VERSION,
        "_KIND": int(e.kind),
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_INDEX_TYPE": f.index_type,
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_DELETIONS_VECTORS_RANGES": ranges,
        "_EXTERNAL_PATH": f.external_path,
        "_GLOBAL_INDEX": f.global_index,
    }


def _entry_from_avro(rec: Mapping[str, Any], name: str) -> IndexManifestEntry:
    version = rec.get("_VERSION")
    if version != INDEX_MANIFEST_VERSION:
        raise CorruptFileError(
            f"index manifest {name} has entry version {version}, expected {INDEX_MANIFEST_VERSION}"
        )
    raw_ranges = rec.get("_DELETIONS_VECTORS_RANGES")
    ranges = None
    if raw_ranges is not None:
        ranges = tuple(
            DeletionVectorMeta(str(r["f0"]), int(r["f1"]), int(r["f2"]), opt_int(r.get("_CARDINALITY")))
            for r in raw_ranges
            if r is not None
        )
    raw_global = rec.get("_GLOBAL_INDEX")
    global_index = None if raw_global is None else {k: raw_global.get(k) for k in GLOBAL_INDEX_KEYS}
    return IndexManifestEntry(
        kind=FileKind(int(rec["_KIND"])),
        partition=bytes(rec["_PARTITION"]),
        bucket=int(rec["_BUCKET"]),
        index_file=IndexFileMeta(
            index_type=str(rec["_INDEX_TYPE"]),
            file_name=str(rec["_FILE_NAME"]),
            file_size=int(rec["_FILE_SIZE"]),
            row_count=int(rec["_ROW_COUNT"]),
            dv_ranges=ranges,
            external_path=rec.get("_EXTERNAL_PATH"),
            global_index=global_index,
        ),
    )


def encode_index_manifest(
    entries: Iterable[IndexManifestEntry], *, codec: str = "zstandard", sync_marker: bytes | None = None
) -> bytes:
    """An Avro index manifest with Java's 2.x writer schema."""
    return encode_avro_container(
        INDEX_MANIFEST_SCHEMA_JSON, (_entry_to_avro(e) for e in entries), codec=codec, sync_marker=sync_marker
    )


def decode_index_manifest(data: bytes, *, name: str = "") -> list[IndexManifestEntry]:
    """Entries of an index manifest of any layout since 0.9."""
    name = name or "<index manifest>"
    records = decode_records(data, name=name)
    try:
        entries = [_entry_from_avro(r, name) for r in records]
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFileError(f"malformed entry in index manifest {name}: {e!r}") from e
    source = f"index manifest {name}"
    for entry in entries:
        f = entry.index_file
        check_name(f.file_name, source=source, field="_FILE_NAME")
        if f.external_path:
            check_location(f.external_path, source=source, field="_EXTERNAL_PATH")
    return entries


_cache = DecodedFileCache(
    lambda data, path: decode_index_manifest(data, name=path),
    64 * MB,
    kind="index manifest",
    name="decoded index manifests",
)


def read_index_manifest(io: FileIO, path: str) -> list[IndexManifestEntry]:
    """An index manifest's entries (immutable file: decoded once per process, then cached)."""
    return _cache.read(io, path)


def write_index_manifest(
    io: FileIO, path: str, entries: Iterable[IndexManifestEntry], codec: str = "zstandard"
) -> int:
    """Write an index manifest; returns its size in bytes."""
    data = encode_index_manifest(entries, codec=codec)
    io.write_bytes(path, data)
    return len(data)


# --------------------------------------------------------------------------- combining


def _bucket_key(e: IndexManifestEntry) -> tuple[Any, ...]:
    return (e.partition, e.bucket, e.index_file.index_type)


def _file_key(e: IndexManifestEntry) -> tuple[Any, ...]:
    return (e.index_file.file_name,)


def _combine_by_file_name_dv(
    prev: list[IndexManifestEntry], changes: list[IndexManifestEntry]
) -> list[IndexManifestEntry]:
    """DV of bucket-unaware tables: keyed by file name, each data file's DV in one live file."""
    live = {e.index_file.file_name: e for e in prev}
    dv_files = {d for e in prev for d in e.index_file.dv_map()}
    for e in changes:
        name, covered = e.index_file.file_name, list(e.index_file.dv_map())
        if e.kind == FileKind.ADD:
            if name in live:
                raise CorruptFileError(f"trying to add index file {name} which is already added")
            for d in covered:
                if d in dv_files:
                    raise CorruptFileError(f"trying to add a deletion vector for {d}, which already has one")
                dv_files.add(d)
            live[name] = e
        else:
            if name not in live:
                raise CorruptFileError(f"trying to delete index file {name} which does not exist")
            dv_files.difference_update(covered)
            del live[name]
    return list(live.values())


def combine_index_entries(
    previous: list[IndexManifestEntry],
    changes: list[IndexManifestEntry],
    *,
    bucket_unaware: bool = False,
) -> list[IndexManifestEntry]:
    """The complete index file set after applying ``changes`` (core:`IndexManifestFileHandler`).

    HASH and bucketed DV entries are keyed by (partition, bucket, index type); other (global) index
    types by file name. DELETEs are applied before ADDs, and an ADD replaces the entry of its key.
    With ``bucket_unaware`` (append tables) DV entries are keyed by file name instead.
    """
    for e in previous:
        if e.kind != FileKind.ADD:
            raise CorruptFileError(f"index manifest holds a {e.kind.name} entry for {e.index_file.file_name}")
    types: list[str] = []
    for e in (*previous, *changes):
        if e.index_file.index_type not in types:
            types.append(e.index_file.index_type)
    out: list[IndexManifestEntry] = []
    for t in types:
        prev = [e for e in previous if e.index_file.index_type == t]
        new = [e for e in changes if e.index_file.index_type == t]
        if t == DELETION_VECTORS_INDEX and bucket_unaware:
            out.extend(_combine_by_file_name_dv(prev, new))
            continue
        key = _bucket_key if t in (DELETION_VECTORS_INDEX, HASH_INDEX) else _file_key
        live = {key(e): e for e in prev}
        for e in new:
            if e.kind == FileKind.DELETE and live.pop(key(e), None) is None and key is _file_key:
                raise CorruptFileError(
                    f"trying to delete global index file {e.index_file.file_name} which does not exist"
                )
        for e in new:
            if e.kind == FileKind.ADD:
                live[key(e)] = e
        out.extend(live.values())
    return out
