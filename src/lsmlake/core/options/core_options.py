"""A table's options as a typed, read-only view: ``options.get(CoreOptions.BUCKET)`` and derived values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar, overload

from lsmlake.core.options.config_option import ConfigOption, parse_bool, parse_int, parse_memory_size
from lsmlake.core.options.map_option import check_stats_mode, level_map
from lsmlake.core.options.registry import BY_KEY, OptionDeclarations
from lsmlake.core.tag_period import TagPeriod, tag_period
from lsmlake.errors import InvalidOptionError

T = TypeVar("T")

FIELDS_PREFIX = "fields."
STATS_MODE_SUFFIX = "stats-mode"
_MANIFEST_CODECS = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}


@dataclass(frozen=True)
class CoreOptions(OptionDeclarations):
    """A typed, read-only view of a table's options with Paimon's defaults."""

    raw: Mapping[str, str]
    primary_key_table: bool = True

    @staticmethod
    def of(options: Mapping[str, str], *, primary_key_table: bool) -> CoreOptions:
        return CoreOptions(MappingProxyType(dict(options)), primary_key_table)

    @overload
    def get(self, option: ConfigOption[T]) -> T: ...
    @overload
    def get(self, option: str) -> str | None: ...
    def get(self, option: ConfigOption[T] | str) -> T | str | None:
        """A declared option's typed value (its key, else the first fallback key set, else its default);
        given a key, the text set for it or the declared default's text."""
        if isinstance(option, str):
            if option in self.raw:
                return self.raw[option]
            declared = BY_KEY.get(option)
            return declared.default_text if declared is not None else None
        key = self.key_set(option)
        return option.default if key is None else option.from_text(self.raw[key], key)

    def key_set(self, option: ConfigOption[Any]) -> str | None:
        """The key the option is read from: itself, else the first fallback key present (as Paimon: the first
        present key decides, even when it says false); None when none is set."""
        return next((k for k in (option.key, *option.fallback_keys) if k in self.raw), None)

    def is_set(self, option: ConfigOption[Any]) -> bool:
        return self.key_set(option) is not None

    # -- string keys, for options named at run time (``fields.<column>.<option>``) and for callers' tests
    def get_bool(self, key: str) -> bool:
        return parse_bool(key, self.get(key) or "false")

    def get_int(self, key: str, default: int | None = None) -> int:
        value = self.get(key)
        if value is None:
            if default is None:
                raise InvalidOptionError(f"option {key!r} is not set")
            return default
        return parse_int(key, value)

    def get_size(self, key: str) -> int:
        value = self.get(key)
        if value is None:
            raise InvalidOptionError(f"option {key!r} is not set")
        return parse_memory_size(key, value)

    def field_option(self, field: str, name: str) -> str | None:
        """``fields.<field>.<name>``, e.g. a column's aggregate function."""
        return self.raw.get(f"{FIELDS_PREFIX}{field}.{name}")

    def field_flag(self, field: str, name: str) -> bool:
        value = self.field_option(field, name)
        return value is not None and parse_bool(f"{FIELDS_PREFIX}{field}.{name}", value)

    def per_level(self, option: ConfigOption[Mapping[str, str]]) -> dict[int, str]:
        """A per-level map option (``file.format.per.level`` ...) as levels to values."""
        return level_map(option, self.raw)

    def field_stats_mode(self, field: str) -> str | None:
        """``fields.<field>.stats-mode`` lower-cased, None when unset."""
        mode = self.field_option(field, STATS_MODE_SUFFIX)
        return None if mode is None else check_stats_mode(f"{FIELDS_PREFIX}{field}.{STATS_MODE_SUFFIX}", mode)

    # -- values derived from one or more options
    @property
    def bucket(self) -> int:
        return self.get(CoreOptions.BUCKET)

    @property
    def file_format(self) -> str:
        return self.get(CoreOptions.FILE_FORMAT)

    @property
    def file_compression(self) -> str:
        return self.get(CoreOptions.FILE_COMPRESSION)

    @property
    def zstd_level(self) -> int:
        return self.get(CoreOptions.FILE_COMPRESSION_ZSTD_LEVEL)

    @property
    def manifest_codec(self) -> str:
        codec = self.get(CoreOptions.MANIFEST_COMPRESSION)
        return _MANIFEST_CODECS.get(codec, codec)

    @property
    def target_file_size(self) -> int:
        size = self.get(CoreOptions.TARGET_FILE_SIZE)
        return size if size is not None else (128 if self.primary_key_table else 256) * 1024**2

    @property
    def merge_engine(self) -> str:
        return self.get(CoreOptions.MERGE_ENGINE)

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.get(CoreOptions.DELETION_VECTORS_ENABLED)

    @property
    def changelog_producer(self) -> str:
        return self.get(CoreOptions.CHANGELOG_PRODUCER)

    @property
    def ignore_delete_key(self) -> str:
        """The key ``ignore-delete`` is read from: itself, else the first of its fallback keys that is set."""
        return self.key_set(CoreOptions.IGNORE_DELETE) or CoreOptions.IGNORE_DELETE.key

    @property
    def ignore_delete(self) -> bool:
        return self.get(CoreOptions.IGNORE_DELETE)

    @property
    def rowkind_field(self) -> str | None:
        return self.get(CoreOptions.ROWKIND_FIELD)

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        value = self.get(CoreOptions.SEQUENCE_FIELD)
        return tuple(s.strip() for s in value.split(",") if s.strip()) if value else ()

    @property
    def sequence_descending(self) -> bool:
        """``sequence.field.sort-order`` = descending: the lowest sequence wins."""
        return self.get(CoreOptions.SEQUENCE_FIELD_SORT_ORDER) == "descending"

    @property
    def partition_default_name(self) -> str:
        return self.get(CoreOptions.PARTITION_DEFAULT_NAME)

    @property
    def partition_legacy_name(self) -> bool:
        return self.get(CoreOptions.PARTITION_LEGACY_NAME)

    @property
    def commit_max_retries(self) -> int:
        return self.get(CoreOptions.COMMIT_MAX_RETRIES)

    @property
    def manifest_target_size(self) -> int:
        return self.get(CoreOptions.MANIFEST_TARGET_FILE_SIZE)

    @property
    def manifest_merge_min_count(self) -> int:
        return self.get(CoreOptions.MANIFEST_MERGE_MIN_COUNT)

    @property
    def manifest_full_compaction_size(self) -> int:
        return self.get(CoreOptions.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE)

    @property
    def data_file_prefix(self) -> str:
        return self.get(CoreOptions.DATA_FILE_PREFIX)

    @property
    def num_sorted_run_stop_trigger(self) -> int:
        """Paimon's default: the compaction trigger + 3 (never below the trigger)."""
        trigger = self.get(CoreOptions.NUM_SORTED_RUN_COMPACTION_TRIGGER)
        stop = self.get(CoreOptions.NUM_SORTED_RUN_STOP_TRIGGER)
        return max(trigger, trigger + 3 if stop is None else stop)

    @property
    def sort_spill_threshold(self) -> int:
        """Paimon's default: num-sorted-run.stop-trigger + 1."""
        threshold = self.get(CoreOptions.SORT_SPILL_THRESHOLD)
        return self.num_sorted_run_stop_trigger + 1 if threshold is None else threshold

    @property
    def num_levels(self) -> int:
        """Paimon's default: the compaction trigger + 1."""
        levels = self.get(CoreOptions.NUM_LEVELS)
        return self.get(CoreOptions.NUM_SORTED_RUN_COMPACTION_TRIGGER) + 1 if levels is None else levels

    @property
    def dynamic_bucket_initial_buckets(self) -> int:
        """1 when unset (lsmlake's one assigner starts every partition with one bucket)."""
        initial = self.get(CoreOptions.DYNAMIC_BUCKET_INITIAL_BUCKETS)
        return 1 if initial is None else initial

    @property
    def full_compaction_delta_commits(self) -> int:
        """0 when unset: no periodic full compaction."""
        return self.get(CoreOptions.FULL_COMPACTION_DELTA_COMMITS) or 0

    @property
    def auto_tag_period(self) -> TagPeriod | None:
        """The period of automatic tags when `tag.automatic-creation` is process-time or watermark."""
        if self.get(CoreOptions.TAG_AUTOMATIC_CREATION) not in ("process-time", "watermark"):
            return None
        return tag_period(
            self.get(CoreOptions.TAG_CREATION_PERIOD),
            self.get(CoreOptions.TAG_PERIOD_FORMATTER),
            self.get(CoreOptions.TAG_CREATION_PERIOD_DURATION),
        )
