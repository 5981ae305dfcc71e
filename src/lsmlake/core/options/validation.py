"""Options checked before a table is created, altered, read or written: known names, typed values,
no combination Paimon's SchemaValidation rejects, and nothing lsmlake cannot honour."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from lsmlake.core.options.core_options import FIELDS_PREFIX, STATS_MODE_SUFFIX, CoreOptions
from lsmlake.core.options.external_path_options import validate_external_paths
from lsmlake.core.options.file_index_options import file_index_columns, file_index_refusal, is_file_index_key
from lsmlake.core.options.map_option import check_stats_mode
from lsmlake.core.options.paimon_refusals import refused_paimon_key
from lsmlake.core.options.registry import BY_KEY, FALLBACK_KEYS, MAP_OPTIONS
from lsmlake.errors import InvalidOptionError, UnsupportedError

WRITTEN_FORMATS = ("parquet", "avro", "orc")
"""Data file formats lsmlake writes."""
WRITTEN_COMPRESSIONS = {
    "parquet": ("zstd", "snappy", "lz4", "gzip", "brotli", "uncompressed", "none"),
    "orc": ("zstd", "snappy", "lz4", "zlib", "none", "uncompressed"),
    "avro": ("zstd", "null", "deflate", "snappy", "bzip2", "xz", "zstandard"),
}
"""Codecs a per-level compression may name, by the level's format (Java's Parquet and ORC codec names,
ORC has no gzip, Parquet no zlib; Avro's codec names or zstd, unless ``avro.codec`` overrides them)."""


def map_option_of(key: str) -> str | None:
    """The map option ``key`` sets one entry of (``file.format.per.level.0`` -> ``file.format.per.level``)."""
    return next((o.key for o in MAP_OPTIONS if key.startswith(o.key + ".")), None)


def is_known_option(key: str) -> bool:
    """An option lsmlake accepts: declared (or a declared option's fallback key) and not refused, or a
    per-column ``fields.`` option."""
    declared = BY_KEY.get(key) or FALLBACK_KEYS.get(key)
    if declared is not None:
        return declared.refused is None
    return key.startswith(FIELDS_PREFIX) or is_file_index_key(key) or map_option_of(key) is not None


