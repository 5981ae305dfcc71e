"""overwrite-upgrade (Paimon's default true): an overwrite that compacts nothing moves each bucket's new level-0
files to the top level when their keys do not overlap, so a deletion-vector or first-row table written
write-only shows the overwritten rows at once, as Java's; overlapping files, or the option off, stay at level 0."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from layouts import INT, parse_layout

import lsmlake
from lsmlake.commit.overwrite_upgrade import upgraded
from lsmlake.core.types import DataType
from lsmlake.metadata.manifest import FileKind, ManifestEntry

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _table(tmp_path: Path, options: dict[str, str]) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2", "write-only": "true", **options}
    )
    table.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([1, 2], pa.int64())}))
    return table


def _levels(table: lsmlake.Table) -> list[int]:
    catalog = lsmlake.Catalog(str(Path(table.root).parents[1]))
    return sorted(catalog.get_table("db.t$files").read().column("level").to_pylist())


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "v": pa.array([i * 10 for i in ids], pa.int64())})


@pytest.mark.parametrize(
    "options",
    [
        {"deletion-vectors.enabled": "true"},
        {"merge-engine": "first-row"},
        {"deletion-vectors.enabled": "true", "num-levels": "3"},
    ],
)
def test_a_write_only_overwrite_lands_at_the_top_level_and_reads(
    tmp_path: Path, options: dict[str, str]
) -> None:
    table = _table(tmp_path, options)
    table.overwrite(_rows([3, 4, 5, 6]))
    top = table.options.num_levels - 1
    assert _levels(table) == [top, top]  # one file per bucket, each moved up
    assert table.read().sort_by("id").to_pylist() == _rows([3, 4, 5, 6]).to_pylist()


def test_without_overwrite_upgrade_the_files_stay_at_level_0(tmp_path: Path) -> None:
    table = _table(tmp_path, {"deletion-vectors.enabled": "true", "overwrite-upgrade": "false"})
    table.overwrite(_rows([3, 4]))
    assert _levels(table) == [0, 0]
    assert table.read().num_rows == 0  # as Java: a deletion-vector read skips level 0 until a compaction
    table.compact()
    assert table.read().sort_by("id").to_pylist() == _rows([3, 4]).to_pylist()


def _entries(layout: str, *, bucket: int = 0) -> list[ManifestEntry]:
    return [ManifestEntry(FileKind.ADD, b"p", bucket, 1, f) for f in parse_layout(layout)]


def _upgraded_levels(entries: list[ManifestEntry], key_types: list[DataType] | None = None) -> list[int]:
    return sorted(e.file.level for e in upgraded(entries, [INT] if key_types is None else key_types, 5))


def test_the_upgrade_policy() -> None:
    assert _upgraded_levels(_entries("L0: [1,3] [4,9] [10,10]")) == [5, 5, 5]
    assert _upgraded_levels(_entries("L0: [1,3] [3,9]")) == [0, 0]  # touching keys overlap (Java: >= 0)
    assert _upgraded_levels(_entries("L0: [1,5] [2,3]")) == [0, 0]
    two = _entries("L0: [1,5] [2,3]") + _entries("L0: [1,5]", bucket=1)
    assert _upgraded_levels(two) == [0, 0, 5]  # judged per bucket
    assert _upgraded_levels(_entries("L0: [1,3] | L1: [5,6]")) == [0, 1]  # a file above level 0: none moves
    assert _upgraded_levels(_entries("L0: [1,3]", bucket=-2)) == [0]  # the postpone bucket: none moves
    assert _upgraded_levels(_entries("L0: [1,3]"), key_types=[]) == [0]  # an append table: none moves


def test_an_overwrite_that_compacts_is_not_upgraded(tmp_path: Path) -> None:
    table = _table(tmp_path, {"deletion-vectors.enabled": "true", "write-only": "false"})
    table.overwrite(_rows([3, 4]))
    assert table.read().sort_by("id").to_pylist() == _rows([3, 4]).to_pylist()
    snapshots = lsmlake.Catalog(str(Path(table.root).parents[1])).get_table("db.t$snapshots").read()
    assert snapshots.column("commit_kind").to_pylist()[-2:] == ["OVERWRITE", "COMPACT"]
