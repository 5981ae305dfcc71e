"""Table options: Paimon's names and defaults, typed access, and validation at create time."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from lsmlake.errors import InvalidOptionError

# Every option lsmlake reads, with Paimon's default (None = unset by default).
DEFAULTS: dict[str, str | None] = {
    "bucket": "-1",
    "bucket-key": None,
    "bucket-function.type": "default",
    "file.format": "parquet",
    "file.compression": "zstd",
    "file.compression.zstd-level": "1",
    "manifest.compression": "zstd",
    "manifest.target-file-size": "8 mb",
    "manifest.merge-min-count": "30",
    "manifest.full-compaction-threshold-size": "16 mb",
    "target-file-size": None,  # 128 mb for primary-key tables, 256 mb for append tables
    "write-buffer-size": "256 mb",
    "merge-engine": "deduplicate",
    "ignore-delete": "false",
    "ignore-update-before": "false",
    "rowkind.field": None,
    "sequence.field": None,
    "sequence.field.sort-order": "ascending",
    "deletion-vectors.enabled": "false",
    "deletion-vectors.merge-on-read": "false",
    "deletion-vectors.bitmap64": "false",
    "changelog-producer": "none",
    "partition.default-name": "__DEFAULT_PARTITION__",
    "partition.legacy-name": "true",
    "metadata.stats-mode": "truncate(16)",
    "metadata.stats-dense-store": "true",
    "num-levels": None,
    "num-sorted-run.compaction-trigger": "5",
    "num-sorted-run.stop-trigger": None,
    "compaction.max-size-amplification-percent": "200",
    "compaction.size-ratio": "1",
    "full-compaction.delta-commits": None,
    "write-only": "false",
    "commit.max-retries": "10",
    "commit.min-retry-wait": "10 ms",
    "commit.max-retry-wait": "10 s",
    "commit.force-create-snapshot": "false",
    "snapshot.num-retained.min": "10",
    "snapshot.num-retained.max": "2147483647",
    "snapshot.time-retained": "1 h",
    "snapshot.expire.limit": "50",
    "source.split.target-size": "128 mb",
    "source.split.open-file-cost": "4 mb",
    "scan.snapshot-id": None,
    "primary-key.nullable": "false",
    "data-file.prefix": "data-",
    "changelog-file.prefix": "changelog-",
    "file-index.in-manifest-threshold": "500 b",
    "path": None,
}
# Options lsmlake accepts by prefix (per-field settings and the like).
PREFIXES = ("fields.", "file.format.per.level", "file.compression.per.level", "metadata.stats-mode.per.level")
ALSO_KNOWN = frozenset(
    {
        "first-row.ignore-delete",
        "snapshot.clean-empty-directories",
        "snapshot.expire.clean-empty-directories",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "aggregation.remove-record-on-delete",
        "changelog-producer.lookup-wait",
        "changelog-producer.row-deduplicate",
        "changelog-file.format",
        "changelog-file.compression",
        "changelog-file.stats-mode",
        "changelog-producer.row-deduplicate-ignore-fields",
        "force-lookup",
        "dynamic-bucket.target-row-num",
        "dynamic-bucket.initial-buckets",
        "dynamic-bucket.max-buckets",
        "dynamic-bucket.assigner-parallelism",
        "cross-partition-upsert.index-ttl",
        "cross-partition-upsert.bootstrap-parallelism",
        "postpone.default-bucket-num",
        "postpone.target-row-num-per-bucket",
        "postpone.target-size-per-bucket",
        "postpone.batch-write-fixed-bucket",
        "postpone.merge-on-read",
        "lookup-wait",
        "consumer-id",
        "scan.mode",
        "scan.timestamp-millis",
        "scan.tag-name",
        "incremental-between",
        "incremental-between-scan-mode",
        "incremental-between-timestamp",
        "incremental-between-tag-to-snapshot",
        "consumer.ignore-progress",
        "continuous.discovery-interval",
        "streaming-read-overwrite",
        "streaming.read.snapshot.delay",
        "scan.timestamp",
        "metadata.stats-keep-first-n-columns",
        "write.sequence-number-init-mode",
        "manifest.format",
        "commit.timeout",
        "deletion-vector.index-file.target-size",
        "data-file.thin-mode",
        "changelog.num-retained.min",
        "changelog.num-retained.max",
        "changelog.time-retained",
        "compaction.min.file-num",
        "lookup.cache-max-disk-size",
        "full-compaction.delta-commits",
        "write-buffer-spillable",
        "page-size",
        "sort-spill-threshold",
        "owner",
        "comment",
        "file.suffix.include.compression",
        "index-file-in-data-file-dir",
        "data-file.path-directory",
        "write-buffer-for-append",
        "num-sorted-run.stop-trigger",
        "scan.plan-sort-partition",
    }
)

_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
}
_DURATION_UNITS = {
    "": 1,
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def parse_memory_size(key: str, text: str) -> int:
    """Bytes in a Paimon memory size such as ``128 mb``."""
    m = _SIZE.match(text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise InvalidOptionError(f"option {key!r}: {text!r} is not a memory size (e.g. '128 mb')")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def parse_duration_ms(key: str, text: str) -> int:
    """Milliseconds in a Paimon duration such as ``10 s`` or ``1 h``."""
    m = _SIZE.match(text)
    if not m or m.group(2).lower() not in _DURATION_UNITS:
        raise InvalidOptionError(f"option {key!r}: {text!r} is not a duration (e.g. '10 s')")
    return int(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]


def is_known_option(key: str) -> bool:
    return key in DEFAULTS or key in ALSO_KNOWN or key.startswith(PREFIXES)


@dataclass(frozen=True)
class CoreOptions:
    """A typed, read-only view of a table's options with Paimon's defaults."""

    raw: Mapping[str, str]
    primary_key_table: bool = True

    @staticmethod
    def of(options: Mapping[str, str], *, primary_key_table: bool) -> CoreOptions:
        return CoreOptions(MappingProxyType(dict(options)), primary_key_table)

    def get(self, key: str) -> str | None:
        if key in self.raw:
            return self.raw[key]
        return DEFAULTS.get(key)

    def get_bool(self, key: str) -> bool:
        value = (self.get(key) or "false").strip().lower()
        if value not in ("true", "false"):
            raise InvalidOptionError(f"option {key!r}: expected true or false, got {value!r}")
        return value == "true"

    def get_int(self, key: str, default: int | None = None) -> int:
        value = self.get(key)
        if value is None:
            if default is None:
                raise InvalidOptionError(f"option {key!r} is not set")
            return default
        try:
            return int(value.strip())
        except ValueError:
            raise InvalidOptionError(f"option {key!r}: {value!r} is not an integer") from None

    def get_size(self, key: str) -> int:
        value = self.get(key)
        if value is None:
            raise InvalidOptionError(f"option {key!r} is not set")
        return parse_memory_size(key, value)

    # -- the options every layer asks for
    @property
    def bucket(self) -> int:
        return self.get_int("bucket")

    @property
    def file_format(self) -> str:
        return (self.get("file.format") or "parquet").lower()

    @property
    def file_compression(self) -> str:
        return (self.get("file.compression") or "zstd").lower()

    @property
    def zstd_level(self) -> int:
        return self.get_int("file.compression.zstd-level")

    @property
    def manifest_codec(self) -> str:
        codec = (self.get("manifest.compression") or "zstd").lower()
        return {"zstd": "zstandard", "none": "null", "uncompressed": "null"}.get(codec, codec)

    @property
    def target_file_size(self) -> int:
        if self.get("target-file-size") is not None:
            return self.get_size("target-file-size")
        return (128 if self.primary_key_table else 256) * 1024**2

    @property
    def merge_engine(self) -> str:
        return (self.get("merge-engine") or "deduplicate").lower()

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.get_bool("deletion-vectors.enabled")

    @property
    def changelog_producer(self) -> str:
        return (self.get("changelog-producer") or "none").lower()

    @property
    def ignore_delete(self) -> bool:
        keys = (
            "ignore-delete",
            "first-row.ignore-delete",
            "deduplicate.ignore-delete",
            "partial-update.ignore-delete",
        )
        return any(self.get_bool(k) for k in keys if k in self.raw)

    @property
    def rowkind_field(self) -> str | None:
        return self.get("rowkind.field")

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        value = self.get("sequence.field")
        return tuple(s.strip() for s in value.split(",") if s.strip()) if value else ()

    @property
    def partition_default_name(self) -> str:
        return self.get("partition.default-name") or "__DEFAULT_PARTITION__"

    @property
    def partition_legacy_name(self) -> bool:
        return self.get_bool("partition.legacy-name")

    @property
    def commit_max_retries(self) -> int:
        return self.get_int("commit.max-retries")

    @property
    def manifest_target_size(self) -> int:
        return self.get_size("manifest.target-file-size")

    @property
    def manifest_merge_min_count(self) -> int:
        return self.get_int("manifest.merge-min-count")

    @property
    def manifest_full_compaction_size(self) -> int:
        return self.get_size("manifest.full-compaction-threshold-size")

    @property
    def data_file_prefix(self) -> str:
        return self.get("data-file.prefix") or "data-"


def validate_create_options(options: Mapping[str, str], *, primary_key_table: bool) -> None:
    """Reject unknown options and malformed values before a table is created."""
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidOptionError(f"option {key!r}: keys and values must be strings")
        if not is_known_option(key):
            raise InvalidOptionError(f"unknown table option {key!r}")
    opts = CoreOptions.of(options, primary_key_table=primary_key_table)
    bucket = opts.bucket
    if bucket == 0 or bucket < -2:
        raise InvalidOptionError(f"option 'bucket': {bucket} is not a bucket count (>0, -1 or -2)")
    for key in ("deletion-vectors.enabled", "write-only", "ignore-delete", "partition.legacy-name"):
        opts.get_bool(key)
    for key in (
        "target-file-size",
        "manifest.target-file-size",
        "source.split.target-size",
        "source.split.open-file-cost",
    ):
        if opts.get(key) is not None:
            opts.get_size(key)
    if opts.file_format not in ("parquet", "orc", "avro"):
        raise InvalidOptionError(f"option 'file.format': {opts.file_format!r} is not parquet, orc or avro")
    if not primary_key_table and bucket > 0 and not opts.get("bucket-key"):
        raise InvalidOptionError("append table with a fixed bucket count needs option 'bucket-key'")
    if opts.merge_engine not in ("deduplicate", "first-row", "partial-update", "aggregation"):
        raise InvalidOptionError(f"option 'merge-engine': unknown engine {opts.merge_engine!r}")
    _validate_merge_options(opts, primary_key_table=primary_key_table)


def _validate_changelog_retention(opts: CoreOptions) -> None:
    """`changelog.num-retained.min` (falling back to the snapshot option) is >= 1 and <= the max."""
    low = opts.get_int("changelog.num-retained.min", opts.get_int("snapshot.num-retained.min"))
    high = opts.get_int("changelog.num-retained.max", opts.get_int("snapshot.num-retained.max"))
    if low < 1:
        raise InvalidOptionError("changelog.num-retained.min should be at least 1")
    if low > high:
        raise InvalidOptionError(
            "changelog.num-retained.min should not be larger than changelog.num-retained.max"
        )


def _validate_merge_options(opts: CoreOptions, *, primary_key_table: bool) -> None:
    """The option combinations Paimon's SchemaValidation rejects (the schema-dependent ones live with
    the merge engines)."""
    for key in (
        "ignore-update-before",
        "partial-update.remove-record-on-delete",
        "aggregation.remove-record-on-delete",
        "deletion-vectors.merge-on-read",
    ):
        opts.get_bool(key)
    order = (opts.get("sequence.field.sort-order") or "ascending").lower()
    if order not in ("ascending", "descending"):
        raise InvalidOptionError(
            f"option 'sequence.field.sort-order': {order!r} is not ascending or descending"
        )
    producer = opts.changelog_producer
    if producer not in ("none", "input", "lookup", "full-compaction"):
        raise InvalidOptionError(f"option 'changelog-producer': unknown producer {producer!r}")
    if not primary_key_table and producer != "none":
        raise InvalidOptionError(
            "Can not set changelog-producer on table without primary keys, please define primary keys."
        )
    if opts.get("full-compaction.delta-commits") is not None and producer == "lookup":
        raise InvalidOptionError(
            "'full-compaction.delta-commits' is incompatible with 'changelog-producer'='lookup'. Use "
            "'changelog-producer'='full-compaction' to get periodic full compaction with changelog "
            "generation, or remove 'full-compaction.delta-commits'."
        )
    if producer in ("lookup", "full-compaction") and opts.get_bool("streaming-read-overwrite"):
        raise InvalidOptionError(
            "Cannot set streaming-read-overwrite to true when changelog producer is FULL_COMPACTION or "
            "LOOKUP because it will read duplicated changes."
        )
    _validate_changelog_retention(opts)
    engine = opts.merge_engine
    if not primary_key_table:
        return
    if opts.sequence_fields and engine == "first-row":
        raise InvalidOptionError("Do not support use sequence field on FIRST_ROW merge engine.")
    if engine == "first-row" and producer not in ("none", "lookup"):
        raise InvalidOptionError(
            "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine"
        )
    if opts.deletion_vectors_enabled:
        if producer not in ("none", "input", "lookup"):
            raise InvalidOptionError(
                "Deletion vectors mode is only supported for NONE/INPUT/LOOKUP changelog producer now."
            )
        if engine == "first-row":
            raise InvalidOptionError(
                "First row merge engine does not need deletion vectors because there is no deletion of old "
                "data in this merge engine."
            )
