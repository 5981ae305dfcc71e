"""Table options: Paimon's names and defaults declared once, typed access, and validation at create time."""

from __future__ import annotations

from lsmlake.core.options.config_option import ConfigOption, parse_duration_ms, parse_memory_size
from lsmlake.core.options.core_options import FIELDS_PREFIX, CoreOptions
from lsmlake.core.options.registry import BY_KEY, all_options
from lsmlake.core.options.stored import check_readable, check_writable
from lsmlake.core.options.table_doc import options_table
from lsmlake.core.options.validation import (
    check_option_value,
    is_known_option,
    refusal,
    unknown_option_error,
    validate_create_options,
    validate_dynamic_options,
)

__all__ = [
    "BY_KEY",
    "FIELDS_PREFIX",
    "ConfigOption",
    "CoreOptions",
    "all_options",
    "check_option_value",
    "check_readable",
    "check_writable",
    "is_known_option",
    "options_table",
    "parse_duration_ms",
    "parse_memory_size",
    "refusal",
    "unknown_option_error",
    "validate_create_options",
    "validate_dynamic_options",
]
