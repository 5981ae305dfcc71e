"""Write path: file layout, sequence numbers, folding within a commit, metadata, and failure cleanup."""

from __future__ import annotations

import datetime as dt
import os
import threading
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.core.binary_row import deserialize_row
from lsmlake.errors import InvalidOptionError, SchemaMismatchError
from lsmlake.metadata.live_files import live_entries

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])


def live(table: lsmlake.Table) -> list:
    return live_entries(table.io, table.paths, table.latest_snapshot())


def file_path(table: lsmlake.Table, entry) -> str:  # type: ignore[no-untyped-def]
    return os.path.join(table.root, f"bucket-{entry.bucket}", entry.file.file_name)


def test_pk_file_layout_and_metadata(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    sid = t.write(pa.table({"id": [3, 1, 2, 1], "name": ["c", "a", "b", "a2"], "v": [3.0, 1.0, None, 4.0]}))
    assert sid == 1
    (entry,) = live(t)
    meta = entry.file
    f = pq.ParquetFile(file_path(t, entry))
    assert f.schema_arrow.names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "name", "v"]
    ids = [f.schema_arrow.field(i).metadata[b"PARQUET:field_id"] for i in range(6)]
    assert ids == [b"1073741823", b"2147483646", b"2147483645", b"0", b"1", b"2"]
    rows = f.read().to_pydict()
    assert rows["id"] == [1, 2, 3]  # sorted, key 1 folded: the last write wins
    assert rows["name"] == ["a2", "b", "c"]
    assert rows["_SEQUENCE_NUMBER"] == [3, 2, 0]
    assert meta.row_count == 3 and meta.delete_row_count == 0 and meta.level == 0
    assert (meta.min_sequence_number, meta.max_sequence_number) == (0, 3)
    assert deserialize_row(meta.min_key, [t.schema.field("id").type]) == [1]
    assert deserialize_row(meta.max_key, [t.schema.field("id").type]) == [3]
    assert meta.value_stats.null_counts == (0, 0, 1)
    assert meta.file_size == os.path.getsize(file_path(t, entry))


def test_sequence_numbers_continue_and_deletes_counted(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "name": ["a", "b"], "v": [1.0, 2.0]}))
    t.delete(pa.table({"id": [2, 9]}))
    files = sorted((e.file for e in live(t)), key=lambda m: m.min_sequence_number)
    assert [(m.min_sequence_number, m.max_sequence_number) for m in files] == [(0, 1), (2, 3)]
    assert files[1].delete_row_count == 2 and files[1].row_count == 2
    snap = t.latest_snapshot()
    assert snap is not None and snap.total_record_count == 4 and snap.delta_record_count == 2


