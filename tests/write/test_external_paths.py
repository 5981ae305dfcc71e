"""`data-file.external-paths` on the write side: option errors, each strategy's layout, file indexes read
from the roots, orphan cleaning of the roots and what dropping the table deletes."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.external_paths import ExternalPathChooser, entropy_dirs, murmur3_32
from lsmlake.core.options import CoreOptions, validate_create_options
from lsmlake.core.options.external_path_options import external_roots
from lsmlake.core.path_guard import PathRefusedWarning
from lsmlake.errors import InvalidOptionError, UnsupportedError

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])


def _table(tmp_path: Path, options: dict[str, str], *, primary_key: bool = True) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", exist_ok=True)
    keys = ["id"] if primary_key else []
    return catalog.create_table("db.t", schema=SCHEMA, primary_key=keys, options={"bucket": "1", **options})


def _rows(start: int, n: int = 50) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(start, start + n), pa.int32()), "v": [f"v{i}" for i in range(start, start + n)]}
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"data-file.external-paths": "/no/scheme", "data-file.external-paths.strategy": "round-robin"},
            "no scheme",
        ),
        (
            {"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "specific-fs"},
            "specific-fs",
        ),
        (
            {
                "data-file.external-paths": "file:///x",
                "data-file.external-paths.strategy": "specific-fs",
                "data-file.external-paths.specific-fs": "s3",
            },
            "no root of scheme 's3'",
        ),
        (
            {
                "data-file.external-paths": "file:///x,file:///y",
                "data-file.external-paths.strategy": "weight-robin",
                "data-file.external-paths.weights": "1,2,3",
            },
            "3 weights for 2",
        ),
        ({"data-file.external-paths.strategy": "sideways"}, "not one of"),
    ],
)
def test_bad_external_path_options_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        validate_create_options(options, primary_key_table=True)


def test_a_root_on_other_storage_is_refused_at_write(tmp_path: Path) -> None:
    table = _table(
        tmp_path,
        {"data-file.external-paths": "s3://bucket/x", "data-file.external-paths.strategy": "round-robin"},
    )
    with pytest.raises(UnsupportedError, match="s3 storage, not the table's"):
        table.write(_rows(0))


def test_strategy_none_keeps_files_under_the_table(tmp_path: Path) -> None:
    table = _table(tmp_path, {"data-file.external-paths": f"file://{tmp_path / 'ext'}"})
    table.write(_rows(0))
    assert [f.external_path for s in table.scan().splits() for f in s.files] == [None]
    assert not (tmp_path / "ext").exists()


def test_round_robin_takes_the_roots_in_turn() -> None:
    options = CoreOptions.of(
        {
            "data-file.external-paths": "file:///a/,file:///b",
            "data-file.external-paths.strategy": "round-robin",
        },
        primary_key_table=True,
    )
    chooser = ExternalPathChooser("round-robin", ("file:/a", "file:/b"), ("/a", "/b"), position=0)
    picks = [chooser.choose("p=1/bucket-0", f"f{i}")[0] for i in range(4)]
    assert picks == [
        "file:/b/p=1/bucket-0/f0",
        "file:/a/p=1/bucket-0/f1",
        "file:/b/p=1/bucket-0/f2",
        "file:/a/p=1/bucket-0/f3",
    ]
    assert chooser.choose("bucket-0", "g")[1] == "/b/bucket-0/g"
    assert external_roots(options) == ("file:/a", "file:/b")  # as Java's Path renders them


def test_entropy_inject_puts_files_under_hash_directories() -> None:
    assert (
        murmur3_32(b"The quick brown fox jumps over the lazy dog") & 0xFFFFFFFF == 0x2E4FF723
    )  # Guava's murmur3_32
    dirs = entropy_dirs("data-1.parquet")
    assert [len(p) for p in dirs.split("/")] == [4, 4, 4, 8] and set(dirs) <= set("01/")
    chooser = ExternalPathChooser("entropy-inject", ("file:/a", "file:/b"), ("/a", "/b"))
    uri, path = chooser.choose("bucket-0", "data-1.parquet")
    assert uri == f"file:/b/bucket-0/{dirs}/data-1.parquet" and path == f"/b/bucket-0/{dirs}/data-1.parquet"


def test_file_indexes_are_read_from_the_roots(tmp_path: Path) -> None:
    """An append table's `.index` files sit next to their data files under the root; a filtered read
    prunes with them."""
    ext = tmp_path / "ext"
    table = _table(
        tmp_path,
        {
            "data-file.external-paths": f"file://{ext}",
            "data-file.external-paths.strategy": "round-robin",
            "file-index.bloom-filter.columns": "v",
            "file-index.in-manifest-threshold": "1 b",
            "bucket": "-1",
        },
        primary_key=False,
    )
    for i in range(3):
        table.write(_rows(i * 100, 100))
    assert len(list(ext.rglob("*.index"))) == 3
    assert table.read(filter="v = 'v105'").to_pylist() == [{"id": 105, "v": "v105"}]


def test_deletion_vectors_under_the_roots_are_read_when_indexes_prune(tmp_path: Path) -> None:
    """With index-file-in-data-file-dir the deletion vector index files lie under the roots, named by their
    URI: planning reads them there when file indexes select rows of a file with deletions (it handed the
    URI to the FileIO)."""
    ext = tmp_path / "ext"
    table = _table(
        tmp_path,
        {
            "data-file.external-paths": f"file://{ext}",
            "data-file.external-paths.strategy": "round-robin",
            "deletion-vectors.enabled": "true",
            "index-file-in-data-file-dir": "true",
            "file-index.bitmap.columns": "v",
            "file-index.in-manifest-threshold": "1 b",
            "num-sorted-run.compaction-trigger": "3",
            "num-levels": "6",
        },
    )
    table.write(_rows(0, 5000))
    table.compact(full=True)
    for i in (5, 7, 9):  # three small runs: merged into a level below the big file, whose rows get deleted
        table.write(pa.table({"id": pa.array([i], pa.int32()), "v": [f"new{i}"]}))
    table.compact(full=False)
    table = lsmlake.Catalog(str(tmp_path / "wh")).get_table("db.t")
    levels = sorted(f.level for s in table.scan().splits() for f in s.files)
    assert levels[-1] == 5 and len(levels) > 1, levels  # the big file kept, with a deletion vector
    assert list(ext.rglob("index-*")), "no deletion vector index file under the root"
    assert table.read(filter="v = 'v5'").num_rows == 0  # deleted by the deletion vector
    assert table.read(filter="v = 'v6'").to_pylist() == [{"id": 6, "v": "v6"}]
    assert table.read(filter="v = 'new7'").to_pylist() == [{"id": 7, "v": "new7"}]


def test_orphans_under_the_roots_are_cleaned_and_drop_deletes_the_roots(tmp_path: Path) -> None:
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    table = _table(
        tmp_path,
        {
            "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
            "data-file.external-paths.strategy": "round-robin",
        },
    )
    for i in range(4):
        table.write(_rows(i * 10))
    table.compact(full=True)
    stray = roots[0] / "bucket-0" / "data-stray.parquet"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"x")
    orphans = table.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert str(stray) in orphans and not stray.exists()
    live = [f for s in table.scan().splits() for f in s.files]
    assert all(Path(f.external_path.split(":", 1)[1]).exists() for f in live if f.external_path)
    assert table.read().num_rows == 80  # ids 0..79
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.drop_table("db.t")
    assert not any(r.exists() for r in roots)


def test_drop_leaves_a_root_that_holds_the_table(tmp_path: Path) -> None:
    """A root the warehouse lies in is not deleted (Java would delete it, and every other table with it)."""
    table = _table(
        tmp_path,
        {
            "data-file.external-paths": f"file://{tmp_path}",
            "data-file.external-paths.strategy": "round-robin",
        },
    )
    table.write(_rows(0))
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        catalog.drop_table("db.t")
    assert any(issubclass(w.category, PathRefusedWarning) for w in caught)
    assert (tmp_path / "wh").exists()
