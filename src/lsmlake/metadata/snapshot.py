"""Snapshot files (`snapshot/snapshot-<id>`): the Snapshot model and its Java-compatible JSON (§3)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from lsmlake.core.fileio import FileIO
from lsmlake.core.path_guard import check_name
from lsmlake.core.schema import java_pretty_json
from lsmlake.errors import CorruptFileError

CURRENT_VERSION = 3
FIRST_SNAPSHOT_ID = 1
SNAPSHOT_PREFIX = "snapshot-"
BATCH_COMMIT_IDENTIFIER = 9223372036854775807
"""commitIdentifier of batch writes (Long.MAX_VALUE)."""


def snapshot_file_name(snapshot_id: int) -> str:
    return f"{SNAPSHOT_PREFIX}{snapshot_id}"


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """One committed table version; fields in Java's JSON order (api:`Snapshot.java`)."""

    version: int = CURRENT_VERSION
    uuid: str | None = None
    id: int
    schema_id: int
    base_manifest_list: str
    base_manifest_list_size: int | None = None
    delta_manifest_list: str
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    commit_user: str
    writer_version: str | None = None
    commit_identifier: int
    commit_kind: str
    """APPEND, COMPACT, OVERWRITE or ANALYZE."""
    time_millis: int
    total_record_count: int = 0
    delta_record_count: int = 0
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: Mapping[str, str] | None = None
    next_row_id: int | None = None
    operation: str | None = None

    def __hash__(self) -> int:
        props = None if self.properties is None else tuple(self.properties.items())
        return hash((self.id, self.uuid, self.time_millis, self.commit_user, props))


_JSON_NAMES: dict[str, str] = {
    "version": "version",
    "uuid": "uuid",
    "id": "id",
    "schema_id": "schemaId",
    "base_manifest_list": "baseManifestList",
    "base_manifest_list_size": "baseManifestListSize",
    "delta_manifest_list": "deltaManifestList",
    "delta_manifest_list_size": "deltaManifestListSize",
    "changelog_manifest_list": "changelogManifestList",
    "changelog_manifest_list_size": "changelogManifestListSize",
    "index_manifest": "indexManifest",
    "commit_user": "commitUser",
    "writer_version": "writerVersion",
    "commit_identifier": "commitIdentifier",
    "commit_kind": "commitKind",
    "time_millis": "timeMillis",
    "total_record_count": "totalRecordCount",
    "delta_record_count": "deltaRecordCount",
    "changelog_record_count": "changelogRecordCount",
    "watermark": "watermark",
    "statistics": "statistics",
    "properties": "properties",
    "next_row_id": "nextRowId",
    "operation": "operation",
}
_STR_FIELDS = frozenset(
    {
        "uuid",
        "base_manifest_list",
        "delta_manifest_list",
        "changelog_manifest_list",
        "index_manifest",
        "commit_user",
        "writer_version",
        "commit_kind",
        "statistics",
        "operation",
    }
)
_FILE_NAME_FIELDS = (
    "base_manifest_list",
    "delta_manifest_list",
    "changelog_manifest_list",
    "index_manifest",
    "statistics",
)
"""Fields naming a file of the table's `manifest/` or `statistics/` directory: one plain name each."""
_REQUIRED = ("id", "base_manifest_list", "delta_manifest_list", "commit_user", "commit_kind")
_ZERO_IF_ABSENT = ("schema_id", "commit_identifier", "time_millis")
"""Java primitives: an absent key deserializes to 0."""


def snapshot_to_json(s: Snapshot) -> dict[str, Any]:
    """A JSON-ready dict in Java's key order, None fields omitted."""
    out: dict[str, Any] = {}
    for f in fields(s):
        value = getattr(s, f.name)
        if value is None:
            continue
        if f.name == "properties":
            if not value:
                continue
            value = dict(value)
        out[_JSON_NAMES[f.name]] = value
    return out


def encode_snapshot(s: Snapshot) -> str:
    """Pretty-printed like Java's JsonSerdeUtil (camelCase keys, Java field order, no nulls)."""
    return java_pretty_json(snapshot_to_json(s))


def snapshot_from_json(obj: Mapping[str, Any], *, name: str = "<snapshot>") -> Snapshot:
    """Build a Snapshot from parsed JSON; unknown keys (logOffsets, tag fields...) are ignored."""
    kwargs: dict[str, Any] = {}
    try:
        for attr, key in _JSON_NAMES.items():
            value = obj.get(key)
            if value is None:
                continue
            if attr == "properties":
                kwargs[attr] = {str(k): str(v) for k, v in value.items()}
            elif attr in _STR_FIELDS:
                kwargs[attr] = str(value)
            else:
                kwargs[attr] = int(value)
        for attr in _ZERO_IF_ABSENT:
            kwargs.setdefault(attr, 0)
        missing = [_JSON_NAMES[a] for a in _REQUIRED if a not in kwargs]
        if missing:
            raise ValueError(f"missing fields {missing}")
        snapshot = Snapshot(**kwargs)
    except (TypeError, ValueError, AttributeError) as e:
        raise CorruptFileError(f"malformed snapshot file {name}: {e}") from e
    for attr in _FILE_NAME_FIELDS:
        value = kwargs.get(attr)
        if value is not None:
            check_name(value, source=f"snapshot file {name}", field=_JSON_NAMES[attr])
    return snapshot


def decode_snapshot(text: str | bytes, *, name: str = "<snapshot>") -> Snapshot:
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise CorruptFileError(f"snapshot file {name} is not valid JSON: {e}") from e
    if not isinstance(obj, dict):
        raise CorruptFileError(f"snapshot file {name} does not hold a JSON object")
    return snapshot_from_json(obj, name=name)


def read_snapshot(io: FileIO, path: str) -> Snapshot:
    return decode_snapshot(io.read_bytes(path), name=path)
