"""Point lookups: which files they open, the bounded caches, the result's shape, and bad keys."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.core.fileio import FileIO
from lsmlake.core.types import DataType
from lsmlake.errors import NoSuchColumnError, UnsupportedError
from lsmlake.format.file_index.bloom import BloomFilter, hash_values
from lsmlake.format.file_index.container import read_container
from lsmlake.mergetree.lookup import KEY_CACHE, key_cache_key
from lsmlake.read.file_rows import LOOKUP_FILES, ROW_GROUPS
from lsmlake.read.lookup import _match
from lsmlake.schema_change import set_option

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.int32())])


class RecordingIO(FileIO):
    """A local FileIO that records the path of every file it opens or reads whole."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner.fs, local=inner.local)
        self.opened: list[str] = []

    def read_bytes(self, path: str) -> bytes:
        self.opened.append(path)
        return super().read_bytes(path)

    def open_input_file(self, path: str, size: int | None = None) -> pa.NativeFile:
        self.opened.append(path)
        return super().open_input_file(path, size)

    def data_files(self) -> set[str]:
        return {Path(p).name for p in self.opened if p.endswith(".parquet")}


def _table(tmp_path: Path, options: dict[str, str], *, primary_key: list[str] | None = None) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_key=primary_key or ["id"], options=options)


def _rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"n{i}" for i in ids],
            "v": pa.array([i % 7 for i in ids], pa.int32()),
        }
    )


def _recorded(t: lsmlake.Table) -> tuple[lsmlake.Table, RecordingIO]:
    io = RecordingIO(t.io)
    return lsmlake.Table(t.name, io, t.root, t.schema, t.dynamic_options), io


def test_files_whose_key_range_excludes_the_key_are_never_opened(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1", "write-only": "true"})
    for start in range(0, 500, 100):  # five level-0 files with disjoint key ranges
        t.write(_rows(list(range(start, start + 100))))
    files = {f.file_name: f for s in t.scan().splits() for f in s.files}
    assert len(files) == 5
    holder = next(n for n in files if _holds(t, n, 250))
    counted, io = _recorded(t)
    assert counted.lookup_one(250) == {"id": 250, "name": "n250", "v": 250 % 7}
    assert io.data_files() == {holder}
    io.opened.clear()
    assert counted.lookup_one(250) == {"id": 250, "name": "n250", "v": 250 % 7}
    assert io.data_files() == set()  # warm: the key columns and the row group are cached
    assert counted.lookup_one(1000) is None and io.data_files() == set()  # beyond every file's range


def _holds(t: lsmlake.Table, file_name: str, key: int) -> bool:
    return key in pq.read_table(Path(t.root) / "bucket-0" / file_name, columns=["id"])["id"].to_pylist()


BLOOM_ON_ID = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "200",
    "file-index.bloom-filter.id.fpp": "0.01",
}


@pytest.mark.parametrize("added_later", [False, True])
def test_bloom_filter_on_the_key_skips_files_that_cannot_hold_it(tmp_path: Path, added_later: bool) -> None:
    t = _table(tmp_path, {"bucket": "1", "write-only": "true", **({} if added_later else BLOOM_ON_ID)})
    for i in range(8):  # eight files whose key ranges all overlap: only the bloom filters tell them apart
        t.write(_rows(list(range(i, 1600, 8))))
    if added_later:  # ALTER TABLE SET, then CALL sys.rewrite_file_index: files of the older schema indexed
        t = t.alter(*(set_option(k, v) for k, v in BLOOM_ON_ID.items()))
        assert t.rewrite_file_index().rewritten == 8
    key = 803
    bigint = DataType("BIGINT", False)
    maybe = set()
    for s in t.scan().splits():
        for f in s.files:
            data = f.embedded_index or (Path(s.bucket_path) / f.extra_files[0]).read_bytes()
            blobs = read_container(data, source="")
            if BloomFilter(blobs[0].data or b"", source="").might_contain(hash_values([key], bigint))[0]:
                maybe.add(f.file_name)
    assert 1 <= len(maybe) <= 3
    counted, io = _recorded(t)
    assert counted.lookup([key, 10_000]).to_pylist() == [{"id": key, "name": f"n{key}", "v": key % 7}]
    assert io.data_files() == maybe
    assert t.read(filter=f"id = {key}").to_pylist() == counted.lookup([key]).to_pylist()