def unknown_option_error(key: str, *, what: str = "table option") -> InvalidOptionError:
    """The error for an option Paimon does not have, suggesting the closest known name."""
    close = difflib.get_close_matches(key, [*BY_KEY, *FALLBACK_KEYS], n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return InvalidOptionError(f"unknown {what} {key!r}{hint}")


def refusal(key: str, value: str) -> str | None:
    """Why lsmlake cannot honour ``key=value``, or None when it can."""
    declared = BY_KEY.get(key)
    if declared is not None and declared.refused is not None:
        return f"option {key!r} is not supported by lsmlake: {declared.refused}"
    if declared is None and key not in FALLBACK_KEYS and (paimon := refused_paimon_key(key)) is not None:
        return f"option {key!r} is not supported by lsmlake: {paimon[1]}"
    if (reason := file_index_refusal(key)) is not None:
        return reason
    if key == CoreOptions.PARTITION_MARK_DONE_ACTION.key:
        others = [a.strip() for a in value.split(",") if a.strip() and a.strip() != "success-file"]
        if others:
            return (
                f"option 'partition.mark-done-action'={value!r} is not supported by lsmlake: only success-file "
                "(done-partition and mark-event need a Hive metastore; http-report and custom are not available)"
            )
    if key == CoreOptions.POSTPONE_MERGE_ON_READ.key and value.strip().lower() == "true":
        return (
            "option 'postpone.merge-on-read'='true' is not supported by lsmlake: its batch reads of a postpone "
            "table leave out the rows still in the postpone bucket until a compaction moves them, where Paimon's "
            "Flink reads merge them into their buckets"
        )
    if key == CoreOptions.MANIFEST_FORMAT.key and value.strip() and value.strip().lower() != "avro":
        return (
            f"option 'manifest.format'={value!r} is not supported by lsmlake: it writes Avro manifests only (it "
            "reads ORC and Parquet ones), and Java reads a table's manifests in the format this names"
        )
    return None


def check_option_value(key: str, value: str) -> None:
    """A known option's value must parse as its type (bool, integer, memory size, duration, enum)."""
    declared = BY_KEY.get(key)
    if declared is None:
        declared = FALLBACK_KEYS.get(key)
    if declared is not None:
        declared.from_text(value, key)


def _check_entries(options: Mapping[str, str], *, what: str) -> None:
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidOptionError(f"option {key!r}: keys and values must be strings")
        reason = refusal(key, value)
        if reason is not None:
            raise UnsupportedError(reason)
        if not is_known_option(key):
            raise unknown_option_error(key, what=what)
        check_option_value(key, value)


def validate_create_options(
    options: Mapping[str, str], *, primary_key_table: bool, dynamic_keys: frozenset[str] = frozenset()
) -> None:
    """Reject unknown, refused and malformed options before a table is created (``dynamic_keys``: the
    keys a read or write gives on top of the table's, which some checks leave alone, as Paimon does)."""
    _check_entries(options, what="table option")
    file_index_columns(options)
    opts = CoreOptions.of(options, primary_key_table=primary_key_table)
    _validate_snapshot_ordering(opts, primary_key_table=primary_key_table, dynamic_keys=dynamic_keys)
    bucket = opts.bucket
    if bucket == 0 or bucket < -2:
        raise InvalidOptionError(f"option 'bucket': {bucket} is not a bucket count (>0, -1 or -2)")
    if opts.file_format not in ("parquet", "orc", "avro"):
        raise InvalidOptionError(f"option 'file.format': {opts.file_format!r} is not parquet, orc or avro")
    if not primary_key_table and bucket > 0 and not opts.get(CoreOptions.BUCKET_KEY):
        raise InvalidOptionError("append table with a fixed bucket count needs option 'bucket-key'")
    if opts.merge_engine not in ("deduplicate", "first-row", "partial-update", "aggregation"):
        raise InvalidOptionError(f"option 'merge-engine': unknown engine {opts.merge_engine!r}")
    _validate_merge_options(opts, primary_key_table=primary_key_table)
    _validate_file_settings(opts)
    validate_external_paths(opts)
    validate_write_buffer(opts)
    period = opts.auto_tag_period
    if period is not None and opts.get(CoreOptions.TAG_CREATION_DELAY) >= period.period_ms:
        raise InvalidOptionError(
            f"option 'tag.creation-delay' ({opts.raw.get(CoreOptions.TAG_CREATION_DELAY.key)}) must be shorter "
            "than the tag creation period"
        )


def _validate_file_settings(opts: CoreOptions) -> None:
    """Per-level formats, compressions and stats modes, and every stats mode, must be ones lsmlake writes."""
    for level, fmt in opts.per_level(CoreOptions.FILE_FORMAT_PER_LEVEL).items():
        if fmt.strip().lower() not in WRITTEN_FORMATS:
            raise InvalidOptionError(
                f"option 'file.format.per.level': level {level} format {fmt!r} is not {', '.join(WRITTEN_FORMATS)}"
            )
    formats = opts.per_level(CoreOptions.FILE_FORMAT_PER_LEVEL)
    for level, codec in opts.per_level(CoreOptions.FILE_COMPRESSION_PER_LEVEL).items():
        fmt = formats.get(level, opts.file_format).strip().lower()
        known = WRITTEN_COMPRESSIONS.get(fmt, ())
        if fmt == "avro" and opts.get(CoreOptions.AVRO_CODEC) is not None:
            known = ()  # Java's Avro writer takes avro.codec over the level's compression
        if known and codec.strip().lower() not in known:
            raise InvalidOptionError(
                f"option 'file.compression.per.level': level {level} compression {codec!r} is not one of "
                f"{', '.join(known)} (the {fmt} codecs)"
            )
    for level, mode in opts.per_level(CoreOptions.METADATA_STATS_MODE_PER_LEVEL).items():
        check_stats_mode(f"metadata.stats-mode.per.level (level {level})", mode)
    for option in (CoreOptions.METADATA_STATS_MODE, CoreOptions.CHANGELOG_FILE_STATS_MODE):
        key = opts.key_set(option)
        if key is not None:
            check_stats_mode(key, opts.raw[key])
    suffix = "." + STATS_MODE_SUFFIX
    for key, value in opts.raw.items():
        if key.startswith(FIELDS_PREFIX) and key.endswith(suffix):
            check_stats_mode(key, value)


def _validate_snapshot_ordering(opts: CoreOptions, *, primary_key_table: bool, dynamic_keys: frozenset[str]) -> None:
    """Paimon 2.x's checks of sequence.snapshot-ordering; write-only may be turned off dynamically (by a
    dedicated compaction)."""
    key = CoreOptions.SEQUENCE_SNAPSHOT_ORDERING.key
    if not opts.get(CoreOptions.SEQUENCE_SNAPSHOT_ORDERING):
        return
    if not primary_key_table:
        raise InvalidOptionError(
            f"{key} = true requires a primary-key table; append-only tables cannot use snapshot-based sequence "
            "ordering"
        )
    if opts.sequence_fields:
        raise InvalidOptionError(
            f"{key} = true is mutually exclusive with sequence.field; the snapshot id is the sole tiebreaker"
        )
    write_only = CoreOptions.WRITE_ONLY.key
    if write_only not in dynamic_keys and not opts.get(CoreOptions.WRITE_ONLY):
        raise InvalidOptionError(
            f"{key} = true requires {write_only} = true: rows are ordered by the snapshot id their commit "
            "stamps, and a compaction inside a write runs before that id exists (compact with table.compact)"
        )


def validate_write_buffer(opts: CoreOptions) -> None:
    """The write buffer's sizes must leave it at least one page, and a spill needs two runs to merge."""
    size, page = opts.get(CoreOptions.WRITE_BUFFER_SIZE), opts.get(CoreOptions.PAGE_SIZE)
    if page <= 0:
        raise InvalidOptionError(f"option 'page-size': {opts.raw.get('page-size')!r} must be positive")
    if size < page:
        raise InvalidOptionError(
            f"option 'write-buffer-size' ({size} bytes) must be at least one 'page-size' ({page} bytes)"
        )
    threshold = opts.get(CoreOptions.SORT_SPILL_THRESHOLD)
    if threshold is not None and threshold < 2:
        raise InvalidOptionError(f"option 'sort-spill-threshold': {threshold} is smaller than 2")


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
    snap_min, snap_max = CoreOptions.SNAPSHOT_NUM_RETAINED_MIN.key, CoreOptions.SNAPSHOT_NUM_RETAINED_MAX.key
    checks = (
        (snap_min, None, snap_max, None),
        (
            CoreOptions.CHANGELOG_NUM_RETAINED_MIN.key,
            snap_min,
            CoreOptions.CHANGELOG_NUM_RETAINED_MAX.key,
            snap_max,
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
    order = opts.get(CoreOptions.SEQUENCE_FIELD_SORT_ORDER)
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
    if opts.is_set(CoreOptions.FULL_COMPACTION_DELTA_COMMITS) and producer == "lookup":
        raise InvalidOptionError(
            "'full-compaction.delta-commits' is incompatible with 'changelog-producer'='lookup'. Use "
            "'changelog-producer'='full-compaction' to get periodic full compaction with changelog "
            "generation, or remove 'full-compaction.delta-commits'."
        )
    if producer in ("lookup", "full-compaction") and opts.get(CoreOptions.STREAMING_READ_OVERWRITE):
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
    _check_entries(dynamic, what="dynamic option")
    base = {k: v for k, v in table_options.items() if is_known_option(k) and refusal(k, v) is None}
    try:
        validate_create_options(
            {**base, **dynamic}, primary_key_table=primary_key_table, dynamic_keys=frozenset(dynamic)
        )
    except InvalidOptionError:
        try:
            validate_create_options(base, primary_key_table=primary_key_table)
        except InvalidOptionError:
            return  # the table's own options already fail lsmlake's checks: not the dynamic options' doing
        raise
