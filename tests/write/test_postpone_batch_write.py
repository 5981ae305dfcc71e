"""``postpone.batch-write-fixed-bucket``: batch writes to a postpone table go straight to real buckets."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.binary_row import deserialize_row
from lsmlake.errors import CommitConflictError, InvalidOptionError
from lsmlake.metadata.live_files import live_entries
from lsmlake.metadata.manifest import ManifestEntry

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
OFF = {"postpone.batch-write-fixed-bucket": "false"}


def make(tmp_path: Path, options: dict[str, str] | None = None) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path))
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "-2", **(options or {})},
    )


def rows(ids: range | list[int], dt: str, v: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def layout(table: lsmlake.Table) -> dict[str, set[tuple[int, int]]]:
    """Per partition: the (bucket, total_buckets) pairs of its files, as the manifest entries say."""
    out: dict[str, set[tuple[int, int]]] = {}
    for e in entries(table):
        values = deserialize_row(e.partition, [table.schema.field("dt").type])
        out.setdefault(f"{{{values[0]}}}", set()).add((e.bucket, e.total_buckets))
    return out


def entries(table: lsmlake.Table) -> list[ManifestEntry]:
    return live_entries(table.io, table.paths, table.latest_snapshot())


def test_batch_write_is_read_at_once_from_real_buckets(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.write(rows(range(100), "a", 1))
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == {i: 1 for i in range(100)}
    live = entries(table)
    assert live and {(e.bucket, e.total_buckets) for e in live} == {(0, 1)}  # a new partition: 1 bucket
    # files of the table's own format and names, not the postpone writer's Avro ones
    assert all(e.file.file_name.startswith("data-") and "-u-" not in e.file.file_name for e in live)
    assert all(e.file.file_name.endswith(".parquet") and e.file.level == 0 for e in live)
    assert "postponed: 0 row(s)" in table.explain()
    assert "writes go to real buckets" in table.explain()


def test_sequence_numbers_continue_in_the_bucket(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.write(rows(range(10), "a", 1))
    table.write(rows(range(5), "a", 2))
    seqs = sorted((e.file.min_sequence_number, e.file.max_sequence_number) for e in entries(table))
    assert seqs == [(0, 9), (10, 14)]  # level 0, write-only: one file per write, numbers continue
    got = {r["id"]: r["v"] for r in table.read().to_pylist()}
    assert got == {**{i: 2 for i in range(5)}, **{i: 1 for i in range(5, 10)}}


def test_a_partition_keeps_the_bucket_count_of_its_files(tmp_path: Path) -> None:
    table = make(tmp_path, {**OFF, "postpone.default-bucket-num": "3"})
    table.write(rows(range(60), "a", 1))
    table.compact()  # partition a gets 3 real buckets
    fixed = table.with_options({"postpone.batch-write-fixed-bucket": "true"})
    fixed.write(rows(range(30, 90), "a", 2))  # a keeps 3
    fixed.write(rows(range(20), "b", 3))  # b is new: one writer, one bucket
    got = layout(table)
    assert {t for _, t in got["{a}"]} == {3} and {b for b, _ in got["{a}"]} == {0, 1, 2}
    assert got["{b}"] == {(0, 1)}
    expected = {**{(i, "a"): 1 for i in range(30)}, **{(i, "a"): 2 for i in range(30, 90)}}
    expected |= {(i, "b"): 3 for i in range(20)}
    assert {(r["id"], r["dt"]): r["v"] for r in table.read().to_pylist()} == expected
    # every row sits in the bucket the 3-bucket hash gives it: a lookup (which hashes keys) finds them all
    keys = [{"id": i, "dt": d} for i, d in expected]
    found = table.lookup(keys).to_pylist()
    assert {(r["id"], r["dt"]): r["v"] for r in found} == expected
    table.compact(full=True)
    assert {(r["id"], r["dt"]): r["v"] for r in table.read().to_pylist()} == expected
    assert {t for _, t in layout(table)["{a}"]} == {3}


def test_a_new_partition_gets_one_bucket_per_writer(tmp_path: Path) -> None:
    """Java gives a new partition min(writers, max-parallelism) buckets, not postpone.default-bucket-num
    (that one is for compaction); lsmlake has one writer."""
    table = make(tmp_path, {"postpone.default-bucket-num": "4"})
    table.write(rows(range(200), "a", 1))
    assert layout(table)["{a}"] == {(0, 1)}
    assert table.read().num_rows == 200


def test_false_keeps_rows_in_the_postpone_bucket_until_compaction(tmp_path: Path) -> None:
    table = make(tmp_path, OFF)
    table.write(rows(range(10), "a", 1))
    assert table.read().num_rows == 0
    assert {e.bucket for e in entries(table)} == {-2}
    assert "writes go to bucket-postpone" in table.explain()
    table.compact()
    assert table.read().num_rows == 10


def test_postponed_rows_and_batch_written_rows_merge_by_write_order(tmp_path: Path) -> None:
    table = make(tmp_path, OFF)
    table.write(rows(range(10), "a", 1))  # postponed
    table.with_options({"postpone.batch-write-fixed-bucket": "true"}).write(rows(range(5), "a", 2))
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == {i: 2 for i in range(5)}
    table.compact()  # as Java: postponed rows are replayed above the bucket's sequence numbers, so win
    got = {r["id"]: r["v"] for r in table.read().to_pylist()}
    assert got == {i: 1 for i in range(10)}


def test_a_max_parallelism_below_one_is_refused(tmp_path: Path) -> None:
    table = make(tmp_path, {"postpone.batch-write-fixed-bucket.max-parallelism": "0"})
    with pytest.raises(InvalidOptionError, match="max-parallelism"):
        table.write(rows([1], "a", 1))


def test_an_overwrite_keeps_the_partition_bucket_count(tmp_path: Path) -> None:
    """As Java's batch sink: the counts come from the latest snapshot even though an overwrite restores no
    files (its sequence numbers start again at 0), and the partition's postponed files are replaced too."""
    table = make(tmp_path, {**OFF, "postpone.default-bucket-num": "3"})
    table.write(rows(range(60), "a", 1))
    table.compact()
    table.write(rows(range(5), "a", 9))  # postponed
    fixed = table.with_options({"postpone.batch-write-fixed-bucket": "true"})
    fixed.overwrite(rows(range(10, 40), "a", 2))
    assert {t for _, t in layout(table)["{a}"]} == {3}
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == {i: 2 for i in range(10, 40)}
    assert min(e.file.min_sequence_number for e in entries(table)) == 0
    assert {e.bucket for e in entries(table)} <= {0, 1, 2}  # no postponed file left


def test_a_concurrent_compaction_giving_the_partition_another_count_is_a_conflict(tmp_path: Path) -> None:
    """A write that chose 1 bucket for a new partition loses to a compaction that gave it 3 since: mixing
    counts in a partition would put keys where neither count looks for them."""
    table = make(tmp_path, {**OFF, "postpone.default-bucket-num": "3"})
    table.write(rows(range(60), "a", 1))  # postponed: partition a has no real bucket yet
    fixed = table.with_options({"postpone.batch-write-fixed-bucket": "true"})
    writer = fixed.writer()
    writer.write(rows(range(5), "a", 2))  # reads the counts now: a is new, 1 bucket
    table.compact()  # a gets 3 buckets
    with pytest.raises(CommitConflictError, match=r"total buckets|writes with 3 buckets .* placed its rows by 1"):
        writer.commit()
    assert {t for _, t in layout(table)["{a}"]} == {3}
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == {i: 1 for i in range(60)}
