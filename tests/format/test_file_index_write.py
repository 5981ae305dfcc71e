"""File indexes lsmlake writes: embedded or `.index` per the threshold, used by planning, rewritten by compaction."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError
from lsmlake.format.file_index.bloom import BloomFilter, hash_values
from lsmlake.format.file_index.container import read_container
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.int32())])
STRING = DataType("VARCHAR", True)


def _table(tmp_path: Path, options: dict[str, str], primary_key: list[str] | None = None) -> Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_key=primary_key, options=options)


def _batch(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"k{(i * 7919) % 100_003:06d}" for i in ids],  # spread: every file's name range is wide
            "v": pa.array([None if i % 11 == 0 else i % 5 for i in ids], pa.int32()),
        }
    )


def _bucket_files(t: Table) -> list[Path]:
    return sorted(Path(t.root).glob("bucket-0/*.parquet"))


def test_bloom_filtered_read_opens_only_files_that_may_hold_the_value(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        {
            "file-index.bloom-filter.columns": "name",
            "file-index.bloom-filter.name.items": "500",
            "file-index.bloom-filter.name.fpp": "0.01",
        },
    )
    rng = random.Random(5)
    ids = list(range(4000))
    rng.shuffle(ids)
    for part in range(8):
        t.write(_batch(ids[part * 500 : (part + 1) * 500]))
    target = _batch([1234])["name"][0].as_py()
    plan = t.scan(filter=f"name = '{target}'").plan
    read = {f.file_name for s in plan.splits for f in s.files}
    holding = {
        p.name for p in _bucket_files(t) if target in pq.read_table(p, columns=["name"])["name"].to_pylist()
    }
    entries = {f.file_name: f for s in t.scan().plan.splits for f in s.files}
    maybe = set()
    for name, f in entries.items():
        assert f.extra_files == (name + ".index",) and f.embedded_index is None  # 500 items > 500 bytes
        blob = read_container((Path(t.root) / "bucket-0" / f.extra_files[0]).read_bytes(), source=name)[0]
        bloom = BloomFilter(blob.data or b"", source=name)
        if bloom.might_contain(hash_values([target.encode()], STRING))[0]:
            maybe.add(name)
    assert len(holding) == 1 and holding <= read == maybe
    assert len(plan.counts.by_file_index) == 8 - len(read) >= 6
    assert t.read(filter=f"name = '{target}'").to_pylist() == [{"id": 1234, "name": target, "v": 1234 % 5}]


def test_threshold_embeds_small_indexes_and_compaction_rewrites_them(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        {
            "file-index.bitmap.columns": "v",
            "file-index.bsi.columns": "id",
            "bucket": "1",
            "deletion-vectors.enabled": "true",
        },
        primary_key=["id"],
    )
    for part in range(3):
        t.write(_batch(list(range(part * 20, part * 20 + 20))))
    files = [f for s in t.scan().plan.splits for f in s.files]
    assert any(f.embedded_index is not None for f in files)
    for f in files:  # at most 500 bytes (the default threshold) embedded, else a `.index` file
        if f.embedded_index is not None:
            assert len(f.embedded_index) <= 500 and f.extra_files == ()
        else:
            index = Path(t.root) / "bucket-0" / f.extra_files[0]
            assert f.extra_files == (f.file_name + ".index",) and index.stat().st_size > 500
    t.write(_batch(list(range(1000, 3000))))
    big = [f for s in t.scan().plan.splits for f in s.files if f.row_count >= 2000]
    assert big and big[0].embedded_index is None and big[0].extra_files == (big[0].file_name + ".index",)
    t.compact(full=True)
    compacted = [f for s in t.scan().plan.splits for f in s.files]
    assert len(compacted) == 1 and compacted[0].embedded_index is None and compacted[0].extra_files
    index_path = Path(t.root) / "bucket-0" / compacted[0].extra_files[0]
    kinds = {(b.column, b.index_type) for b in read_container(index_path.read_bytes(), source="c")}
    assert kinds == {("v", "bitmap"), ("id", "bsi")}
    assert t.read(filter="id >= 10 AND id < 13").column("id").to_pylist() == [10, 11, 12]
    assert t.read(filter="v IS NULL").num_rows == t.read().filter(pc.field("v").is_null()).num_rows
    t.delete("v IS NULL")
    plan = t.scan(filter="v IS NULL").plan
    assert [name for name, _ in plan.counts.by_file_index] == [
        compacted[0].file_name
    ]  # every null row deleted
    assert t.read(filter="v IS NULL").num_rows == 0


def test_index_files_go_with_their_data_files(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        {
            "file-index.bitmap.columns": "name",
            "file-index.in-manifest-threshold": "1 b",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
            "bucket": "1",
        },
        primary_key=["id"],
    )
    t.write(_batch(list(range(50))))
    t.write(_batch(list(range(50, 100))))
    old = sorted(p.name for p in Path(t.root).glob("bucket-0/*.index"))
    assert len(old) == 2
    t.compact(full=True)
    t.expire_snapshots()
    left = sorted(p.name for p in Path(t.root).glob("bucket-0/*.index"))
    assert len(left) == 1 and not set(left) & set(old)
    assert t.remove_orphan_files(older_than_ms=0, dry_run=True) == []


def test_primary_key_table_with_deletion_vectors(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        {"file-index.bitmap.columns": "v", "deletion-vectors.enabled": "true", "bucket": "1"},
        primary_key=["id"],
    )
    t.write(_batch(list(range(100))))
    t.compact(full=True)
    t.write(
        pa.table({"id": pa.array([3, 8], pa.int64()), "name": ["x", "y"], "v": pa.array([9, 9], pa.int32())})
    )
    t.compact()
    full = t.read()
    for f in ["v = 3", "v = 9", "v IS NULL", "v IN (1, 9)"]:
        expected = sorted(full.filter(lsmlake_filter(f)).column("id").to_pylist())
        assert sorted(t.read(filter=f).column("id").to_pylist()) == expected, f


def lsmlake_filter(text: str) -> pc.Expression:
    return {
        "v = 3": pc.field("v") == 3,
        "v = 9": pc.field("v") == 9,
        "v IS NULL": pc.field("v").is_null(),
        "v IN (1, 9)": pc.field("v").isin([1, 9]),
    }[text]


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        (
            {"file-index.range-bitmap.columns": "v", "file-index.range-bitmap.v.version": "2"},
            InvalidOptionError,
            "unknown table option",
        ),
        ({"file-index.bloom-filter.name.fpp": "0.1"}, InvalidOptionError, "not listed"),
        ({"file-index.bloom-filter.columns": "name,"}, InvalidOptionError, "empty column"),
        (
            {"file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.color": "red"},
            InvalidOptionError,
            "unknown table option",
        ),
    ],
)
def test_bad_file_index_options_are_refused_at_create(
    tmp_path: Path, options: dict[str, str], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        _table(tmp_path, options)
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"file-index.bloom-filter.columns": "nope"}, "not a column"),
        ({"file-index.bsi.columns": "name"}, "does not support"),
        ({"file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.fpp": "2"}, "fpp"),
        (
            {"file-index.range-bitmap.columns": "v", "file-index.range-bitmap.v.chunk-size": "lots"},
            "chunk-size",
        ),
    ],
)
def test_bad_index_columns_fail_before_any_file(tmp_path: Path, options: dict[str, str], match: str) -> None:
    t = _table(tmp_path, options)
    with pytest.raises(InvalidOptionError, match=match):
        t.write(_batch([1, 2]))
    assert _bucket_files(t) == [] and t.read().num_rows == 0
