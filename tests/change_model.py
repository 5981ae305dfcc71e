"""Test helpers for change streams: apply rows with row kinds to a dict model keyed by primary key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

Model = dict[Any, dict[str, Any]]


def apply_changes(model: Model, changes: pa.Table, key: str) -> Model:
    """Apply +I/+U (set), -U/-D (remove) rows in order; returns ``model`` for chaining."""
    kinds = changes.column("rowkind").to_pylist()
    rows = changes.drop_columns(["rowkind"]).to_pylist()
    for kind, row in zip(kinds, rows, strict=True):
        if kind in ("+I", "+U"):
            model[row[key]] = row
        elif kind in ("-U", "-D"):
            model.pop(row[key], None)
        else:
            raise AssertionError(f"unknown row kind {kind!r}")
    return model


def apply_all(model: Model, tables: Iterable[pa.Table], key: str) -> Model:
    for t in tables:
        apply_changes(model, t, key)
    return model


def as_model(table: pa.Table, key: str) -> Model:
    """A read result as the same dict shape (row kinds, if any, dropped)."""
    if "rowkind" in table.column_names:
        table = table.drop_columns(["rowkind"])
    return {row[key]: row for row in table.to_pylist()}
