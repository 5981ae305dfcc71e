"""The lean single-key lookup path: when it answers, it answers as the general path and a filtered read do;
when it cannot, it leaves the key to the general path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.core.caches import registered
from lsmlake.core.fileio import FileIO
from lsmlake.core.schema import TableSchema
from lsmlake.errors import NoSuchColumnError
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager
from lsmlake.read.lookup_point import lookup_point
from lsmlake.schema_change import add_column
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.int32())])


def _table(
    tmp_path: Path, options: dict[str, str], schema: pa.Schema = SCHEMA, **kw: object
) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", schema=schema, primary_key=["id"], options=options, **kw)  # type: ignore[arg-type]


def _rows(ids: list[int], tag: str = "n") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"{tag}{i}" for i in ids],
            "v": pa.array([i % 7 for i in ids], pa.int32()),
        }
    )


def _general(t: lsmlake.Table, key: int, columns: list[str] | None = None) -> pa.Table:
    """The general path's answer (a key table never takes the lean path) and the filtered read's."""
    got = t.lookup(pa.table({"id": pa.array([key], pa.int64())}), columns)
    read = t.read(filter=f"id = {key}", columns=got.column_names)
    assert got.to_pylist() == read.to_pylist()
    return got


def _lean(t: lsmlake.Table, key: int, columns: list[str] | None = None) -> pa.Table:
    """The lean path's answer, checked to be served by it and equal to the general path's."""
    point = lookup_point(t, None, key, columns)
    assert point is not None, "the lean path did not answer"
    expected = _general(t, key, columns)
    assert point.schema == expected.schema
    assert point.to_pylist() == expected.to_pylist()
    assert t.lookup([key], columns).equals(point)
    return point


def _dv_table(tmp_path: Path, **options: str) -> lsmlake.Table:
    t = _table(tmp_path, {"bucket": "2", "deletion-vectors.enabled": "true", **options})
    t.write(_rows(list(range(0, 2000, 2))))
    t.write(_rows(list(range(0, 2000, 6)), tag="u"))  # upserts: older rows deleted by the vectors
    t.delete(pa.table({"id": pa.array([10, 12, 1998], pa.int64())}))
    return t


def test_lean_path_equals_the_general_path_with_levels_and_deletion_vectors(tmp_path: Path) -> None:
    t = _dv_table(tmp_path)
    assert {f.level for s in t.scan().splits() for f in s.files} != {0}
    for key in [0, 2, 4, 6, 10, 12, 13, 1998, 1996, -1, 5000, 2**62]:
        _lean(t, key)
    assert _lean(t, 6).to_pylist() == [{"id": 6, "name": "u6", "v": 6}]
    assert _lean(t, 4).to_pylist() == [{"id": 4, "name": "n4", "v": 4}]
    assert _lean(t, 12).num_rows == 0 and _lean(t, 13).num_rows == 0
    assert _lean(t, 6, ["v"]).to_pylist() == [{"id": 6, "v": 6}]
    assert t.lookup_one(6) == {"id": 6, "name": "u6", "v": 6}
    assert t.lookup_one(12) is None
    assert t.lookup([{"id": 6}], ["name"]).to_pylist() == [{"id": 6, "name": "u6"}]


def test_lean_path_sees_each_new_snapshot_and_a_rollback(tmp_path: Path) -> None:
    t = _dv_table(tmp_path)
    assert _lean(t, 4).to_pylist()[0]["name"] == "n4"
    sid = t.write(_rows([4], tag="w"))
    assert _lean(t, 4).to_pylist()[0]["name"] == "w4"  # the same handle sees the new latest snapshot
    t.delete(pa.table({"id": pa.array([4], pa.int64())}))
    assert _lean(t, 4).num_rows == 0
    t.rollback_to(sid)
    assert _lean(t, 4).to_pylist()[0]["name"] == "w4"


def test_lean_path_with_bloom_filters_on_the_key(tmp_path: Path) -> None:
    t = _dv_table(tmp_path, **{"file-index.bloom-filter.columns": "id"})
    for key in range(-3, 2003):
        expected = {"id": key, "name": ("u" if key % 6 == 0 else "n") + str(key), "v": key % 7}
        live = key % 2 == 0 and 0 <= key < 2000 and key not in (10, 12, 1998)
        assert t.lookup_one(key) == (expected if live else None)
    for key in [0, 3, 6, 2001]:
        _lean(t, key)


def test_lean_path_on_old_files_after_a_column_is_added(tmp_path: Path) -> None:
    t = _dv_table(tmp_path)
    t = t.alter(add_column("extra", "STRING"))
    assert _lean(t, 4).to_pylist() == [{"id": 4, "name": "n4", "v": 4, "extra": None}]


def test_lean_path_leaves_rows_a_read_merges_to_the_general_path(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1", "write-only": "true"})  # level-0 files: a read merges them
    t.write(_rows([1, 2, 3]))
    t.write(_rows([2], tag="u"))
    assert lookup_point(t, None, 2, None) is None
    assert t.lookup([2]).to_pylist() == [{"id": 2, "name": "u2", "v": 2}]
    assert t.lookup_one(2) == {"id": 2, "name": "u2", "v": 2}


@pytest.mark.parametrize(
    ("options", "kw"),
    [
        ({"bucket": "-1"}, {}),  # dynamic buckets: a key may be in any bucket
        ({"bucket": "2"}, {"partition_keys": ["name"], "primary_key": ["id", "name"]}),
        ({"bucket": "2", "scan.snapshot-id": "1"}, {}),  # time travel: the general path
    ],
)
def test_lean_path_does_not_apply(tmp_path: Path, options: dict[str, str], kw: dict[str, object]) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    pk = kw.pop("primary_key", ["id"])
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=pk, options=options, **kw)  # type: ignore[arg-type]
    t.write(_rows([1, 2, 3]))
    assert lookup_point(t, None, 2, None) is None
    assert lookup_point(t, "id", 2, None) is None
    row = {"id": 2, "name": "n2", "v": 2}
    assert t.lookup([{"id": 2, "name": "n2"}] if len(pk) == 2 else [2]).to_pylist() == [row]


def test_lean_path_refuses_what_the_general_path_refuses(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("v", pa.int32())])
    t = _table(tmp_path, {"bucket": "2", "deletion-vectors.enabled": "true"}, schema)
    t.write(pa.table({"id": pa.array([1], pa.int32()), "name": ["a"], "v": pa.array([1], pa.int32())}))
    assert lookup_point(t, None, 1, None) is not None
    for bad in (2**31, True, "1", 1.5):  # out of the key's range, or not an integer
        assert lookup_point(t, None, bad, None) is None
    assert lookup_point(t, "name", 1, None) is None  # a column that is not the key
    with pytest.raises(ValueError, match="lookup key column 'id'"):
        t.lookup([2**31])
    with pytest.raises(ValueError, match="lack primary-key column"):
        t.lookup({"name": [1]})
    with pytest.raises(NoSuchColumnError, match="nope"):
        t.lookup([1], ["nope"])


def test_clear_caches_forgets_the_lean_paths_state(tmp_path: Path) -> None:
    t = _dv_table(tmp_path)
    before = _lean(t, 4)
    lsmlake.clear_caches()
    assert not [c for c in registered() if c.name == "lookup point profiles" and c.entries]
    assert _lean(t, 4).equals(before)


def test_lean_path_drops_a_retraction_it_finds_alone(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1"})
    t.write(_rows(list(range(100))))
    t.compact(full=True)
    t.delete(pa.table({"id": pa.array([500], pa.int64())}))  # a DELETE row no other file overlaps
    t.write(_rows([700]))
    kinds = [
        pq.read_table(next((tmp_path / "wh").rglob(f.file_name))).column("_VALUE_KIND").to_pylist()
        for s in t.scan().splits()
        for f in s.files
        if f.min_key == f.max_key and f.row_count == 1
    ]
    assert [3] in kinds  # RowKind.DELETE, found alone: a read drops it
    assert _lean(t, 500).num_rows == 0
    assert _lean(t, 700).to_pylist() == [{"id": 700, "name": "n700", "v": 0}]


@dataclass
class _CatalogEnv:
    """A catalog that publishes commits to the files (as a server would) and, once ``pinned`` is set,
    says that snapshot is the latest (as after a rollback through the catalog)."""

    io: FileIO
    pinned: Snapshot | None = None

    def check_commit(self, root: str) -> None:
        pass

    def commit_snapshot(
        self, root: str, snapshot: Snapshot, delta: Sequence[ManifestEntry], base_uuid: str | None = None
    ) -> bool:
        return SnapshotManager(self.io, root).try_publish(snapshot)

    def latest_snapshot(self, root: str) -> tuple[bool, Snapshot | None]:
        return (False, None) if self.pinned is None else (True, self.pinned)

    def alter_table(self, root: str, changes: Sequence[Any]) -> TableSchema:
        raise AssertionError("not used")


def test_lean_path_asks_the_catalog_that_keeps_the_latest_snapshot(tmp_path: Path) -> None:
    plain = _table(tmp_path, {"bucket": "1"})
    env = _CatalogEnv(plain.io)
    t = Table("db.t", plain.io, plain.root, plain.schema, catalog_env=env)  # type: ignore[arg-type]
    t.write(_rows([4], tag="a"))
    t.compact(full=True)
    older = t.latest_snapshot()
    assert _lean(t, 4).to_pylist()[0]["name"] == "a4"
    t.write(_rows([4], tag="b"))
    t.compact(full=True)
    assert _lean(t, 4).to_pylist()[0]["name"] == "b4"
    env.pinned = older  # the catalog's latest is the older snapshot; the files still hold the newer ones
    assert t.read(filter="id = 4").to_pylist()[0]["name"] == "a4"
    assert _lean(t, 4).to_pylist()[0]["name"] == "a4"
    assert t.lookup_one(4) == {"id": 4, "name": "a4", "v": 4}


@pytest.mark.parametrize("key_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64()])
def test_lean_path_routes_boundary_and_negative_keys_to_their_bucket(
    tmp_path: Path, key_type: pa.DataType
) -> None:
    bits = key_type.bit_width
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    keys = sorted({low, low + 1, low // 3, -2, -1, 0, 1, 2, high // 3, high - 1, high})
    schema = pa.schema([pa.field("id", key_type, nullable=False), ("name", pa.string())])
    t = _table(tmp_path, {"bucket": "7"}, schema)
    t.write(pa.table({"id": pa.array(keys, key_type), "name": [str(k) for k in keys]}, schema=schema))
    t.compact(full=True)
    assert len({s.bucket for s in t.scan().splits()}) > 1
    for k in keys:  # the lean path's own hash of the value finds each key's bucket
        point = lookup_point(t, None, k, None)
        assert point is not None and point.to_pylist() == [{"id": k, "name": str(k)}]
        assert point.to_pylist() == t.read(filter=f"id = {k}").to_pylist()
