"""Checks of the options a table already holds (made by Java or an older lsmlake): what lsmlake must refuse
to read, and what it must refuse to write, because it cannot do what the option asks.

CREATE TABLE and ALTER refuse such options up front; a table made elsewhere reaches lsmlake with them
stored. A stored option is judged by what it asks of the next reader or writer:

- a read-side option changes what a reader must do to return the table's rows (a chain table's branches,
  BLOB columns, row authorisation, postponed rows merged on read): reads fail naming it;
- a write-side option changes what a write, compaction or commit must do (a manifest format, commit
  callbacks, per-level formats, external data paths): writes fail before any file is written;
- anything else, and any refused option stored with Paimon's default value, asks nothing of lsmlake.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lsmlake.core.options.core_options import CoreOptions
from lsmlake.core.options.registry import BY_KEY, FALLBACK_KEYS
from lsmlake.core.options.validation import refusal, validate_create_options
from lsmlake.errors import InvalidOptionError, UnsupportedError

_READ_SIDE_PREFIXES = ("format-table.", "chain-table.")
_READ_SIDE_KEYS = frozenset(
    {
        "type",
        "data-evolution.enabled",
        "query-auth.enabled",
        "scan.fallback-snapshot-branch",
        "scan.fallback-delta-branch",
        "scan.primary-branch",
        "scan.file-creation-time-millis",
        "scan.creation-time-millis",
        "scan.bounded.watermark",
        "streaming-read-append-overwrite",
        "consumer.mode",
        "consumer.changelog-only",
        "incremental-to-auto-tag",
        "table-read.sequence-number.enabled",
        "key-value.sequence_number.enabled",
        "stream-scan-mode",
        "batch-scan-mode",
        "pk-clustering-override",
        "blob-field",
        "blob-descriptor-field",
        "blob-as-descriptor",
        "vector-field",
    }
)
"""Refused keys that change what a read returns (any other refused key changes what a write must do)."""

_HARMLESS_PREFIXES = ("materialized-table.", "global-index.")
_HARMLESS_KEYS = frozenset(
    {
        "branch",
        "primary-key",
        "partition",
        "auto-create",
        "scan.ignore-corrupt-files",  # lsmlake fails on a corrupt or lost file: loud, never a wrong answer
        "scan.ignore-lost-files",
        "alter-column-null-to-not-null.disabled",  # schema changes, which lsmlake's ALTER checks itself
        "disable-explicit-type-casting",
    }
)
"""Refused keys that ask nothing of a reader or writer (Flink metadata, schema-change policy, global
indexes, which only data-evolution tables have and those are refused on read)."""

PAIMON_DEFAULTS = {
    "type": "table",
    "branch": "main",
    "commit.callbacks": "",
    "tag.callbacks": "",
    "clustering.strategy": "auto",
    "consumer.mode": "exactly-once",
    "lookup.remote-file.level-threshold": "-2147483648",
}
"""The text of a refused key that asks nothing of lsmlake, where it is not ``false`` (Paimon's default of most
refused boolean keys)."""


def _asks_nothing(key: str, value: str) -> bool:
    """A refused key stored with Paimon's default value (Java writes some into every schema it makes)."""
    text = value.strip().lower()
    return text == PAIMON_DEFAULTS.get(key, "false")


def _side(key: str) -> str | None:
    """``"read"``, ``"write"`` or None (harmless, or judged on its own below) for a refused key."""
    if key == CoreOptions.POSTPONE_MERGE_ON_READ.key:
        return None  # asks something only of a batch read of a postpone table: the scan planner checks it
    if key in _HARMLESS_KEYS or key.startswith(_HARMLESS_PREFIXES):
        return None
    if key in _READ_SIDE_KEYS or key.startswith(_READ_SIDE_PREFIXES):
        return "read"
    return "write"


def _refused(options: Mapping[str, str], side: str) -> Iterable[tuple[str, str, str]]:
    """``(key, value, reason)`` of each refused option of ``side`` stored with a value that asks something."""
    marks_done = CoreOptions.of(options, primary_key_table=True).get(CoreOptions.PARTITION_END_INPUT_TO_DONE)
    for key, value in options.items():
        reason = refusal(key, value)
        if reason is None or _side(key) != side or _asks_nothing(key, value):
            continue
        if key == CoreOptions.PARTITION_MARK_DONE_ACTION.key and not marks_done:
            continue  # asks something only of a write that marks partitions done (Table.mark_partitions_done checks)
        yield key, value, reason


def check_readable(options: CoreOptions, *, table: str) -> None:
    """Refuse to read a table whose options ask a reader for what lsmlake cannot do (a clear error naming
    the option, never rows that differ from what Java reads); the scan planner adds postpone.merge-on-read."""
    for _key, value, reason in _refused(options.raw, "read"):
        raise UnsupportedError(f"table {table}: cannot read it: stored {reason} (it is set to {value!r})")


def check_writable(options: CoreOptions, *, table: str, dynamic_keys: Iterable[str] = ()) -> None:
    """Refuse, before any file is written, a write, compaction or commit to a table whose options ask a
    writer for what lsmlake cannot do, hold a malformed value, or combine as Paimon's checks refuse."""
    for _key, value, reason in (*_refused(options.raw, "read"), *_refused(options.raw, "write")):
        raise UnsupportedError(f"table {table}: cannot write it: stored {reason} (it is set to {value!r})")
    checked = {
        k: v for k, v in options.raw.items() if (k in BY_KEY or k in FALLBACK_KEYS) and refusal(k, v) is None
    }
    try:
        validate_create_options(
            checked, primary_key_table=options.primary_key_table, dynamic_keys=frozenset(dynamic_keys)
        )
    except (InvalidOptionError, UnsupportedError) as e:
        raise type(e)(f"table {table}: cannot write it: {e}") from None
