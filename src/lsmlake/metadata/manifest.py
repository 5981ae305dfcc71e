"""Manifest files (`manifest/manifest-*`): ManifestEntry codec and the ADD/DELETE fold (§4.2, §4.5)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from lsmlake.core.caches import MB
from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import check_location, check_name, check_names
from lsmlake.errors import CorruptFileError
from lsmlake.metadata.avro_container import decode_records, encode_avro_container, java_schema_json
from lsmlake.metadata.data_file import (
    DATA_FILE_AVRO_SCHEMA,
    DataFileMeta,
    data_file_from_avro,
    data_file_to_avro,
)
from lsmlake.metadata.decoded_cache import DecodedFileCache

MANIFEST_VERSION = 2
"""`_VERSION` of manifest entries (a format identifier; Java rejects any other value)."""


class FileKind(IntEnum):
    """Whether a manifest entry adds or deletes a file (core:`manifest/FileKind.java`)."""

    ADD = 0
    DELETE = 1


@dataclass(frozen=True)
class ManifestEntry:
    """One ADD or DELETE of a data file in a (partition, bucket)."""

    kind: FileKind
    partition: bytes
    """Serialized partition BinaryRow (4-byte BE arity prefix + LE row body)."""
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def __post_init__(self) -> None:
        if not isinstance(self.kind, FileKind):
            object.__setattr__(self, "kind", FileKind(self.kind))

    def identifier(self) -> tuple[Any, ...]:
        """(partition, bucket, level, file name, extra files, embedded index, external path)."""
        f = self.file
        return (
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )

    def with_kind(self, kind: FileKind) -> ManifestEntry:
        return dataclasses.replace(self, kind=kind)


MANIFEST_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": DATA_FILE_AVRO_SCHEMA},
    ],
}
MANIFEST_SCHEMA_JSON = java_schema_json(MANIFEST_AVRO_SCHEMA)
"""The writer schema text in the Avro header, byte-identical to Java 2.0's."""


def _entry_to_avro(e: ManifestEntry) -> dict[str, Any]:
    return {
        "_VERSION": MANIFEST_VERSION,
        "_KIND": int(e.kind),
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_TOTAL_BUCKETS": e.total_buckets,
        "_FILE": data_file_to_avro(e.file),
    }


def _entry_from_avro(rec: Mapping[str, Any], name: str) -> ManifestEntry:
    version = rec.get("_VERSION")
    if version != MANIFEST_VERSION:
        raise CorruptFileError(f"manifest {name} has entry version {version}, expected {MANIFEST_VERSION}")
    file = rec.get("_FILE")
    if file is None:
        raise CorruptFileError(f"manifest {name} has an entry without _FILE")
    return ManifestEntry(
        kind=FileKind(int(rec["_KIND"])),
        partition=bytes(rec["_PARTITION"]),
        bucket=int(rec["_BUCKET"]),
        total_buckets=int(rec["_TOTAL_BUCKETS"]),
        file=data_file_from_avro(file),
    )


def encode_manifest(
    entries: Iterable[ManifestEntry], *, codec: str = "zstandard", sync_marker: bytes | None = None
) -> bytes:
    """An Avro manifest file with Java's 2.0 writer schema."""
    return encode_avro_container(
        MANIFEST_SCHEMA_JSON, (_entry_to_avro(e) for e in entries), codec=codec, sync_marker=sync_marker
    )


def decode_manifest(data: bytes, *, name: str = "") -> list[ManifestEntry]:
    """Entries of a manifest: Avro of any layout since 0.9 and codec, or a legacy ORC manifest."""
    name = name or "<manifest>"
    records = decode_records(data, name=name)
    try:
        entries = [_entry_from_avro(r, name) for r in records]
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFileError(f"malformed entry in manifest {name}: {e!r}") from e
    check_entry_paths(entries, f"manifest {name}")
    return entries


def check_entry_paths(entries: Iterable[ManifestEntry], source: str) -> None:
    """Every file name an entry holds is one plain name and its external path well formed (which roots
    it may lie under is checked where the table's options are known); else a CorruptFileError."""
    for e in entries:
        f = e.file
        check_name(f.file_name, source=source, field="_FILE._FILE_NAME")
        if f.extra_files:
            check_names(f.extra_files, source=source, field="_FILE._EXTRA_FILES")
        if f.external_path:
            check_location(f.external_path, source=source, field="_FILE._EXTERNAL_PATH")


# Manifest files are immutable (unique names): decoded entries are kept, up to this much memory in all.
_CACHE_MAX_BYTES = 512 * MB
_cache = DecodedFileCache(
    lambda data, path: decode_manifest(data, name=path),
    _CACHE_MAX_BYTES,
    kind="manifest",
    name="decoded manifests",
)


def read_manifest(io: FileIO, path: str) -> list[ManifestEntry]:
    """A manifest's entries; each file is decoded once per process (then served from a bounded cache)."""
    return _cache.read(io, path)


def write_manifest(io: FileIO, path: str, entries: Iterable[ManifestEntry], codec: str = "zstandard") -> int:
    """Write a manifest file; returns its size in bytes."""
    data = encode_manifest(entries, codec=codec)
    io.write_bytes(path, data)
    _cache.remember(io, path, data)
    return len(data)


# --------------------------------------------------------------------------- folding


def merge_into(entries: Iterable[ManifestEntry], merged: dict[tuple[Any, ...], ManifestEntry]) -> None:
    """Fold entries into ``merged`` like Java's FileEntry.mergeEntries (insertion ordered)."""
    for e in entries:
        ident = e.identifier()
        if e.kind == FileKind.ADD:
            old = merged.get(ident)
            if old is not None:
                raise CorruptFileError(
                    f"trying to add file {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) "
                    f"which is already in the map as a {old.kind.name} entry"
                )
            merged[ident] = e
        elif ident in merged:
            del merged[ident]
        else:
            merged[ident] = e


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """ADDs and DELETEs that survive folding; a DELETE without its ADD in ``entries`` is kept."""
    merged: dict[tuple[Any, ...], ManifestEntry] = {}
    merge_into(entries, merged)
    return list(merged.values())


def live_files(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """The live ADD entries of a complete history (base + delta manifests, in order)."""
    merged = merge_entries(entries)
    dangling = [e for e in merged if e.kind == FileKind.DELETE]
    if dangling:
        names = ", ".join(sorted({e.file.file_name for e in dangling})[:5])
        raise CorruptFileError(
            f"{len(dangling)} DELETE entries have no matching ADD (corrupt history): {names}"
        )
    return merged
