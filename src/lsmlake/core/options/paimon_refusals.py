"""Paimon's CoreOptions keys lsmlake has no declaration for, each refused at create time with its reason.

A key leaves this table when lsmlake honours it: its declaration goes into the registry (the
declaration wins over an entry here, and tests/core/test_option_status.py names any stale entry).
Keys with ``#`` stand for any text there (``commit.callback.<n>.param``).
"""

from __future__ import annotations

import re

from lsmlake.core.options.paimon_keys import PAIMON_CORE_OPTIONS

_NOT_YET = "lsmlake does not implement it yet"
_CHAIN = "chain tables are not available in lsmlake"
_BLOB = "BLOB columns are not available in lsmlake"
_VECTOR = "VECTOR columns are not available in lsmlake"
_GLOBAL_INDEX = "global indexes are not available in lsmlake"
_CLUSTERING = "lsmlake does not cluster (sort) data files by other columns"
_FORMAT_TABLE = "lsmlake makes only Paimon tables, not format tables"
_MATERIALIZED = "materialized tables are Flink's; lsmlake cannot refresh them"
_METASTORE = "it maps the table into a Hive metastore, which lsmlake's catalogs are not"
_CALLBACK = "it names Java classes, which lsmlake cannot run"
_REMOTE_LOOKUP = "lsmlake does not write remote lookup files"
_MARK_DONE = "only the success-file mark-done action is available in lsmlake"
_SYSTEM_TABLE = "it is internal to Paimon's audit_log and binlog system tables"

