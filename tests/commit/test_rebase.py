"""Two writers from the same base on the same bucket: the second to commit is rebased, not refused, and
the table equals the two writes applied one after the other in the order they were published."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.commit.rebase import REBASE_HEADROOM
from lsmlake.core.bucket import hash_rows
from lsmlake.metadata.hash_index import read_hash_index
from lsmlake.metadata.index_manifest import read_index_manifest
from lsmlake.metadata.live_files import live_entries

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int64())])
KEYS = pa.schema([pa.field("k", pa.int64(), nullable=False)])
Step = Callable[[lsmlake.TableWriter], None]


def rows(keys: list[int], a: list[str | None], b: list[int | None]) -> pa.Table:
    return pa.table({"k": keys, "a": a, "b": b}, schema=SCHEMA)


def first(w: lsmlake.TableWriter) -> None:
    w.write(rows([1, 2, 10], ["w1", None, "w1"], [11, 12, None]))
    w.delete(pa.table({"k": [3]}, schema=KEYS))


def second(w: lsmlake.TableWriter) -> None:
    w.write(rows([1, 4, 10], [None, "w2", "w2"], [21, 24, 20]))
    w.delete(pa.table({"k": [2]}, schema=KEYS))
    w.write(rows([5], ["w2"], [25]))  # a second batch: more than one flush worth of sequence numbers


def table(root: Path, name: str, options: dict[str, str]) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(root))
    if "db" not in cat.list_databases():
        cat.create_database("db")
    t = cat.create_table(name, schema=SCHEMA, primary_key=["k"], options=options)
    t.write(rows([1, 2, 3, 4], ["base"] * 4, [1, 2, 3, 4]))
    return t


def content(t: lsmlake.Table) -> list[dict[str, object]]:
    return sorted(t.read().to_pylist(), key=lambda r: int(r["k"]))


def no_orphans(t: lsmlake.Table) -> bool:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


def concurrent(t: lsmlake.Table, steps: list[Step], publish_order: list[int]) -> list[int | None]:
    """Every writer restores the same snapshot, then they commit in ``publish_order``."""
    writers = [t.writer() for _ in steps]
    for w, step in zip(writers, steps, strict=True):
        step(w)
    return [writers[i].commit() for i in publish_order]


def serial(t: lsmlake.Table, steps: list[Step], publish_order: list[int]) -> None:
    for i in publish_order:
        with t.writer() as w:
            steps[i](w)


ENGINES = {
    "deduplicate": {},
    "deletion-vectors": {"deletion-vectors.enabled": "true"},
    "input-changelog": {"changelog-producer": "input"},
    "lookup-changelog": {"changelog-producer": "lookup"},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.a.aggregate-function": "last_non_null_value",
        "fields.b.aggregate-function": "last_value",
    },
    "orc": {"file.format": "orc"},
    "avro-lookup-changelog": {"file.format": "avro", "changelog-producer": "lookup"},
    "avro-input-changelog": {"file.format": "avro", "changelog-producer": "input"},
}


@pytest.mark.parametrize("order", [[0, 1], [1, 0]], ids=["first-then-second", "second-then-first"])
@pytest.mark.parametrize("engine", list(ENGINES))
def test_second_writer_is_rebased_and_result_equals_serial_order(
    tmp_path: Path, engine: str, order: list[int]
) -> None:
    options = {"bucket": "1", **ENGINES[engine]}
    steps: list[Step] = [first, second]
    if engine in ("partial-update", "aggregation"):  # these engines refuse deletes by default
        steps = [
            lambda w: w.write(rows([1, 2, 10], ["w1", None, "w1"], [11, 12, None])),
            lambda w: w.write(rows([1, 4, 10], [None, "w2", "w2"], [21, 24, 20])),
        ]
    t = table(tmp_path / "a", "db.t", options)
    ids = concurrent(t, steps, order)
    assert all(i is not None for i in ids)  # both acknowledged, nobody refused
    reference = table(tmp_path / "b", "db.t", options)
    serial(reference, steps, order)
    assert content(t) == content(reference)
    assert no_orphans(t)
    # commit order is sequence order: every file the later commit added starts above the earlier's
    files = [e.file for e in live_entries(t.io, t.paths, t.snapshot_manager.latest())]
    assert len({(f.min_sequence_number, f.max_sequence_number) for f in files}) == len(files)


def test_rebased_files_sit_above_the_other_writer_and_the_next_writer_continues(tmp_path: Path) -> None:
    t = table(tmp_path, "db.t", {"bucket": "1", "write-only": "true"})
    w1, w2 = t.writer(), t.writer()
    w1.write(rows([1, 2], ["w1", "w1"], [1, 1]))
    w2.write(rows([2, 3, 4], ["w2", "w2", "w2"], [2, 2, 2]))
    w1.commit()
    before = {e.file.file_name for e in live_entries(t.io, t.paths, t.snapshot_manager.latest())}
    w2.commit()
    latest = live_entries(t.io, t.paths, t.snapshot_manager.latest())
    mine = [e.file for e in latest if e.file.file_name not in before]
    w1_top = max(e.file.max_sequence_number for e in latest if e.file.file_name in before)
    # above the other writer's top, with headroom for the commits of writers still behind
    assert len(mine) == 1 and mine[0].min_sequence_number == w1_top + 1 + REBASE_HEADROOM
    assert mine[0].max_sequence_number - mine[0].min_sequence_number == 2  # relative order kept
    t.write(rows([9], ["w3"], [3]))  # a later writer restores the rebased numbers and goes above them
    newest = max(
        live_entries(t.io, t.paths, t.snapshot_manager.latest()), key=lambda e: e.file.min_sequence_number
    )
    assert newest.file.min_sequence_number == mine[0].max_sequence_number + 1
    assert {r["k"]: r["a"] for r in content(t)} == {1: "w1", 2: "w2", 3: "w2", 4: "w2", 9: "w3"}
    assert no_orphans(t)


def test_input_changelog_is_rebased_with_the_data(tmp_path: Path) -> None:
    t = table(tmp_path, "db.t", {"bucket": "1", "changelog-producer": "input"})
    concurrent(t, [first, second], [0, 1])
    snapshot = t.snapshot_manager.latest()
    assert snapshot is not None
    changelog = []
    for sid in range(1, snapshot.id + 1):
        s = t.snapshot_manager.snapshot(sid)
        if s.changelog_manifest_list:
            changelog += [e.file for e in live_entries_of_changelog(t, s.changelog_manifest_list)]
    data = [e.file for e in live_entries(t.io, t.paths, snapshot) if e.file.level == 0]
    last_data = max(data, key=lambda f: f.max_sequence_number)
    last_changelog = max(changelog, key=lambda f: f.max_sequence_number)
    assert (last_changelog.min_sequence_number, last_changelog.max_sequence_number) == (
        last_data.min_sequence_number,
        last_data.max_sequence_number,
    )


def live_entries_of_changelog(
    t: lsmlake.Table, manifest_list: str
) -> list[lsmlake.metadata.manifest.ManifestEntry]:
    from lsmlake.metadata.manifest import read_manifest
    from lsmlake.metadata.manifest_list import read_manifest_list

    metas = read_manifest_list(t.io, t.paths.manifest(manifest_list))
    return [e for m in metas for e in read_manifest(t.io, t.paths.manifest(m.file_name))]


def test_postpone_bucket_writers_are_replayed_in_published_order(tmp_path: Path) -> None:
    options = {
        "bucket": "-2",
        "postpone.default-bucket-num": "2",
        "postpone.batch-write-fixed-bucket": "false",
    }
    t = table(tmp_path / "a", "db.t", options)
    concurrent(t, [first, second], [1, 0])
    t.compact()
    reference = table(tmp_path / "b", "db.t", options)
    serial(reference, [first, second], [1, 0])
    reference.compact()
    assert content(t) == content(reference) != []
    assert no_orphans(t)
    # postpone-bucket files are avro without stats, as Java's PostponeBucketFileStoreWrite writes them
    postponed = [p for p in Path(t.root).rglob("bucket-postpone/*") if p.name.startswith("data-")]
    assert postponed and {p.suffix for p in postponed} == {".avro"}


def test_three_writers_each_see_the_others(tmp_path: Path) -> None:
    t = table(tmp_path, "db.t", {"bucket": "2", "deletion-vectors.enabled": "true"})
    writers = [t.writer() for _ in range(3)]
    for i, w in enumerate(writers):
        w.write(rows([1, 2, 3, 4, 5 + i], [f"w{i}"] * 5, [i] * 5))
    assert all(w.commit() is not None for w in writers)
    assert {r["k"]: r["a"] for r in content(t)} == {
        1: "w2",
        2: "w2",
        3: "w2",
        4: "w2",
        5: "w0",
        6: "w1",
        7: "w2",
    }


def test_a_stale_writers_own_compaction_does_not_undo_a_deletion_vector(tmp_path: Path) -> None:
    """The other writer deleted a key by a deletion vector on a file this writer's compaction merges:
    that compaction is stale although its inputs are live, so it is dropped and redone from the latest."""
    t = table(
        tmp_path,
        "db.t",
        {
            "bucket": "1",
            "deletion-vectors.enabled": "true",
            "snapshot.num-retained.min": "1",
            "snapshot.time-retained": "1 ms",
        },
    )
    w = t.writer()
    w.write(rows([7], ["w"], [7]))
    t.delete(pa.table({"k": [1, 2]}, schema=KEYS))
    w.commit()
    assert w.result is not None and w.result.compaction_dropped
    assert [r["k"] for r in content(t)] == [3, 4, 7]


def test_dynamic_bucket_writers_of_existing_and_new_keys_are_rebased(tmp_path: Path) -> None:
    t = table(tmp_path, "db.t", {"bucket": "-1"})
    concurrent(
        t,
        [
            lambda w: w.write(rows([1, 2], ["w1"] * 2, [1, 1])),
            lambda w: w.write(rows([2, 3], ["w2"] * 2, [2, 2])),
        ],
        [0, 1],
    )
    assert {r["k"]: r["a"] for r in content(t)} == {1: "w1", 2: "w2", 3: "w2", 4: "base"}
    # both place a new key (in the same bucket here; tests/commit/test_reroute.py moves keys placed in
    # different ones): the second is rebased above the first and its HASH file merged with the first's
    w1, w2 = t.writer(), t.writer()
    w1.write(rows([50, 51], ["w1"] * 2, [1, 1]))
    w2.write(rows([50, 52], ["w2"] * 2, [2, 2]))
    w1.commit()
    assert w2.commit() is not None
    assert {r["k"]: r["a"] for r in content(t)} == {
        1: "w1",
        2: "w2",
        3: "w2",
        4: "base",
        50: "w2",
        51: "w1",
        52: "w2",
    }
    snapshot = t.snapshot_manager.latest()
    assert snapshot is not None and snapshot.index_manifest
    (index,) = read_index_manifest(t.io, t.paths.manifest(snapshot.index_manifest))
    every_key = pa.array([1, 2, 3, 4, 50, 51, 52], pa.int64())  # both writers' new keys are indexed
    hashes = hash_rows([every_key], [t.schema.field("k").type])
    assert sorted(read_hash_index(t.io, t.paths, index.index_file).tolist()) == sorted(hashes.tolist())
    assert no_orphans(t)


def test_cross_partition_upserts_of_one_new_key_end_in_the_later_partition(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False)])
    t = cat.create_table(
        "db.t", schema=schema, primary_key=["k"], partition_keys=["p"], options={"bucket": "-1"}
    )
    w1, w2 = t.writer(), t.writer()
    w1.write(pa.table({"k": [1], "p": [1]}, schema=schema))
    w2.write(pa.table({"k": [1], "p": [2]}, schema=schema))  # another partition: the buckets differ
    w1.commit()
    w2.commit()  # rebased: the key written first in partition 1 is deleted there (tests/commit/test_reroute.py)
    assert t.read().to_pylist() == [{"k": 1, "p": 2}]  # one key, one partition, as run one after the other
    assert no_orphans(t)
