"""pypaimon 2.1.0 streams the changelog lsmlake's compaction producers wrote: exact row kinds and old values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pypaimon_env import pypaimon_stream

import lsmlake

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
KEY_SCHEMA = pa.schema([SCHEMA.field("id")])


def _pypaimon_changes(warehouse: Path, until: int, tmp: Path, consumer_id: str) -> list[tuple[Any, ...]]:
    """pypaimon's streaming read of db.t from the consumer's position up to snapshot ``until``."""
    table = pypaimon_stream(warehouse, until, tmp, consumer_id)
    return [(r["rowkind"], r["id"], r["v"]) for r in table.to_pylist()]


def _strict_replay(model: dict[int, str], changes: list[tuple[Any, ...]]) -> None:
    """Retractions must carry the current value, +I a new key, +U come right after its -U."""
    pending: int | None = None
    for kind, key, value in changes:
        if kind in ("-U", "-D"):
            assert model.pop(key) == value
            pending = key if kind == "-U" else None
        else:
            assert (key not in model) if kind == "+I" else (pending == key)
            model[key] = value
            pending = None


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_pypaimon_streams_compaction_changelog(
    catalog: lsmlake.Catalog, tmp_path: Path, producer: str
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2", "changelog-producer": producer}
    )
    table.write(pa.table({"id": [1, 2, 3], "v": ["a1", "a2", "a3"]}, schema=SCHEMA))
    start = {r["id"]: r["v"] for r in table.read().to_pylist()}
    # lsmlake registers a consumer after the full read; pypaimon resumes from it and follows the changelog
    assert sum(t.num_rows for t in table.stream(consumer_id="c", stop_when_caught_up=True)) == 3
    table.write(pa.table({"id": [2, 4], "v": ["b2", "b4"]}, schema=SCHEMA))
    table.delete(pa.table({"id": [1]}, schema=KEY_SCHEMA))
    table.write(pa.table({"id": [4, 5], "v": ["c4", "c5"]}, schema=SCHEMA))
    latest = table.latest_snapshot().id  # type: ignore[union-attr]
    changes = _pypaimon_changes(Path(catalog.warehouse), latest, tmp_path, "c")
    assert {k for k, _, _ in changes} == {"-U", "+U", "+I", "-D"}
    _strict_replay(start, changes)
    assert start == {r["id"]: r["v"] for r in table.read().to_pylist()}