def test_the_caches_stay_within_lookup_cache_max_memory_size(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "2"})
    t.write(_rows(list(range(20_000))))
    t.write(_rows(list(range(10_000, 30_000, 3))))
    small = t.with_options({"lookup.cache-max-memory-size": "64 kb"})
    keys = list(range(0, 30_000, 97))
    expected = t.read(filter=f"id IN ({','.join(map(str, keys))})").sort_by("id")
    assert small.lookup(keys).sort_by("id").equals(expected)
    for cache in (KEY_CACHE, ROW_GROUPS):
        assert cache.max_bytes == 64 * 1024 and 0 < cache.nbytes <= 64 * 1024
    roomy = t.with_options({"lookup.cache-max-memory-size": "64 mb"})
    assert roomy.lookup(keys).sort_by("id").equals(expected)
    assert KEY_CACHE.max_bytes == 64 * 1024 * 1024 and KEY_CACHE.nbytes > 64 * 1024


def test_result_shape_columns_and_key_order(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64())])
    t = cat.create_table(
        "db.t", schema=schema, primary_key=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}
    )
    t.write({"dt": ["a", "a", "b"], "id": [1, 2, 1], "v": [1.0, 2.0, 3.0]})
    got = t.lookup(pa.table({"id": [1, 9, 1, 2], "dt": ["b", "a", "b", "a"]}), columns=["v"])
    assert got.column_names == ["id", "dt", "v"]
    assert got.to_pylist() == [{"id": 1, "dt": "b", "v": 3.0}, {"id": 2, "dt": "a", "v": 2.0}]
    assert t.lookup([("a", 1), ("c", 1)]).to_pylist() == [{"dt": "a", "id": 1, "v": 1.0}]
    assert t.lookup([{"dt": "a", "id": 2}]).num_rows == 1
    assert t.lookup_one({"dt": "a", "id": 2}, columns=[]) == {"dt": "a", "id": 2}
    assert t.lookup({"dt": [], "id": []}).num_rows == 0


@pytest.mark.parametrize(
    ("keys", "error", "match"),
    [
        ({"name": ["x"]}, ValueError, r"lack primary-key column\(s\) \['id'\]"),
        ({"id": [1], "v": [2]}, ValueError, r"column\(s\) \['v'\] outside the primary key"),
        (pa.table({"id": ["one"]}), ValueError, "'id' of type string does not convert"),
        (["one"], ValueError, "'id' holds a value that is not a int64"),
        (pa.table({"id": pa.array([1, None], pa.int64())}), ValueError, "holds nulls"),
        ([(1, 2)], ValueError, "one value per primary-key column"),
        (42, ValueError, "must be a pyarrow Table, a dict of columns or a list"),
    ],
)
def test_bad_keys_get_a_clear_error(tmp_path: Path, keys: object, error: type, match: str) -> None:
    t = _table(tmp_path, {"bucket": "1"})
    t.write(_rows([1]))
    with pytest.raises(error, match=match):
        t.lookup(keys)  # type: ignore[arg-type]


