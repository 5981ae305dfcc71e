"""Every table option lsmlake knows, declared once with Paimon's key, type and default."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lsmlake.core.options.config_option import (
    NO_EFFECT,
    ConfigOption,
    _option,
    bool_option,
    double_option,
    duration_option,
    enum_option,
    int_option,
    lower_option,
    memory_option,
    optional_duration,
    optional_int,
    optional_memory,
    optional_string,
    string_option,
)
from lsmlake.core.options.engine_tuning import EngineTuningDeclarations
from lsmlake.core.options.map_option import map_option
from lsmlake.core.partition_time import check_formatter
from lsmlake.core.tag_period import FORMATTERS as FORMATTER_NAMES
from lsmlake.core.tag_period import PERIODS, parse_zone

PERIODS_NAMES = tuple(PERIODS)
READ_BATCH_SIZE_DEFAULT = 16_384
"""Chosen by measurement (issue 22, 1M rows, 2 cores): streaming a compacted table in 1024-row batches
ran at 2.3M rows/s, in 16384-row batches at 4.6M (whole-table to_arrow: 3.5M); merged splits alike."""
EXTERNAL_PATH_STRATEGIES = ("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin")
SCAN_MODES = (
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
)


class OptionDeclarations(EngineTuningDeclarations):
    """The declarations, read as ``options.get(CoreOptions.BUCKET)`` (``CoreOptions`` inherits them, and these
    inherit the engine-tuning options lsmlake accepts with no effect)."""

    # -- layout: buckets, partitions, files
    BUCKET = int_option("bucket", -1, "Bucket count: a fixed number, -1 dynamic, -2 postpone.")
    BUCKET_KEY = optional_string("bucket-key", "Columns that route rows to buckets (default: the primary key).")
    BUCKET_FUNCTION_TYPE = enum_option(
        "bucket-function.type", "default", ("default", "mod", "hive"), "How a bucket key is hashed to a bucket."
    )
    DYNAMIC_BUCKET_TARGET_ROW_NUM = int_option(
        "dynamic-bucket.target-row-num", 2_000_000, "Rows per bucket before a dynamic-bucket table opens a new one."
    )
    DYNAMIC_BUCKET_INITIAL_BUCKETS = optional_int(
        "dynamic-bucket.initial-buckets", "Buckets a partition starts with in dynamic-bucket mode (lsmlake: 1)."
    )
    DYNAMIC_BUCKET_MAX_BUCKETS = int_option(
        "dynamic-bucket.max-buckets", -1, "Most buckets per partition in dynamic-bucket mode (-1: no limit)."
    )
    DYNAMIC_BUCKET_ASSIGNER_PARALLELISM = optional_int(
        "dynamic-bucket.assigner-parallelism",
        f"{NO_EFFECT} (a Flink parallelism: lsmlake has one assigner, which keeps every key in the bucket "
        "the index gives it).",
    )
    CROSS_PARTITION_UPSERT_INDEX_TTL = optional_duration(
        "cross-partition-upsert.index-ttl", f"{NO_EFFECT} (a Flink state TTL)."
    )
    CROSS_PARTITION_UPSERT_BOOTSTRAP_PARALLELISM = int_option(
        "cross-partition-upsert.bootstrap-parallelism", 10, f"{NO_EFFECT} (a Flink parallelism)."
    )
    POSTPONE_DEFAULT_BUCKET_NUM = optional_int(
        "postpone.default-bucket-num", "Buckets a postponed partition gets when first compacted."
    )
    POSTPONE_TARGET_ROW_NUM_PER_BUCKET = optional_int(
        "postpone.target-row-num-per-bucket", "Rows per bucket when estimating a postponed partition's buckets."
    )
    POSTPONE_TARGET_SIZE_PER_BUCKET = memory_option(
        "postpone.target-size-per-bucket", "1 gb", "Bytes per bucket when estimating a postponed partition's buckets."
    )
    POSTPONE_BATCH_WRITE_FIXED_BUCKET = bool_option(
        "postpone.batch-write-fixed-bucket",
        True,
        "Postpone tables: true, writes (batch, as all of lsmlake's) go straight to real buckets, readable at "
        "once (a partition keeps its files' bucket count; a new one gets "
        "min(writers, postpone.batch-write-fixed-bucket.max-parallelism) = 1 bucket, lsmlake having one writer); "
        "false, to "
        "bucket-postpone until a compaction.",
    )
    POSTPONE_MERGE_ON_READ = bool_option(
        "postpone.merge-on-read",
        False,
        "Paimon 2.x: false, batch reads leave out rows still in the postpone bucket (lsmlake reads only so: true "
        "is refused, and a postpone table that holds true cannot be read in batch).",
    )
    PARTITION_DEFAULT_NAME = string_option(
        "partition.default-name", "__DEFAULT_PARTITION__", "Directory name of a null partition value."
    )
    PARTITION_LEGACY_NAME = bool_option(
        "partition.legacy-name", True, "Partition directory names as Paimon's legacy toString."
    )
    PARTITION_EXPIRATION_TIME = optional_duration(
        "partition.expiration-time", "Drop partitions older than this after commits (unset: never)."
    )
    PARTITION_EXPIRATION_CHECK_INTERVAL = duration_option(
        "partition.expiration-check-interval", "1 h", "Least time between partition expiry checks of one process."
    )
    PARTITION_EXPIRATION_STRATEGY = enum_option(
        "partition.expiration-strategy",
        "values-time",
        ("values-time", "update-time"),
        "A partition's age: from its values (values-time) or its newest file (update-time).",
    )
    PARTITION_EXPIRATION_MAX_NUM = int_option(
        "partition.expiration-max-num", 100, "Most partitions one expiry drops."
    )
    PARTITION_EXPIRATION_BATCH_SIZE = optional_int(
        "partition.expiration-batch-size", "Partitions dropped per commit of one expiry (unset: all in one)."
    )
    PARTITION_TIMESTAMP_FORMATTER = _option(
        "partition.timestamp-formatter",
        "string",
        check_formatter,
        None,
        "Java DateTimeFormatter pattern of partition times (yyyy, MM, dd, HH, mm, ss, SSS; default y-M-d[ H:m:s]).",
        (),
    )
    PARTITION_TIMESTAMP_PATTERN = optional_string(
        "partition.timestamp-pattern", "How partition values form a time, e.g. '$year-$month-$day' (default: the first)."
    )
    PARTITION_END_INPUT_TO_DONE = bool_option(
        "partition.end-input-to-done",
        False,
        "A batch write marks the partitions it wrote done (partition.mark-done-action).",
    )
    PARTITION_MARK_DONE_ACTION = string_option(
        "partition.mark-done-action",
        "success-file",
        "How a partition is marked done: success-file (a _SUCCESS file in its directory; the only action lsmlake has).",
    )
    PATH = optional_string("path", "The table's location (set by the catalog).")
    FILE_FORMAT = lower_option("file.format", "parquet", "Data file format: parquet, orc or avro.")
    AVRO_CODEC = optional_string(
        "avro.codec",
        "Avro codec of avro data files (null, deflate, snappy, bzip2, xz, zstandard); default: from file.compression.",
    )
    FILE_COMPRESSION = lower_option("file.compression", "zstd", "Data file compression codec.")
    FILE_COMPRESSION_ZSTD_LEVEL = int_option("file.compression.zstd-level", 1, "zstd level of data files.")
    FILE_SUFFIX_INCLUDE_COMPRESSION = bool_option(
        "file.suffix.include.compression",
        False,
        "Data and changelog file names carry the codec's extension before the format's "
        "('data-<uuid>-0.zst.parquet').",
    )
    TARGET_FILE_SIZE = optional_memory(
        "target-file-size", "Data file size to roll at (128 mb for primary-key tables, 256 mb for append tables)."
    )
    DATA_FILE_PREFIX = string_option("data-file.prefix", "data-", "File name prefix of data files.")
    FILE_FORMAT_PER_LEVEL = map_option(
        "file.format.per.level",
        "Primary-key tables: the format (parquet, orc or avro) of the data files written for a level, e.g. "
        "'0:avro,5:parquet' (other levels: file.format; changelog files: changelog-file.format when set). A "
        "file moved up a level "
        "unchanged keeps its format, except that a lookup compaction rewrites a level-0 file whose "
        "format differs from its output level's.",
    )
    FILE_COMPRESSION_PER_LEVEL = map_option(
        "file.compression.per.level",
        "Primary-key tables: the compression of the data files written for a level, e.g. '0:lz4,1:zstd' "
        "(other levels: file.compression).",
    )
    METADATA_STATS_MODE_PER_LEVEL = map_option(
        "metadata.stats-mode.per.level",
        "Primary-key tables: the stats mode of the data files written for a level, e.g. '0:none' (other "
        "levels: metadata.stats-mode; fields.<column>.stats-mode still wins for its column).",
    )
    DATA_FILE_EXTERNAL_PATHS = optional_string(
        "data-file.external-paths",
        "Roots (comma-separated URIs on the table's storage) that data, changelog and data-file index files "
        "are written under, in <root>/<partition>/bucket-<n>/, when data-file.external-paths.strategy is not "
        "none; expiry and orphan cleaning delete them there, and dropping the table deletes the roots.",
    )
    DATA_FILE_EXTERNAL_PATHS_STRATEGY = enum_option(
        "data-file.external-paths.strategy",
        "none",
        EXTERNAL_PATH_STRATEGIES,
        "How a new file's external root is chosen: none (files stay under the table), round-robin (in turn, "
        "from a random start per bucket writer), specific-fs (round-robin over the roots of the scheme "
        "data-file.external-paths.specific-fs), weight-robin (at random by data-file.external-paths.weights), "
        "entropy-inject (in turn, under hash directories of the file name).",
    )
    DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS = optional_string(
        "data-file.external-paths.specific-fs",
        "The scheme (e.g. s3, oss) of the external roots used by the specific-fs strategy.",
    )
    DATA_FILE_EXTERNAL_PATHS_WEIGHTS = optional_string(
        "data-file.external-paths.weights",
        "Positive integer weights of the external roots, in order, for the weight-robin strategy (e.g. '10,5').",
    )
    DATA_FILE_PATH_DIRECTORY = optional_string(
        "data-file.path-directory", "Directory under the table root that holds the data files."
    )
    DATA_FILE_THIN_MODE = bool_option(
        "data-file.thin-mode",
        False,
        f"{NO_EFFECT} (lsmlake writes the key columns into every data file, as Paimon does without it).",
    )
    INDEX_FILE_IN_DATA_FILE_DIR = bool_option(
        "index-file-in-data-file-dir", False, "Index files live in the bucket directories."
    )
    METADATA_STATS_MODE = string_option(
        "metadata.stats-mode",
        "truncate(16)",
        "Column stats kept per data file: none, counts, truncate(N), full; a column's "
        "fields.<column>.stats-mode wins over it. Key stats (_KEY_ columns) are truncate(128), except in Avro "
        "files, where every column takes the mode (Java's createStatsFactoriesForAvro).",
    )
    METADATA_STATS_DENSE_STORE = bool_option(
        "metadata.stats-dense-store",
        True,
        "Stats of only the columns that have them (listed in _VALUE_STATS_COLS); false: every column's, "
        "null for a column of stats mode none.",
    )
    METADATA_STATS_KEEP_FIRST_N_COLUMNS = int_option(
        "metadata.stats-keep-first-n-columns",
        -1,
        "Stats of only the first N table columns (those with a fields.<column>.stats-mode count too); the "
        "others get none (-1: every column).",
    )
    FILE_INDEX_IN_MANIFEST_THRESHOLD = memory_option(
        "file-index.in-manifest-threshold", "500 b", "File indexes up to this size are embedded in the manifest."
    )
    FILE_INDEX_READ_ENABLED = bool_option(
        "file-index.read.enabled", True, "Whether planning reads file indexes to skip data files."
    )
    CHANGELOG_FILE_PREFIX = string_option("changelog-file.prefix", "changelog-", "File name prefix of changelog files.")
    CHANGELOG_FILE_FORMAT = optional_string("changelog-file.format", "Format of changelog files (default: file.format).")
    CHANGELOG_FILE_COMPRESSION = optional_string(
        "changelog-file.compression", "Compression of changelog files (default: file.compression)."
    )
    CHANGELOG_FILE_STATS_MODE = optional_string(
        "changelog-file.stats-mode", "Stats mode of changelog files (default: metadata.stats-mode)."
    )
    DELETION_VECTOR_INDEX_FILE_TARGET_SIZE = memory_option(
        "deletion-vector.index-file.target-size", "2 mb", f"{NO_EFFECT} (one index file per bucket)."
    )
    # -- manifests
    MANIFEST_FORMAT = enum_option(
        "manifest.format",
        "avro",
        ("avro",),
        f"{NO_EFFECT} (manifests are Avro, Paimon's default and the only format lsmlake writes; other values are "
        "refused).",
    )
    MANIFEST_DELETE_FILE_DROP_STATS = bool_option(
        "manifest.delete-file-drop-stats",
        False,
        "A compaction's manifest entries for the files it read (DELETE, and the ADD of a file only moved up) carry "
        "no value stats.",
    )
    MANIFEST_COMPRESSION = lower_option("manifest.compression", "zstd", "Manifest file compression codec.")
    MANIFEST_TARGET_FILE_SIZE = memory_option("manifest.target-file-size", "8 mb", "Size of a merged manifest file.")
    MANIFEST_MERGE_MIN_COUNT = int_option(
        "manifest.merge-min-count", 30, "Manifest files that trigger a minor merge of small manifests."
    )
    MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = memory_option(
        "manifest.full-compaction-threshold-size", "16 mb", "Deleted-entry bytes that trigger a full manifest merge."
    )
    # -- write and merge
    WRITE_BUFFER_SIZE = memory_option(
        "write-buffer-size",
        "256 mb",
        "Bytes one writer buffers in memory, shared by all its buckets; when full, the largest buffers flush "
        "(or spill) in the background.",
    )
    WRITE_BUFFER_SPILLABLE = bool_option(
        "write-buffer-spillable",
        True,
        "Primary-key tables: a full buffer spills a sorted run to a local temporary directory instead of "
        "writing a data file; a bucket's runs are merged into data files at commit.",
    )
    WRITE_BUFFER_MAX_DISK_SIZE = memory_option(
        "write-buffer-spill.max-disk-size",
        "9223372036854775807 b",
        "Local disk a writer's spilled runs may use; beyond it buffers flush to data files.",
    )
    WRITE_BUFFER_FOR_APPEND = bool_option(
        "write-buffer-for-append", False, f"{NO_EFFECT} (a Java append writer's memory; the rows are the same)."
    )
    PAGE_SIZE = memory_option("page-size", "64 kb", "Unit in which the write buffer budget is counted.")
    SORT_SPILL_THRESHOLD = optional_int(
        "sort-spill-threshold",
        "Most sorted runs merged at once when spilled runs become data files (default: "
        "num-sorted-run.stop-trigger + 1; at least 2).",
    )
    WRITE_SEQUENCE_NUMBER_INIT_MODE = enum_option(
        "write.sequence-number-init-mode",
        "scan",
        ("scan", "snapshot"),
        "Paimon 2.x: scan starts a bucket's sequence numbers above its files'; snapshot also above the highest "
        "number the latest snapshot records, and every commit records it in the snapshot's properties "
        "(sequence.generation.max-sequence-number).",
    )
    WRITE_ONLY = bool_option(
        "write-only", False, "Skip compaction and expiry after a write.", fallback=("write.compaction-skip",)
    )
    MERGE_ENGINE = lower_option(
        "merge-engine", "deduplicate", "deduplicate, first-row, partial-update or aggregation."
    )
    IGNORE_DELETE = bool_option(
        "ignore-delete",
        False,
        "Drop delete rows on write.",
        fallback=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"),
    )
    IGNORE_UPDATE_BEFORE = bool_option("ignore-update-before", False, "Drop -U rows on write.")
    ROWKIND_FIELD = optional_string("rowkind.field", "Column that carries each row's kind (+I, -U, +U, -D).")
    SEQUENCE_FIELD = optional_string("sequence.field", "Columns that order versions of a key.")
    SEQUENCE_FIELD_SORT_ORDER = lower_option(
        "sequence.field.sort-order", "ascending", "ascending: the highest sequence wins; descending: the lowest."
    )
    SEQUENCE_SNAPSHOT_ORDERING = bool_option(
        "sequence.snapshot-ordering",
        False,
        "Paimon 2.x: rows of a later snapshot win a key (each commit stamps its snapshot id into its new files' "
        "sequence numbers, and reads order an appended file's rows by it); needs a primary key, write-only=true "
        "(compact with table.compact) and no sequence.field.",
    )
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = bool_option(
        "partial-update.remove-record-on-delete", False, "A delete removes the whole row (partial-update)."
    )
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP = optional_string(
        "partial-update.remove-record-on-sequence-group", "Sequence groups whose delete removes the row."
    )
    AGGREGATION_REMOVE_RECORD_ON_DELETE = bool_option(
        "aggregation.remove-record-on-delete", False, "A delete removes the whole row (aggregation)."
    )
    PRIMARY_KEY_NULLABLE = bool_option("primary-key.nullable", False, "Primary-key columns may hold nulls.")
    DELETION_VECTORS_ENABLED = bool_option(
        "deletion-vectors.enabled", False, "Mark replaced rows in deletion vectors, so reads need no merge."
    )
    DELETION_VECTORS_MERGE_ON_READ = bool_option(
        "deletion-vectors.merge-on-read", False, "Merge level-0 files on read although vectors are on."
    )
    DELETION_VECTORS_MODIFIABLE = bool_option(
        "deletion-vectors.modifiable",
        False,
        "Lets an ALTER (or a dynamic option) turn deletion-vectors.enabled on or off on a table holding data "
        "(checked against the table's options before the change); as in Paimon, reads may then show duplicate or "
        "deleted rows until a full compaction.",
    )
    DELETION_VECTORS_BITMAP64 = bool_option("deletion-vectors.bitmap64", False, "64-bit deletion vector bitmaps.")
    DATA_EVOLUTION_ENABLED = replace(
        bool_option("data-evolution.enabled", False, "Row-tracking data evolution."),
        refused="lsmlake cannot write or read data-evolution tables",
    )
    CHANGELOG_PRODUCER = lower_option(
        "changelog-producer", "none", "none, input, lookup or full-compaction."
    )
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE = bool_option(
        "changelog-producer.row-deduplicate", False, "No -U/+U pair when an update changes nothing."
    )
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS = optional_string(
        "changelog-producer.row-deduplicate-ignore-fields", "Columns ignored by row-deduplicate."
    )
    LOOKUP_WAIT = bool_option(
        "lookup-wait",
        True,
        f"{NO_EFFECT}: Paimon reads it only in Flink's streaming sink (whether a checkpoint's commit waits for "
        "the lookup compaction or takes its result in a later commit); Paimon's batch writes and a Flink batch "
        "job's last commit always wait, as every lsmlake commit does.",
        fallback=("changelog-producer.lookup-wait",),
    )
    FORCE_LOOKUP = bool_option("force-lookup", False, "Compact with lookups as the lookup producer does.")
    LOOKUP_COMPACT = enum_option(
        "lookup-compact",
        "radical",
        ("radical", "gentle"),
        "Lookup tables: radical compacts level 0 up in every compaction; gentle only when universal "
        "compaction picks it, or on every lookup-compact.max-interval-th compaction of one writer.",
    )
    LOOKUP_COMPACT_MAX_INTERVAL = optional_int(
        "lookup-compact.max-interval",
        "Gentle mode: the compactions of one writer between forced level-0 compactions (default: twice "
        "num-sorted-run.compaction-trigger, at least that trigger).",
    )
    LOOKUP_CACHE_MAX_MEMORY_SIZE = memory_option(
        "lookup.cache-max-memory-size",
        "256 mb",
        "Bytes of each process-wide lookup cache: data files' key columns, and row groups table.lookup decoded.",
    )
    LOOKUP_CACHE_MAX_DISK_SIZE = memory_option(
        "lookup.cache-max-disk-size",
        "9223372036854775807 b",
        "Bytes of local lookup files: data files table.lookup decoded, memory-mapped from a temporary directory.",
    )
    LOOKUP_CACHE_FILE_RETENTION = duration_option(
        "lookup.cache-file-retention",
        "1 h",
        "Idle time after which a local lookup file is deleted (files of compacted-away data are never used again).",
    )
    # -- compaction
    NUM_LEVELS = optional_int("num-levels", "Levels of the LSM tree (default: compaction trigger + 1).")
    NUM_SORTED_RUN_COMPACTION_TRIGGER = int_option(
        "num-sorted-run.compaction-trigger", 5, "Sorted runs that trigger a compaction."
    )
    NUM_SORTED_RUN_STOP_TRIGGER = optional_int(
        "num-sorted-run.stop-trigger", "Sorted runs at which compaction goes on at once (default: trigger + 3)."
    )
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT = int_option(
        "compaction.max-size-amplification-percent", 200, "Size amplification that triggers a full compaction."
    )
    COMPACTION_SIZE_RATIO = int_option("compaction.size-ratio", 1, "Size ratio (percent) that merges runs.")
    COMPACTION_OFFPEAK_START_HOUR = int_option(
        "compaction.offpeak.start.hour", -1, "First off-peak hour (0-23, local time; -1: no off-peak hours)."
    )
    COMPACTION_OFFPEAK_END_HOUR = int_option(
        "compaction.offpeak.end.hour",
        -1,
        "Hour off-peak time ends, exclusive (0-23, local time; -1 or equal to the start: no off-peak hours).",
    )
    COMPACTION_OFFPEAK_RATIO = int_option(
        "compaction.offpeak-ratio", 0, "Added to compaction.size-ratio during off-peak hours."
    )
    COMPACTION_FORCE_REWRITE_ALL_FILES = bool_option(
        "compaction.force-rewrite-all-files",
        False,
        "Compactions rewrite every file they pick instead of moving it up a level, and a full compaction of a "
        "bucket already at the top level rewrites all its files.",
    )
    COMPACTION_DELETE_RATIO_THRESHOLD = double_option(
        "compaction.delete-ratio-threshold",
        0.2,
        f"{NO_EFFECT}: Paimon reads it only in append-table compaction (a file whose deletion vector covers more "
        "than this share of its rows is rewritten), and lsmlake does not compact append tables.",
    )
    COMPACTION_MIN_FILE_NUM = int_option("compaction.min.file-num", 5, f"{NO_EFFECT} (append compaction).")
    COMPACTION_OPTIMIZATION_INTERVAL = optional_duration(
        "compaction.optimization-interval", "A full compaction when this long has passed since the last one."
    )
    COMPACTION_TOTAL_SIZE_THRESHOLD = optional_memory(
        "compaction.total-size-threshold", "A full compaction while a bucket is smaller than this."
    )
    COMPACTION_INCREMENTAL_SIZE_THRESHOLD = optional_memory(
        "compaction.incremental-size-threshold", "A full compaction when data above the last level exceeds this."
    )
    FULL_COMPACTION_DELTA_COMMITS = optional_int(
        "full-compaction.delta-commits", "Full compaction after this many commits."
    )
    # -- commit and expiry
    COMMIT_MAX_RETRIES = int_option(
        "commit.max-retries", 60, "Retries of a commit that loses the race for a snapshot id (Paimon: 10)."
    )
    COMMIT_MIN_RETRY_WAIT = duration_option("commit.min-retry-wait", "10 ms", "Shortest wait before a retry.")
    COMMIT_MAX_RETRY_WAIT = duration_option("commit.max-retry-wait", "1 s", "Longest wait before a retry (Paimon: 10 s).")
    COMMIT_STRICT_MODE_LAST_SAFE_SNAPSHOT = optional_int(
        "commit.strict-mode.last-safe-snapshot",
        "A commit fails when, after this snapshot, another writer committed a COMPACT or OVERWRITE snapshot "
        "(or, for an OVERWRITE commit, an APPEND of files in real buckets), as Paimon's strict mode; a "
        "rescale sets it to the snapshot it rewrites.",
    )
    COMMIT_TIMEOUT = optional_duration(
        "commit.timeout", "How long a commit that loses races may keep retrying (unbounded: by count only)."
    )
    COMMIT_USER_PREFIX = optional_string(
        "commit.user-prefix", "Prefix of the commit user a write's snapshots name ('<prefix>_<uuid>')."
    )
    COMMIT_FORCE_CREATE_SNAPSHOT = bool_option(
        "commit.force-create-snapshot",
        False,
        f"{NO_EFFECT} (Paimon forces only a Flink streaming checkpoint with no data to commit a snapshot; "
        "lsmlake's commits are batch commits, which Paimon's BatchWriteBuilder does not force. An empty "
        "batch commit makes a snapshot when snapshot.ignore-empty-commit is false).",
    )
    SNAPSHOT_IGNORE_EMPTY_COMMIT = bool_option(
        "snapshot.ignore-empty-commit",
        True,
        "Whether a commit with nothing to write publishes no snapshot (Paimon's default for batch commits); "
        "false: it publishes an empty APPEND snapshot and runs the after-commit work (automatic tags, expiry).",
    )
    HEAL_LEVEL0_BUCKETS = int_option(
        "lsmlake.commit.heal-level0-buckets",
        4,
        "lsmlake only: a commit to a table whose batch reads skip level 0 (deletion vectors, first-row) "
        "also compacts the level-0 files of at most this many other buckets (left by an interrupted "
        "commit or a lost compaction race); 0 turns it off.",
    )
    SNAPSHOT_NUM_RETAINED_MIN = int_option("snapshot.num-retained.min", 10, "Fewest snapshots kept by expiry.")
    SNAPSHOT_NUM_RETAINED_MAX = int_option(
        "snapshot.num-retained.max", 2147483647, "Most snapshots kept by expiry."
    )
    SNAPSHOT_TIME_RETAINED = duration_option("snapshot.time-retained", "1 h", "Age beyond which snapshots expire.")
    SNAPSHOT_EXPIRE_LIMIT = int_option("snapshot.expire.limit", 50, "Most snapshots expired at a time.")
    SNAPSHOT_CLEAN_EMPTY_DIRECTORIES = bool_option(
        "snapshot.clean-empty-directories",
        False,
        "Expiry removes directories it left empty.",
        fallback=("snapshot.expire.clean-empty-directories",),
    )
    CHANGELOG_NUM_RETAINED_MIN = optional_int(
        "changelog.num-retained.min", "Fewest changelogs kept (default: snapshot.num-retained.min)."
    )
    CHANGELOG_NUM_RETAINED_MAX = optional_int(
        "changelog.num-retained.max", "Most changelogs kept (default: snapshot.num-retained.max)."
    )
    CHANGELOG_TIME_RETAINED = optional_duration(
        "changelog.time-retained", "Age beyond which changelogs expire (default: snapshot.time-retained)."
    )
    RECORD_LEVEL_EXPIRE_TIME = optional_duration(
        "record-level.expire-time",
        "Compaction drops rows whose record-level.time-field is older than this (no guarantee of timeliness).",
    )
    RECORD_LEVEL_TIME_FIELD = optional_string(
        "record-level.time-field",
        "Column that ages rows for record-level.expire-time: INT seconds, BIGINT seconds or milliseconds, "
        "or a TIMESTAMP.",
    )
    # -- tags
    TAG_AUTOMATIC_CREATION = enum_option(
        "tag.automatic-creation",
        "none",
        ("none", "process-time", "watermark", "batch"),
        "Create tags after commits: by the snapshots' commit time (process-time) or watermark, or one "
        "tag per batch write (batch).",
    )
    TAG_CREATION_PERIOD = enum_option(
        "tag.creation-period", "daily", PERIODS_NAMES, "How often an automatic tag is created."
    )
    TAG_CREATION_PERIOD_DURATION = optional_duration(
        "tag.creation-period-duration", "A custom tag period (names 'yyyyMMddHHmm'); tag.creation-period is then ignored."
    )
    TAG_CREATION_DELAY = duration_option(
        "tag.creation-delay", "0 ms", "How long after a period ends its tag is created (lets late data in)."
    )
    TAG_PERIOD_FORMATTER = enum_option(
        "tag.period-formatter",
        "with_dashes",
        FORMATTER_NAMES,
        "Automatic tag names: with_dashes ('yyyy-MM-dd HH'), without_dashes ('yyyyMMdd HH'), "
        "without_dashes_and_spaces ('yyyyMMddHH').",
    )
    TAG_NUM_RETAINED_MAX = optional_int(
        "tag.num-retained-max", "Most automatic tags kept (the oldest go; batch mode counts every tag)."
    )
    TAG_DEFAULT_TIME_RETAINED = optional_duration(
        "tag.default-time-retained", "How long automatic tags, and tags made by Table.create_tag, are kept."
    )
    TAG_TIME_EXPIRE_ENABLED = bool_option(
        "tag.time-expire-enabled", True, "After commits, delete tags whose time retained has passed."
    )
    TAG_AUTOMATIC_COMPLETION = bool_option(
        "tag.automatic-completion", False, "Create the tags of periods that had no snapshot, one per commit."
    )
    TAG_BATCH_CUSTOMIZED_NAME = optional_string(
        "tag.batch.customized-name", "The tag name of batch mode (default 'batch-write-yyyy-MM-dd')."
    )
    SINK_PROCESS_TIME_ZONE = _option(
        "sink.process-time-zone",
        "string",
        parse_zone,
        None,
        "Time zone of process-time tags and batch tag names (default: this machine's).",
        (),
    )
    SINK_WATERMARK_TIME_ZONE = _option(
        "sink.watermark-time-zone", "string", parse_zone, "UTC", "Time zone of watermark tags.", ()
    )
    OVERWRITE_UPGRADE = bool_option(
        "overwrite-upgrade",
        True,
        "An overwrite that compacts nothing (write-only) moves each bucket's new files to the top level when "
        "their keys do not overlap, so reads that skip level 0 (deletion vectors, first-row) see them.",
    )
    DYNAMIC_PARTITION_OVERWRITE = bool_option(
        "dynamic-partition-overwrite", True, "An overwrite replaces only the partitions it writes."
    )
    # -- scan and read
    SOURCE_SPLIT_TARGET_SIZE = memory_option("source.split.target-size", "128 mb", "Bytes per read split.")
    SOURCE_SPLIT_OPEN_FILE_COST = memory_option(
        "source.split.open-file-cost", "4 mb", "What opening a file weighs when splits are packed."
    )
    SCAN_MODE = enum_option("scan.mode", "default", SCAN_MODES, "Where a read or stream starts.")
    SCAN_SNAPSHOT_ID = optional_int("scan.snapshot-id", "Read this snapshot (or stream from it).")
    SCAN_TIMESTAMP_MILLIS = optional_int("scan.timestamp-millis", "Read the snapshot as of this epoch millisecond.")
    SCAN_TIMESTAMP = optional_string("scan.timestamp", "Read the snapshot as of this time ('yyyy-MM-dd HH:mm:ss').")
    SCAN_TAG_NAME = optional_string("scan.tag-name", "Read this tag.")
    SCAN_VERSION = optional_string("scan.version", "Read this tag or snapshot id.")
    SCAN_FALLBACK_BRANCH = optional_string(
        "scan.fallback-branch", "A batch read takes the partitions the table lacks from this branch."
    )
    SCAN_WATERMARK = optional_int("scan.watermark", "Read the first snapshot with at least this watermark.")
    SCAN_PLAN_SORT_PARTITION = bool_option(
        "scan.plan-sort-partition", False, f"{NO_EFFECT} (the order of a Flink stream's splits; the rows are the same)."
    )
    READ_BATCH_SIZE = int_option(
        "read.batch-size",
        READ_BATCH_SIZE_DEFAULT,
        "Most rows in one batch of a streaming read (to_batches, iterating a scan); files are read and "
        "merged in pieces of about this size. Paimon's default is 1024; lsmlake's is 16384, as Arrow's "
        "cost per batch halved the rows/s of 1024-row batches (measured).",
    )
    INCREMENTAL_BETWEEN = optional_string("incremental-between", "Read the changes between two snapshots or tags.")
    INCREMENTAL_BETWEEN_TIMESTAMP = optional_string(
        "incremental-between-timestamp", "Read the changes between two timestamps."
    )
    INCREMENTAL_BETWEEN_SCAN_MODE = enum_option(
        "incremental-between-scan-mode", "auto", ("auto", "delta", "changelog", "diff"), "What an incremental read returns."
    )
    INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT = bool_option(
        "incremental-between-tag-to-snapshot", False, "Read tags of incremental-between as their snapshots."
    )
    CONSUMER_ID = optional_string("consumer-id", "Stream consumer whose progress is saved.")
    CONSUMER_IGNORE_PROGRESS = bool_option("consumer.ignore-progress", False, "Start afresh despite saved progress.")
    CONSUMER_EXPIRATION_TIME = optional_duration(
        "consumer.expiration-time", "After commits, delete consumers whose progress was last saved longer ago than this."
    )
    CONTINUOUS_DISCOVERY_INTERVAL = duration_option(
        "continuous.discovery-interval", "10 s", "How often a stream looks for new snapshots."
    )
    STREAMING_READ_SNAPSHOT_DELAY = optional_duration(
        "streaming.read.snapshot.delay", "A stream reads a snapshot only once it is this old."
    )
    STREAMING_READ_OVERWRITE = bool_option("streaming-read-overwrite", False, "A stream reads overwrite snapshots.")
    ADD_COLUMN_BEFORE_PARTITION = bool_option(
        "add-column-before-partition",
        False,
        "ALTER ... ADD COLUMN without a position puts the column before the first partition column.",
    )
    # -- table properties
    OWNER = optional_string("owner", "The table's owner (a property).")
    COMMENT = optional_string("comment", "The table's comment (a property).")


def all_options() -> tuple[ConfigOption[Any], ...]:
    """Every declaration, in declaration order (the registry's, then the engine-tuning ones it inherits)."""
    return tuple(v for cls in OptionDeclarations.__mro__ for v in vars(cls).values() if isinstance(v, ConfigOption))


BY_KEY: dict[str, ConfigOption[Any]] = {o.key: o for o in all_options()}
MAP_OPTIONS: tuple[ConfigOption[Any], ...] = tuple(o for o in all_options() if o.type_name == "map")
"""Options that may also be set one entry per key (``file.format.per.level.0 = orc``)."""
FALLBACK_KEYS: dict[str, ConfigOption[Any]] = {k: o for o in all_options() for k in o.fallback_keys}
