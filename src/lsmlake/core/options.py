"""Table options: Paimon's names and defaults, typed access, and validation at create time."""

from __future__ import annotations

import difflib
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
    "dynamic-partition-overwrite": "true",
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
        "scan.version",
        "scan.watermark",
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


def unknown_option_error(key: str, *, what: str = "table option") -> InvalidOptionError:
    """The error for an option Paimon does not have, suggesting the closest known name."""
    close = difflib.get_close_matches(key, [*DEFAULTS, *ALSO_KNOWN], n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return InvalidOptionError(f"unknown {what} {key!r}{hint}")


# Typed options beyond what their defaults tell (a default of "true" is a bool, "10" an integer, ...).
_DURATION_OPTIONS = frozenset(
    {
        "commit.min-retry-wait",
        "commit.max-retry-wait",
        "commit.timeout",
        "snapshot.time-retained",
        "changelog.time-retained",
        "continuous.discovery-interval",
        "streaming.read.snapshot.delay",
        "cross-partition-upsert.index-ttl",
    }
)
_SIZE_OPTIONS = frozenset(
    {"target-file-size", "file-index.in-manifest-threshold", "postpone.target-size-per-bucket"}
)
_INT_OPTIONS = frozenset(
    {
        "scan.snapshot-id",
        "scan.timestamp-millis",
        "full-compaction.delta-commits",
        "num-levels",
        "num-sorted-run.stop-trigger",
        "changelog.num-retained.min",
        "changelog.num-retained.max",
        "compaction.min.file-num",
        "dynamic-bucket.target-row-num",
        "dynamic-bucket.initial-buckets",
        "dynamic-bucket.max-buckets",
        "dynamic-bucket.assigner-parallelism",
        "postpone.default-bucket-num",
        "postpone.target-row-num-per-bucket",
        "cross-partition-upsert.bootstrap-parallelism",
        "metadata.stats-keep-first-n-columns",
        "sort-spill-threshold",
    }
)
_BOOL_OPTIONS = frozenset(
    {
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
        "partial-update.remove-record-on-delete",
        "aggregation.remove-record-on-delete",
        "snapshot.clean-empty-directories",
        "snapshot.expire.clean-empty-directories",
        "changelog-producer.lookup-wait",
        "changelog-producer.row-deduplicate",
        "lookup-wait",
        "force-lookup",
        "consumer.ignore-progress",
        "streaming-read-overwrite",
        "incremental-between-tag-to-snapshot",
        "data-file.thin-mode",
        "write-buffer-spillable",
        "write-buffer-for-append",
        "file.suffix.include.compression",
        "index-file-in-data-file-dir",
        "postpone.batch-write-fixed-bucket",
        "postpone.merge-on-read",
        "scan.plan-sort-partition",
    }
)
_ENUM_OPTIONS: dict[str, tuple[str, ...]] = {
    "scan.mode": (
        "default",
        "latest-full",
        "full",
        "latest",
        "compacted-full",
        "from-timestamp",
        "from-creation-timestamp",
        "from-file-creation-time",
        "from-snapshot",
        "from-snapshot-full",
        "incremental",
    ),
    "incremental-between-scan-mode": ("auto", "delta", "changelog", "diff"),
    "bucket-function.type": ("default", "mod", "hive"),
}


def check_option_value(key: str, value: str) -> None:
    """A known option's value must parse as its type (bool, integer, memory size, duration, enum)."""
    default = DEFAULTS.get(key)
    if key in _DURATION_OPTIONS:
        parse_duration_ms(key, value)
    elif key in _SIZE_OPTIONS or key.endswith(("-size", ".target-file-size", "-cost")):
        parse_memory_size(key, value)
    elif key in _BOOL_OPTIONS or default in ("true", "false"):
        if value.strip().lower() not in ("true", "false"):
            raise InvalidOptionError(f"option {key!r}: expected true or false, got {value!r}")
    elif key in _INT_OPTIONS or (default is not None and re.fullmatch(r"-?\d+", default)):
        if not re.fullmatch(r"\s*-?\d+\s*", value):
            raise InvalidOptionError(f"option {key!r}: {value!r} is not an integer")
    elif key in _ENUM_OPTIONS and value.strip().lower() not in _ENUM_OPTIONS[key]:
        raise InvalidOptionError(f"option {key!r}: {value!r} is not one of {', '.join(_ENUM_OPTIONS[key])}")


_IGNORE_DELETE_KEYS = (
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)


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
    def ignore_delete_key(self) -> str:
        """The key `ignore-delete` is read from: itself, else the first of its fallback keys that is set
        (as Paimon's fallback keys work: the first present key decides, even when it says false)."""
        return next((k for k in _IGNORE_DELETE_KEYS if k in self.raw), _IGNORE_DELETE_KEYS[0])

    @property
    def ignore_delete(self) -> bool:
        return self.get_bool(self.ignore_delete_key) if self.ignore_delete_key in self.raw else False

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
            raise unknown_option_error(key)
        check_option_value(key, value)
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


def _retained(opts: CoreOptions, key: str, fallback: str | None = None) -> tuple[int, str]:
    """An integer retention option, falling back to ``fallback``, and how the value came about."""
    if key in opts.raw:
        return opts.get_int(key), f"{key}={opts.raw[key]}"
    if fallback is not None:
        value, origin = _retained(opts, fallback)
        return value, f"{key}, which falls back to {origin}"
    return opts.get_int(key), f"{key}={opts.get(key)} (the default)"


def _validate_retention(opts: CoreOptions) -> None:
    """Paimon's checks, in its order: ``snapshot.num-retained.min`` >= 1 and <= the max, then the same
    for the changelog options (which fall back to the snapshot ones); messages say which values clash."""
    checks = (
        ("snapshot.num-retained.min", None, "snapshot.num-retained.max", None),
        (
            "changelog.num-retained.min",
            "snapshot.num-retained.min",
            "changelog.num-retained.max",
            "snapshot.num-retained.max",
        ),
    )
    for low_key, low_fallback, high_key, high_fallback in checks:
        low, low_origin = _retained(opts, low_key, low_fallback)
        high, high_origin = _retained(opts, high_key, high_fallback)
        if low < 1:
            raise InvalidOptionError(f"{low_key} should be at least 1: {low_origin}")
        if low > high:
            raise InvalidOptionError(
                f"{low_key} should not be larger than {high_key}: {high_origin} is smaller than {low_origin}"
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
    _validate_retention(opts)
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


def validate_dynamic_options(
    table_options: Mapping[str, str], dynamic: Mapping[str, str], *, primary_key_table: bool
) -> None:
    """Options given at read or write time: known names, well-formed values, and no combination with
    the table's own options that CREATE TABLE would refuse (Paimon validates the copied schema too)."""
    for key, value in dynamic.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidOptionError(f"option {key!r}: keys and values must be strings")
        if not is_known_option(key):
            raise unknown_option_error(key, what="dynamic option")
        check_option_value(key, value)
    base = {k: v for k, v in table_options.items() if is_known_option(k)}
    try:
        validate_create_options({**base, **dynamic}, primary_key_table=primary_key_table)
    except InvalidOptionError:
        try:
            validate_create_options(base, primary_key_table=primary_key_table)
        except InvalidOptionError:
            return  # the table's own options already fail lsmlake's checks: not the dynamic options' doing
        raise
