"""Merge engines behind one tiny protocol: fold the rows of each key into one, vectorized."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from lsmlake.core.options import CoreOptions
from lsmlake.errors import UnsupportedError
from lsmlake.mergetree.kv_layout import VALUE_KIND, is_retract, key_group_starts, last_of_each_key


class MergeFunction(Protocol):
    """Folds rows sorted by (key, sequence order) into one result row per key."""

    def merge(self, rows: pa.Table, key_names: Sequence[str]) -> pa.Table:
        """One row per key; the result may be a retract row, which readers then drop."""
        ...


class Deduplicate:
    """The newest row of each key wins (deletes included)."""

    def merge(self, rows: pa.Table, key_names: Sequence[str]) -> pa.Table:
        return rows.filter(pa.array(last_of_each_key(rows, key_names)))


class FirstRow:
    """The oldest non-retract row of each key wins; retract rows are ignored."""

    def merge(self, rows: pa.Table, key_names: Sequence[str]) -> pa.Table:
        kinds = rows.column(VALUE_KIND).to_numpy()
        retract = is_retract(kinds)
        if retract.any():
            rows = rows.filter(pa.array(~retract))
        return rows.filter(pa.array(key_group_starts(rows, key_names)))


def merge_function_for(options: CoreOptions) -> MergeFunction:
    """The merge engine a table's options ask for."""
    engine = options.merge_engine
    if engine == "deduplicate":
        return Deduplicate()
    if engine == "first-row":
        return FirstRow()
    raise UnsupportedError(f"merge-engine {engine!r} is not supported yet")


def drop_retracts(rows: pa.Table) -> pa.Table:
    """Rows that are not UPDATE_BEFORE or DELETE."""
    kinds = rows.column(VALUE_KIND).to_numpy()
    retract = is_retract(kinds)
    return rows.filter(pa.array(np.logical_not(retract))) if retract.any() else rows