def test_writer_folds_upsert_then_delete_in_one_commit(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    with t.writer() as w:
        w.write(pa.table({"id": [1, 2], "name": ["a", "b"], "v": [1.0, 2.0]}))
        w.delete(pa.table({"id": [1]}))
        w.write(pa.table({"id": [2], "name": ["b2"], "v": [2.5]}))
    (entry,) = live(t)
    rows = pq.read_table(file_path(t, entry)).to_pydict()
    assert rows["id"] == [1, 2] and rows["_VALUE_KIND"] == [3, 0] and rows["name"][1] == "b2"
    assert entry.file.delete_row_count == 1
    assert len(t.snapshot_manager.snapshot_ids()) == 1


def test_failed_writer_leaves_nothing(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    with pytest.raises(RuntimeError), t.writer() as w:
        w.write(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"], "v": [1.0, 2.0, 3.0]}))
        raise RuntimeError("boom")
    assert t.latest_snapshot() is None
    assert not [s for s in t.io.walk_files(t.root) if s.name.endswith(".parquet")]


@pytest.mark.parametrize(
    "data",
    [
        {"id": [1], "name": ["a"]},  # missing column
        {"id": [1], "name": ["a"], "v": [1.0], "extra": [1]},  # unknown column
        {"id": [None], "name": ["a"], "v": [1.0]},  # null primary key
        {"id": ["x"], "name": ["a"], "v": [1.0]},  # uncastable key
    ],
)
def test_bad_data_is_refused_and_nothing_written(catalog: lsmlake.Catalog, data: dict) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    with pytest.raises(SchemaMismatchError):
        t.write(pa.table(data))
    assert t.latest_snapshot() is None
    assert not [s for s in t.io.walk_files(t.root) if not s.path.endswith("schema-0")]


def test_dynamic_bucket_pk_write_works_and_bad_dynamic_options_are_refused(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"])  # no 'bucket': dynamic (-1)
    t.write(pa.table({"id": [1, 2], "name": ["a", "b"], "v": [1.0, 2.0]}))
    assert t.read().sort_by("id").column("id").to_pylist() == [1, 2]
    bad = catalog.create_table(
        "db.bad", schema=SCHEMA, primary_key=["id"], options={"dynamic-bucket.max-buckets": "0"}
    )
    with pytest.raises(InvalidOptionError, match=r"dynamic-bucket\.max-buckets"):
        bad.write(pa.table({"id": [1], "name": ["a"], "v": [1.0]}))


def test_partition_directories_as_java_names_them(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("region", pa.string()), ("v", pa.int32())])
    t = catalog.create_table(
        "db.p", schema=schema, partition_keys=["dt", "region"]
    )  # append: null partitions allowed
    t.write(
        pa.table(
            {
                "id": [1, 2],
                "dt": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
                "region": ["eu/west", None],
                "v": [1, 2],
            },
            schema=schema,
        )
    )
    dirs = sorted(
        {
            os.path.relpath(os.path.dirname(os.path.dirname(s.path)), t.root)
            for s in t.io.walk_files(t.root)
            if s.name.endswith(".parquet")
        }
    )
    assert dirs == ["dt=19723/region=eu%2Fwest", "dt=19724/region=__DEFAULT_PARTITION__"]


def test_append_table_and_types(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("a", pa.decimal128(30, 5)), ("b", pa.timestamp("us")), ("c", pa.binary())])
    t = catalog.create_table("db.a", schema=schema)
    data = pa.table(
        {"a": [Decimal("1.5"), None], "b": [dt.datetime(2024, 1, 1, 1), None], "c": [b"x", b"y"]},
        schema=schema,
    )
    t.write(data)
    t.write(data)
    entries = live(t)
    assert len(entries) == 2 and all(e.total_buckets == -1 and e.bucket == 0 for e in entries)
    seqs = sorted((e.file.min_sequence_number, e.file.max_sequence_number) for e in entries)
    assert seqs == [(0, 1), (2, 3)]
    assert pq.read_table(file_path(t, entries[0])).column_names == ["a", "b", "c"]


def test_concurrent_committers_never_lose_a_commit(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table("db.c", schema=schema)  # append table: no bucket ownership to respect
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(5):
                t.write(pa.table({"id": [k * 100 + i], "v": [i]}, schema=schema))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert t.snapshot_manager.snapshot_ids() == list(range(1, 21))
    assert sum(e.file.row_count for e in live(t)) == 20


def test_many_rows_roll_files(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table(
        "db.big", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", "target-file-size": "1 mb"}
    )
    n = 600_000
    rng = np.random.default_rng(0)
    t.write(pa.table({"id": rng.permutation(n), "name": rng.random(n).astype(str), "v": rng.random(n)}))
    files = sorted((e.file for e in live(t)), key=lambda m: m.min_key)
    assert len(files) > 1 and sum(m.row_count for m in files) == n


def test_two_writers_of_one_bucket_second_is_rebased(catalog: lsmlake.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "name": ["a"], "v": [1.0]}))
    w1, w2 = t.writer(), t.writer()
    w1.write(pa.table({"id": [1], "name": ["w1"], "v": [2.0]}))
    w2.write(pa.table({"id": [1], "name": ["w2"], "v": [3.0]}))  # both restore snapshot 1
    w1.commit()
    w2.commit()  # rewritten above w1's sequence numbers, not refused: the later commit wins
    assert t.read().to_pylist() == [{"id": 1, "name": "w2", "v": 3.0}]
    live_names = {e.file.file_name for e in live(t)}
    assert len(live_names) == 3 and not [  # the superseded original of w2's file was deleted
        s
        for s in t.io.walk_files(t.root)
        if s.name.endswith(".parquet") and s.name not in live_names
    ]


def test_delete_by_key_fills_not_null_columns_of_any_type(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("d", pa.date32(), False),
            pa.field("amount", pa.decimal128(10, 2), False),
            pa.field("s", pa.string(), False),
        ]
    )
    t = catalog.create_table("db.nn", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write(
        pa.table(
            {"id": [1, 2], "d": [dt.date(2024, 1, 1)] * 2, "amount": [Decimal("1.00")] * 2, "s": ["a", "b"]},
            schema=schema,
        )
    )
    t.delete(pa.table({"id": [1]}))
    assert t.read(columns=["id"]).to_pylist() == [{"id": 2}]
