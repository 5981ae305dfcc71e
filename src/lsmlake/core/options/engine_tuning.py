"""Paimon options that tune Java's engines (threads, buffers, spilling, Flink operators): accepted, no effect here.

Each changes how Java Paimon runs, never which rows a table holds or how its files are read, so a
Flink or Spark DDL that sets one creates the same table in lsmlake. The description says why it has no
effect; tests/core/test_option_status.py holds that every such option gives a reason and that nothing
outside the options package reads it (an option that gains an implementation moves to the registry).
"""

from __future__ import annotations

from lsmlake.core.options.config_option import (
    NO_EFFECT,
    bool_option,
    double_option,
    duration_option,
    enum_option,
    int_option,
    memory_option,
    optional_duration,
    optional_int,
    optional_memory,
    optional_string,
    string_option,
)

_JAVA_SPILL = f"{NO_EFFECT} (Java's spill files)."
_JAVA_LOOKUP = f"{NO_EFFECT} (Java's local lookup files and caches)."
_WRITER_BATCH = f"{NO_EFFECT} (the batches of Java's format writers)."
_THREADS = f"{NO_EFFECT} (a Java thread count)."
_SORT_COMPACTION = f"{NO_EFFECT} (Flink's and Spark's sort-compact actions, which lsmlake does not have)."
_VARIANT = f"{NO_EFFECT} (lsmlake writes VARIANT columns unshredded; Java reads both)."
_APPEND_COMPACTION = f"{NO_EFFECT} (append-table compaction of Java's dedicated jobs)."


