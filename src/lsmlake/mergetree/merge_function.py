"""Merge engines behind one tiny protocol: fold the rows of each key into one, vectorized.

The same engine object serves the write buffer, the compaction rewriter and the merge reader. Rows
reach it sorted by (key, sequence order) -- see ``merge_sort_keys`` -- with ``_SEQUENCE_NUMBER``,
``_VALUE_KIND`` and whichever table columns the caller holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.errors import LsmlakeError, UnsupportedError
from lsmlake.mergetree.engines.aggregation import Aggregation
from lsmlake.mergetree.engines.aggregators import AGGREGATORS
from lsmlake.mergetree.engines.config import EngineConfig, check_option_functions, engine_config
from lsmlake.mergetree.engines.partial_update import PartialUpdate
from lsmlake.mergetree.engines.scalar import PARTIAL_UPDATE_DELETE_ERROR
from lsmlake.mergetree.engines.segments import sort_nulls_first
from lsmlake.mergetree.engines.simple import FIRST_ROW_DELETE_ERROR, Deduplicate, FirstRow
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND, RowKind, is_retract

__all__ = [
    "Aggregation",
    "Deduplicate",
    "FirstRow",
    "MergeFunction",
    "PartialUpdate",
    "drop_retracts",
    "merge_function_for",
    "merge_sort_keys",
    "sort_for_merge",
]


class MergeFunction(Protocol):
    """Folds rows sorted by (key, sequence order) into one result row per key."""

    def merge(self, rows: pa.Table, key_names: Sequence[str], *, reduce_singles: bool = True) -> pa.Table:
        """One row per key, in key order; the result may be a retract row, which readers then drop.

        With ``reduce_singles`` a key's only row is returned unchanged (Paimon's reducer wrapper);
        lookup compactions pass False, so every key goes through the engine.
        """
        ...


def engine_config_of(schema: TableSchema, options: CoreOptions) -> EngineConfig:
    """The engine configuration of a primary-key table, validated against its schema."""
    fields = [(f.name, f.type) for f in schema.fields]
    return engine_config(fields, list(schema.primary_keys), options)


def merge_function_for(options: CoreOptions, schema: TableSchema | None = None) -> MergeFunction:
    """The merge engine a table's options ask for (partial-update and aggregation need the schema)."""
    engine = options.merge_engine
    if engine == "deduplicate":
        return Deduplicate(ignore_delete=options.ignore_delete)
    if engine == "first-row":
        return FirstRow(ignore_delete=options.ignore_delete)
    if engine not in ("partial-update", "aggregation"):
        raise UnsupportedError(f"merge-engine {engine!r} is not supported")
    if schema is None:
        raise ValueError(f"merge-engine {engine} needs the table schema")
    cfg = engine_config_of(schema, options)
    return PartialUpdate(cfg) if engine == "partial-update" else Aggregation(cfg)


def validate_merge_engine(schema: TableSchema) -> None:
    """Reject, at create time, merge-engine options Paimon rejects for this schema (with the reason)."""
    if not schema.primary_keys:
        return
    options = CoreOptions.of(schema.options, primary_key_table=True)
    check_option_functions(options.raw)
    engine_config_of(schema, options)


def read_columns(merge_function: MergeFunction, names: Sequence[str]) -> list[str]:
    """Columns to read so that merging ``names`` is exact (partial-update needs its sequence groups)."""
    if isinstance(merge_function, PartialUpdate):
        return merge_function.read_columns(names)
    return list(names)


def merge_sort_keys(
    key_names: Sequence[str], options: CoreOptions, *, seq_column: str | None = SEQUENCE_NUMBER
) -> list[tuple[str, str]]:
    """Paimon's merge order: key, then ``sequence.field`` (its sort order, nulls first), then arrival."""
    order = "descending" if options.sequence_descending else "ascending"
    keys = [(k, "ascending") for k in key_names]
    keys += [(s, order) for s in options.sequence_fields if options.merge_engine != "first-row"]
    if seq_column is not None:
        keys.append((seq_column, "ascending"))
    return keys


sort_indices = sort_nulls_first


def sort_for_merge(rows: pa.Table, key_names: Sequence[str], options: CoreOptions) -> pa.Table:
    """``rows`` in merge order."""
    keys = merge_sort_keys(key_names, options)
    return rows.take(sort_indices(rows.select([k for k, _ in keys]), keys))


def drop_retracts(rows: pa.Table) -> pa.Table:
    """Rows that are not UPDATE_BEFORE or DELETE."""
    kinds = rows.column(VALUE_KIND).to_numpy()
    retract = is_retract(kinds)
    return rows.filter(pa.array(np.logical_not(retract))) if retract.any() else rows


def check_input_kinds(merge_function: MergeFunction, kinds: np.ndarray, *, table_name: str) -> None:
    """Refuse, at write time, row kinds the engine would refuse when it merges them."""
    retract = is_retract(kinds)
    if not retract.any():
        return
    where = f"table {table_name}"
    if isinstance(merge_function, FirstRow) and not merge_function.ignore_delete:
        raise LsmlakeError(f"{where}: {FIRST_ROW_DELETE_ERROR}")
    if isinstance(merge_function, PartialUpdate):
        cfg = merge_function.cfg
        if not (cfg.ignore_delete or cfg.remove_record_on_delete or cfg.groups):
            raise LsmlakeError(f"{where}: {PARTIAL_UPDATE_DELETE_ERROR}")
        if not cfg.ignore_delete:
            for name, func in cfg.functions.items():
                ignored = cfg.options.get(f"fields.{name}.ignore-retract", "false").lower() == "true"
                if cfg.group_of(name) is not None and not AGGREGATORS[func].retractable and not ignored:
                    raise LsmlakeError(
                        f"{where}: aggregate function '{func}' of field '{name}' does not support retraction "
                        f"(UPDATE_BEFORE/DELETE rows); set 'fields.{name}.ignore-retract' = 'true' to ignore "
                        "them"
                    )
    if isinstance(merge_function, Aggregation):
        cfg = merge_function.cfg
        retracting = retract if not cfg.remove_record_on_delete else kinds == RowKind.UPDATE_BEFORE
        if retracting.any():
            for name, func in cfg.functions.items():
                ignored = cfg.options.get(f"fields.{name}.ignore-retract", "false").lower() == "true"
                if not AGGREGATORS[func].retractable and not ignored:
                    raise LsmlakeError(
                        f"{where}: aggregate function '{func}' of field '{name}' does not support retraction "
                        f"(UPDATE_BEFORE/DELETE rows); set 'fields.{name}.ignore-retract' = 'true' to ignore "
                        "them"
                        + (
                            ""
                            if cfg.remove_record_on_delete
                            else ", or 'aggregation.remove-record-on-delete' = 'true' to delete rows"
                        )
                    )