def test_bad_columns_and_tables(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1"})
    with pytest.raises(NoSuchColumnError, match="nope"):
        t.lookup([1], columns=["nope"])
    assert t.lookup([1]).num_rows == 0  # no snapshot yet
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_table("db.a", schema=SCHEMA)
    with pytest.raises(UnsupportedError, match="no primary key"):
        cat.get_table("db.a").lookup([1])
    two = cat.create_table("db.two", schema=SCHEMA, primary_key=["id", "name"])
    with pytest.raises(ValueError, match="give the key as a dict"):
        two.lookup_one(1)


def test_a_few_keys_read_only_the_key_blocks_their_row_groups_may_hold(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1"})
    t.write(_rows(list(range(0, 40_000, 2))))  # one file of 20,000 rows: several row groups
    (split,) = t.scan().splits()
    (f,) = split.files
    path = f"{split.bucket_path}/{f.file_name}"
    groups = pq.ParquetFile(path).metadata.num_row_groups
    assert groups >= 3
    asked = [0, 8190, 8192, 39_998, 7, 40_000, -2]  # group edges, odd (absent) and out-of-range keys
    got = t.lookup(asked)
    assert got.column("id").to_pylist() == [0, 8190, 8192, 39_998]
    assert got.equals(t.read(filter=f"id IN ({','.join(map(str, asked))})").take([0, 1, 2, 3]))
    assert not KEY_CACHE.peek(
        key_cache_key(t.io, path, ["id"])
    )  # the file's whole key column was never decoded
    blocks = {k[2] for k in list(ROW_GROUPS._items) if k[:2] == (t.io, path) and k[3] == ("id",)}
    assert 0 < len(blocks) < groups
    many = list(range(1, 40_000, 50))  # more keys than a handful: the whole key column, cached
    assert t.lookup(many).num_rows == 0
    assert KEY_CACHE.peek(key_cache_key(t.io, path, ["id"]))


def test_a_snapshot_id_reused_after_a_rollback_is_planned_afresh(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1"})
    t.write(_rows([1]))
    t.write(_rows([2]))
    assert t.lookup([1, 2]).num_rows == 2
    latest = t.latest_snapshot()
    assert latest is not None
    t.rollback_to(1)
    t.write(_rows([3]))  # published under the id the rolled-back snapshot had
    assert t.latest_snapshot().id == latest.id  # type: ignore[union-attr]
    assert t.lookup([1, 2, 3]).column("id").to_pylist() == [1, 3]


@pytest.mark.parametrize(
    ("options", "partitioned_key"),
    [
        ({"bucket": "-1", "dynamic-bucket.target-row-num": "50"}, True),  # dynamic buckets: any bucket
        ({"bucket": "-1"}, False),  # cross-partition: the key does not name the partition
        # postponed: invisible until compacted, to reads and lookups
        ({"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"}, True),
        ({"bucket": "-2"}, True),  # postpone table, batch write: real buckets at once
        ({"bucket": "3", "bucket-key": "id"}, True),
    ],
)
def test_every_bucket_mode(tmp_path: Path, options: dict[str, str], partitioned_key: bool) -> None:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    pk = ["dt", "id"] if partitioned_key else ["id"]
    t = cat.create_table("db.t", schema=schema, primary_key=pk, partition_keys=["dt"], options=options)
    ids = list(range(300))
    t.write({"dt": ["a" if i % 3 else "b" for i in ids], "id": ids, "v": ids})
    t.write({"dt": ["c"] * 100, "id": ids[::3], "v": [-i for i in ids[::3]]})  # moves keys across partitions
    keys = [
        {"dt": "a" if i % 3 else "b", "id": i} if partitioned_key else {"id": i} for i in range(-5, 320, 7)
    ]
    keys += [{"dt": "c", "id": i} if partitioned_key else {"id": i} for i in range(0, 30, 3)]

    def expected() -> list[dict[str, object]]:
        text = " OR ".join(
            "(" + " AND ".join(f"{c} = '{v}'" if c == "dt" else f"{c} = {v}" for c, v in k.items()) + ")"
            for k in keys
        )
        return sorted(t.read(filter=text).to_pylist(), key=str)

    assert sorted(t.lookup(keys).select(schema.names).to_pylist(), key=str) == expected()
    if options.get("postpone.batch-write-fixed-bucket") == "false":
        assert t.lookup(keys).num_rows == 0
        t.compact()
        assert len(expected()) > 0
        assert sorted(t.lookup(keys).select(schema.names).to_pylist(), key=str) == expected()


def test_a_batch_over_many_row_groups_reads_a_memory_mapped_local_copy(tmp_path: Path) -> None:
    t = _table(tmp_path, {"bucket": "1"})
    t.write(_rows(list(range(60_000))))  # one file of many row groups
    t.write(_rows(list(range(0, 60_000, 7))))  # newer values for some keys
    keys = list(range(-3, 60_010, 13))
    expected = t.read(filter=f"id IN ({','.join(map(str, keys))})")
    LOOKUP_FILES.clear()
    counted, io = _recorded(t)
    got = counted.lookup(keys)
    assert got.equals(expected.sort_by("id"))
    assert LOOKUP_FILES.info().entries >= 1 and LOOKUP_FILES.info().nbytes > 0
    io.opened.clear()
    assert counted.lookup(keys).equals(got)
    assert io.data_files() == set()  # warm: the local copies and cached keys answer
    tight = t.with_options({"lookup.cache-max-disk-size": "1 b"})  # too small for any copy: decoded each time
    LOOKUP_FILES.clear()
    assert tight.lookup(keys).equals(got)
    assert LOOKUP_FILES.info().entries == 0


def test_binary_search_of_a_file_finds_each_key_and_every_row_of_a_repeated_one() -> None:
    keys = pa.table({"id": pa.array([9, 3, 4, 1, 3, 0, 10], pa.int64())})
    ints = keys.column(0).to_numpy()
    wanted = np.arange(keys.num_rows)
    unique = pa.table({"id": pa.array([1, 3, 7, 9], pa.int64())})
    which, positions = _match(unique, keys, wanted, ints, ["id"])
    assert list(zip(which.tolist(), positions.tolist(), strict=True)) == [(0, 3), (1, 1), (3, 0), (4, 1)]
    repeated = pa.table({"id": pa.array([1, 3, 3, 3, 7, 9, 9], pa.int64())})
    which, positions = _match(repeated, keys, wanted[:4], ints, ["id"])
    assert sorted(zip(which.tolist(), positions.tolist(), strict=True)) == [
        (0, 5),
        (0, 6),
        (1, 1),
        (1, 2),
        (1, 3),
        (3, 0),
    ]
    empty = pa.table({"id": pa.array([], pa.int64())})
    assert [len(a) for a in _match(empty, keys, wanted, ints, ["id"])] == [0, 0]