class EngineTuningDeclarations:
    """The declarations; ``OptionDeclarations`` (and so ``CoreOptions``) inherits them."""

    SORT_ENGINE = enum_option(
        "sort-engine",
        "loser-tree",
        ("min-heap", "loser-tree"),
        f"{NO_EFFECT} (merges are Arrow sorts; the result does not depend on Java's sort engine).",
    )
    SORT_SPILL_BUFFER_SIZE = memory_option("sort-spill-buffer-size", "64 mb", _JAVA_SPILL)
    SPILL_COMPRESSION = string_option("spill-compression", "zstd", _JAVA_SPILL)
    SPILL_COMPRESSION_ZSTD_LEVEL = int_option("spill-compression.zstd-level", 1, _JAVA_SPILL)
    WRITE_MAX_WRITERS_TO_SPILL = int_option("write-max-writers-to-spill", 10, _JAVA_SPILL)
    LOCAL_SORT_MAX_NUM_FILE_HANDLES = int_option("local-sort.max-num-file-handles", 128, _JAVA_SPILL)
    CACHE_PAGE_SIZE = memory_option("cache-page-size", "64 kb", f"{NO_EFFECT} (Java's cache pages).")
    LOOKUP_HASH_LOAD_FACTOR = double_option("lookup.hash-load-factor", 0.75, _JAVA_LOOKUP)
    LOOKUP_CACHE_SPILL_COMPRESSION = string_option("lookup.cache-spill-compression", "zstd", _JAVA_LOOKUP)
    LOOKUP_CACHE_HIGH_PRIORITY_POOL_RATIO = double_option(
        "lookup.cache.high-priority-pool-ratio", 0.25, _JAVA_LOOKUP
    )
    LOOKUP_CACHE_BLOOM_FILTER_ENABLED = bool_option("lookup.cache.bloom.filter.enabled", True, _JAVA_LOOKUP)
    LOOKUP_CACHE_BLOOM_FILTER_FPP = double_option("lookup.cache.bloom.filter.fpp", 0.05, _JAVA_LOOKUP)
    LOOKUP_MERGE_BUFFER_SIZE = memory_option("lookup.merge-buffer-size", "8 mb", _JAVA_LOOKUP)
    LOOKUP_MERGE_RECORDS_THRESHOLD = int_option("lookup.merge-records-threshold", 1024, _JAVA_LOOKUP)
    WRITE_BATCH_SIZE = int_option("write.batch-size", 1024, _WRITER_BATCH, fallback=("orc.write.batch-size",))
    WRITE_BATCH_MEMORY = memory_option("write.batch-memory", "128 mb", _WRITER_BATCH)
    ASYNC_FILE_WRITE = bool_option(
        "async-file-write", True, f"{NO_EFFECT} (Java's asynchronous file writes)."
    )
    FILE_READER_ASYNC_THRESHOLD = memory_option(
        "file-reader-async-threshold", "10 mb", f"{NO_EFFECT} (Java's asynchronous file reads)."
    )
    FILE_BLOCK_SIZE = optional_memory(
        "file.block-size",
        f"{NO_EFFECT} (row groups and stripes are sized by lsmlake's writers; readers take any size).",
    )
    PARQUET_ENABLE_DICTIONARY = optional_int(
        "parquet.enable.dictionary", f"{NO_EFFECT} (a Parquet encoding choice; readers take both)."
    )
    FILE_OPERATION_THREAD_NUM = optional_int(
        "file-operation.thread-num", _THREADS, fallback=("delete-file.thread-num",)
    )
    SCAN_MANIFEST_PARALLELISM = optional_int("scan.manifest.parallelism", _THREADS)
    SCAN_MAX_SPLITS_PER_TASK = int_option(
        "scan.max-splits-per-task", 10, f"{NO_EFFECT} (the split buffer of a Flink source)."
    )
    LOCAL_MERGE_BUFFER_SIZE = optional_memory(
        "local-merge-buffer-size",
        f"{NO_EFFECT} (a Flink operator that pre-merges rows by key before the shuffle; the merged table is the same).",
    )
    PARTITION_SINK_STRATEGY = enum_option(
        "partition.sink-strategy",
        "none",
        ("none", "hash"),
        f"{NO_EFFECT} (how Flink shuffles rows to its writers).",
    )
    POSTPONE_BATCH_WRITE_FIXED_BUCKET_MAX_PARALLELISM = int_option(
        "postpone.batch-write-fixed-bucket.max-parallelism",
        2048,
        "A postpone table's batch write gives a new partition min(writers, this) buckets: 1, lsmlake having one "
        "writer (a value <= 0 is refused on write).",
    )
    BUCKET_APPEND_ORDERED = bool_option(
        "bucket-append-ordered",
        True,
        f"{NO_EFFECT} (the order of a Flink stream over an append table's buckets).",
    )
    SNAPSHOT_WATERMARK_IDLE_TIMEOUT = optional_duration(
        "snapshot.watermark-idle-timeout", f"{NO_EFFECT} (the idleness of a Flink source's watermarks)."
    )
    SNAPSHOT_EXPIRE_EXECUTION_MODE = enum_option(
        "snapshot.expire.execution-mode",
        "sync",
        ("sync", "async"),
        f"{NO_EFFECT} (expiry runs in the process that commits).",
    )
    END_INPUT_CHECK_PARTITION_EXPIRE = bool_option(
        "end-input.check-partition-expire",
        False,
        f"{NO_EFFECT} (lsmlake checks partition expiry after commits, batch or not).",
    )
    PARTITION_IDLE_TIME_TO_REPORT_STATISTIC = duration_option(
        "partition.idle-time-to-report-statistic",
        "0 ms",
        f"{NO_EFFECT} (statistics reported to a Hive metastore).",
    )
    COMMIT_FORCE_COMPACT = bool_option(
        "commit.force-compact",
        False,
        f"{NO_EFFECT} (it makes a Java writer wait for its compaction and commit it with the rows, which "
        "lsmlake's primary-key writes always do; lsmlake does not compact append tables either way).",
    )
    COMPACTION_FILE_NUM_LIMIT = int_option("compaction.file-num-limit", 100_000, _APPEND_COMPACTION)
    SORT_COMPACTION_RANGE_STRATEGY = enum_option(
        "sort-compaction.range-strategy", "size", ("size", "quantity"), _SORT_COMPACTION
    )
    SORT_COMPACTION_LOCAL_SAMPLE_MAGNIFICATION = int_option(
        "sort-compaction.local-sample.magnification", 1000, _SORT_COMPACTION
    )
    ZORDER_VAR_LENGTH_CONTRIBUTION = int_option("zorder.var-length-contribution", 8, _SORT_COMPACTION)
    VARIANT_SHREDDING_SCHEMA = optional_string(
        "variant.shreddingSchema", _VARIANT, fallback=("parquet.variant.shreddingSchema",)
    )
    VARIANT_INFER_SHREDDING_SCHEMA = bool_option("variant.inferShreddingSchema", False, _VARIANT)
    VARIANT_SHREDDING_MAX_SCHEMA_WIDTH = int_option("variant.shredding.maxSchemaWidth", 300, _VARIANT)
    VARIANT_SHREDDING_MAX_SCHEMA_DEPTH = int_option("variant.shredding.maxSchemaDepth", 50, _VARIANT)
    VARIANT_SHREDDING_MIN_FIELD_CARDINALITY_RATIO = double_option(
        "variant.shredding.minFieldCardinalityRatio", 0.1, _VARIANT
    )
    VARIANT_SHREDDING_MAX_INFER_BUFFER_ROW = int_option("variant.shredding.maxInferBufferRow", 4096, _VARIANT)