REFUSED: dict[str, str] = {
    "type": "lsmlake makes only primary-key and append tables (type 'table'); leave it unset",
    "branch": "open a branch as a table named 'db.table$branch_' followed by the branch's name",
    "primary-key": (
        "the primary key is part of the schema, not a stored option: give Catalog.create_table(primary_key=...); "
        "SQL CREATE TABLE takes it in WITH (...) as Paimon's Spark catalog does"
    ),
    "partition": (
        "the partition keys are part of the schema, not a stored option: give Catalog.create_table("
        "partition_keys=...); SQL CREATE TABLE takes them in WITH (...) as Paimon's Spark catalog does"
    ),
    "upsert-key": "upsert keys of append tables are not available in lsmlake",
    "auto-create": "lsmlake's catalog creates a table's directory; it does not create one on read",
    "row-tracking.enabled": "lsmlake cannot write or read row-tracking tables",
    "query-auth.enabled": "lsmlake's catalogs do not authorise queries by column or row",
    "chain-table.enabled": _CHAIN,
    "chain-table.chain-partition-keys": _CHAIN,
    "scan.fallback-snapshot-branch": _CHAIN,
    "scan.fallback-delta-branch": _CHAIN,
    "scan.primary-branch": "reading partitions from a primary branch is not available in lsmlake",
    "compaction.force-up-level-0": _NOT_YET,
    "delete.force-produce-changelog": _NOT_YET,
    "commit.discard-duplicate-files": _NOT_YET,
    "tag.create-success-file": _NOT_YET,
    "incremental-to-auto-tag": _NOT_YET,
    "scan.bounded.watermark": _NOT_YET,
    "scan.file-creation-time-millis": _NOT_YET,
    "scan.creation-time-millis": _NOT_YET,
    "streaming-read-append-overwrite": _NOT_YET,
    "consumer.mode": _NOT_YET,
    "consumer.changelog-only": _NOT_YET,
    "partition.timestamp-format.strict": _NOT_YET,
    "visibility-callback.enabled": _NOT_YET,
    "visibility-callback.timeout": _NOT_YET,
    "visibility-callback.check-interval": _NOT_YET,
    "scan.ignore-corrupt-files": "lsmlake fails a read on a corrupt file rather than skip it",
    "scan.ignore-lost-files": "lsmlake fails a read on a lost file rather than skip it",
    "alter-column-null-to-not-null.disabled": (
        "lsmlake never makes a nullable column NOT NULL (Paimon's default), whatever this says"
    ),
    "disable-explicit-type-casting": (
        "lsmlake's ALTER ... TYPE allows only lossless widenings, whatever this says"
    ),
    "table-read.sequence-number.enabled": _SYSTEM_TABLE,
    "key-value.sequence_number.enabled": _SYSTEM_TABLE,
    "stream-scan-mode": "it is internal to Paimon's streaming system tables",
    "batch-scan-mode": "it is internal to Paimon's streaming system tables",
    "lookup.remote-file.enabled": _REMOTE_LOOKUP,
    "lookup.remote-file.level-threshold": _REMOTE_LOOKUP,
    "commit.callbacks": _CALLBACK,
    "commit.callback.#.param": _CALLBACK,
    "tag.callbacks": _CALLBACK,
    "tag.callback.#.param": _CALLBACK,
    "partition.mark-done-action.custom.class": _MARK_DONE,
    "partition.mark-done-action.http.url": _MARK_DONE,
    "partition.mark-done-action.http.params": _MARK_DONE,
    "metastore.partitioned-table": _METASTORE,
    "metastore.tag-to-partition": _METASTORE,
    "metastore.tag-to-partition.preview": _METASTORE,
    "clustering.columns": _CLUSTERING,
    "clustering.strategy": _CLUSTERING,
    "clustering.incremental": _CLUSTERING,
    "clustering.history-partition.limit": _CLUSTERING,
    "clustering.history-partition.idle-to-full-sort": _CLUSTERING,
    "clustering.incremental.optimize-write": _CLUSTERING,
    "clustering.incremental.mode": _CLUSTERING,
    "pk-clustering-override": _CLUSTERING,
    "format-table.implementation": _FORMAT_TABLE,
    "format-table.partition-path-only-value": _FORMAT_TABLE,
    "format-table.file.compression": _FORMAT_TABLE,
    "format-table.commit-hive-sync-url": _FORMAT_TABLE,
    "blob-field": _BLOB,
    "blob-descriptor-field": _BLOB,
    "blob-as-descriptor": _BLOB,
    "blob-external-storage-path": _BLOB,
    "blob-external-storage-field": _BLOB,
    "blob.target-file-size": _BLOB,
    "blob.split-by-file-size": _BLOB,
    "vector.file.format": _VECTOR,
    "vector-field": _VECTOR,
    "vector.target-file-size": _VECTOR,
    "global-index.external-path": _GLOBAL_INDEX,
    "global-index.column-update-action": _GLOBAL_INDEX,
    "global-index.row-count-per-shard": _GLOBAL_INDEX,
    "global-index.build.max-shard": _GLOBAL_INDEX,
    "global-index.build.max-parallelism": _GLOBAL_INDEX,
    "global-index.enabled": _GLOBAL_INDEX,
    "global-index.thread-num": _GLOBAL_INDEX,
    "materialized-table.definition-query": _MATERIALIZED,
    "materialized-table.interval-freshness": _MATERIALIZED,
    "materialized-table.interval-freshness.time-unit": _MATERIALIZED,
    "materialized-table.logical-refresh-mode": _MATERIALIZED,
    "materialized-table.refresh-mode": _MATERIALIZED,
    "materialized-table.refresh-status": _MATERIALIZED,
    "materialized-table.refresh-handler-description": _MATERIALIZED,
    "materialized-table.refresh-handler-bytes": _MATERIALIZED,
}
"""Key (as Paimon spells it) -> why lsmlake refuses it."""

REFUSED_FALLBACK_KEYS: dict[str, str] = {
    "log.scan": "a deprecated spelling of 'scan.mode', which lsmlake reads only under its own name",
    "log.scan.timestamp-millis": (
        "a deprecated spelling of 'scan.timestamp-millis', which lsmlake reads only under its own name"
    ),
}
"""Paimon's fallback keys of options lsmlake honours that lsmlake does not read, and why they are refused."""

_PATTERNS = tuple(
    (re.compile("".join(".+" if c == "#" else re.escape(c) for c in key)), key)
    for key in REFUSED
    if "#" in key
)
_FALLBACKS = {fallback: key for key, fallbacks in PAIMON_CORE_OPTIONS.items() for fallback in fallbacks}


def refused_paimon_key(key: str) -> tuple[str, str] | None:
    """``(Paimon's key, reason)`` when ``key`` is a refused key, a fallback key of one, or matches a ``#`` key."""
    if key in REFUSED:
        return key, REFUSED[key]
    if key in REFUSED_FALLBACK_KEYS:
        return key, REFUSED_FALLBACK_KEYS[key]
    main = _FALLBACKS.get(key)
    if main is not None and main in REFUSED:
        return main, REFUSED[main]
    return next(((k, REFUSED[k]) for pattern, k in _PATTERNS if pattern.fullmatch(key)), None)
