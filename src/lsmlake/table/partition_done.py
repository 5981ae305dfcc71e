"""Marking partitions done (Paimon's `partition.mark-done-action` = success-file): a `_SUCCESS` file in
the partition's directory, written after a batch write with `partition.end-input-to-done` or by
``CALL sys.mark_partition_done``."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping, Sequence

from lsmlake.core import clock
from lsmlake.core.binary_row import Timestamp, deserialize_row
from lsmlake.core.options import CoreOptions, refusal
from lsmlake.core.paths import escape_path_name, partition_path
from lsmlake.core.schema import java_pretty_json
from lsmlake.errors import CorruptFileError, InvalidPartitionSpecError, UnsupportedError
from lsmlake.maintenance.orphans import SUCCESS_FILE
from lsmlake.metadata.table_handle import TableHandle

ACTIONS = ("success-file", "done-partition", "mark-event", "http-report", "custom")


def success_file_path(table: TableHandle, partition: str) -> str:
    return posixpath.join(table.root, partition, SUCCESS_FILE)


def mark_done(table: TableHandle, partitions: Iterable[str]) -> list[str]:
    """Write or refresh the `_SUCCESS` file (JSON creationTime / modificationTime, epoch ms) of each
    partition directory (``k=v/...`` relative to the table root); the paths written."""
    action = table.options.get(CoreOptions.PARTITION_MARK_DONE_ACTION)
    reason = refusal(CoreOptions.PARTITION_MARK_DONE_ACTION.key, action)
    if reason is not None:
        raise UnsupportedError(f"table {table.name}: cannot mark partitions done: {reason}")
    now = clock.epoch_millis()
    written = []
    for partition in partitions:
        path = success_file_path(table, partition)
        created = now
        try:
            created = int(json.loads(table.io.read_bytes(path))["creationTime"])
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFileError(f"success file {path} is malformed: {e}") from e
        table.io.write_bytes(
            path, java_pretty_json({"creationTime": created, "modificationTime": now}).encode("utf-8")
        )
        written.append(path)
    return written


def spec_paths(table: TableHandle, specs: Sequence[Mapping[str, object]]) -> list[str]:
    """Partition directories of specs (``{"dt": "20240101"}``), keys in the order given, as Java's
    generatePartitionPath; every key must be a partition key."""
    if not table.partition_keys:
        raise InvalidPartitionSpecError(
            f"table {table.name} is not partitioned: it has no partition to mark done"
        )
    out = []
    for spec in specs:
        unknown = [k for k in spec if k not in table.partition_keys]
        if not spec or unknown:
            raise InvalidPartitionSpecError(
                f"table {table.name}: partition spec {dict(spec)} must name partition keys "
                f"{list(table.partition_keys)}"
            )
        out.append("/".join(f"{escape_path_name(k)}={escape_path_name(str(v))}" for k, v in spec.items()))
    return out


def mark_written_partitions_done(table: TableHandle, partitions: Iterable[bytes]) -> list[str]:
    """After a batch write with `partition.end-input-to-done`: mark the partitions it wrote done."""
    o = table.options
    if not o.get(CoreOptions.PARTITION_END_INPUT_TO_DONE) or not table.partition_keys:
        return []
    keys = list(table.partition_keys)
    types = [table.schema.field(k).type for k in keys]
    paths = {
        partition_path(
            keys,
            [v.to_datetime() if isinstance(v, Timestamp) else v for v in deserialize_row(p, types)],
            types,
            default_name=o.partition_default_name,
            legacy=o.partition_legacy_name,
        )
        for p in partitions
    }
    return mark_done(table, sorted(paths))
