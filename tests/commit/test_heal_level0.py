"""A commit interrupted between its APPEND and COMPACT snapshots leaves level-0 files that batch reads
of deletion-vector and first-row tables skip; ``explain`` and ``$buckets`` show them, and the next
commit to any other bucket compacts them, so the committed rows become visible."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.core.bucket import bucket_ids
from lsmlake.core.fileio import FileIO
from lsmlake.errors import PartiallyPublishedError
from lsmlake.system.registry import read_system_table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
BUCKETS = 4


class Interrupted(Exception):
    """The injected crash after the APPEND snapshot."""


class NoSecondSnapshotIO(FileIO):
    """Publishes the first snapshot of a commit, then fails to publish the next: the process dies
    between the APPEND and the COMPACT snapshot."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner.fs, local=inner.local)
        self.published = 0

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            self.published += 1
            if self.published == 2:
                raise Interrupted(f"crash before {path}")
        return super().write_if_absent(path, data)


def keys_in_bucket(t: lsmlake.Table, bucket: int, n: int) -> list[int]:
    candidates = pa.array(range(10_000), pa.int64())
    ids = bucket_ids([candidates], [t.schema.field("k").type], BUCKETS)
    return [int(k) for k, b in zip(candidates.to_pylist(), ids, strict=True) if b == bucket][:n]


def make(tmp_path: Path, options: dict[str, str]) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": str(BUCKETS), **options}
    )
    t.write(pa.table({"k": list(range(40)), "v": ["old"] * 40}, schema=SCHEMA))
    return t


def crash_after_append(t: lsmlake.Table, keys: list[int], value: str) -> int:
    """A write of ``keys`` whose COMPACT snapshot never lands; the APPEND snapshot's id."""
    faulty = dataclasses.replace(t, io=NoSecondSnapshotIO(t.io))
    with pytest.raises(PartiallyPublishedError) as info:
        faulty.write(pa.table({"k": keys, "v": [value] * len(keys)}, schema=SCHEMA))
    (append,) = info.value.published_snapshot_ids
    assert t.snapshot(append).commit_kind == "APPEND"
    return append


def visible(t: lsmlake.Table) -> dict[int, str]:
    return {r["k"]: r["v"] for r in t.read().to_pylist()}


def buckets_rows(t: lsmlake.Table) -> dict[int, tuple[int, int]]:
    rows = read_system_table(t, "buckets").to_pylist()
    return {r["bucket"]: (r["skipped_level0_file_count"], r["skipped_level0_record_count"]) for r in rows}


@pytest.mark.parametrize(
    "options",
    [{"deletion-vectors.enabled": "true"}, {"merge-engine": "first-row"}],
    ids=["deletion-vectors", "first-row"],
)
def test_next_commit_to_another_bucket_heals_an_interrupted_commit(
    tmp_path: Path, options: dict[str, str]
) -> None:
    t = make(tmp_path, options)
    lost = [k for k in keys_in_bucket(t, 1, 3) if k < 40]  # keys the first write wrote
    new_key = keys_in_bucket(t, 1, 200)[-1]  # a key not in the first write (>= 40)
    assert new_key >= 40
    crash_after_append(t, [*lost, new_key], "new")
    now = visible(t)
    assert new_key not in now, "a batch read of this table skips level 0"
    assert buckets_rows(t)[1] == (1, 4)
    assert buckets_rows(t)[0] == (0, 0)
    text = t.explain()
    assert "level-0 files skipped by batch reads: 1 file(s), 4 row(s) in 1 bucket(s)" in text
    assert "    bucket 1: 1 file(s), 4 row(s)" in text

    other = keys_in_bucket(t, 2, 200)[-1:]  # a new key
    ids = t.writer()
    ids.write(pa.table({"k": other, "v": ["x"]}, schema=SCHEMA))
    ids.commit()
    assert ids.result is not None and len(ids.result.snapshot_ids) == 3  # APPEND, COMPACT, the heal
    assert t.snapshot(ids.result.snapshot_ids[-1]).commit_kind == "COMPACT"
    now = visible(t)
    expected = "old" if options.get("merge-engine") == "first-row" else "new"
    assert now[new_key] == "new" and all(now[k] == expected for k in lost) and now[other[0]] == "x"
    assert buckets_rows(t)[1] == (0, 0)
    assert "level-0 files skipped by batch reads:" not in t.explain()


def test_healing_is_bounded_per_commit_and_can_be_turned_off(tmp_path: Path) -> None:
    t = make(tmp_path, {"deletion-vectors.enabled": "true", "lsmlake.commit.heal-level0-buckets": "1"})
    for b in (0, 1, 2):
        crash_after_append(t, keys_in_bucket(t, b, 2), f"b{b}")
    assert {b: n for b, (n, _) in buckets_rows(t).items() if n} == {0: 1, 1: 1, 2: 1}
    t.write(pa.table({"k": keys_in_bucket(t, 3, 1), "v": ["x"]}, schema=SCHEMA))
    assert sum(n for n, _ in buckets_rows(t).values()) == 2, "one bucket healed per commit"

    off = t.with_options({"lsmlake.commit.heal-level0-buckets": "0"})
    off.write(pa.table({"k": keys_in_bucket(t, 3, 1), "v": ["y"]}, schema=SCHEMA))
    assert sum(n for n, _ in buckets_rows(t).values()) == 2
    t.write(pa.table({"k": keys_in_bucket(t, 3, 1), "v": ["z"]}, schema=SCHEMA))
    t.write(pa.table({"k": keys_in_bucket(t, 3, 1), "v": ["z"]}, schema=SCHEMA))
    assert sum(n for n, _ in buckets_rows(t).values()) == 0
    assert all(visible(t)[k] == f"b{b}" for b in (0, 1, 2) for k in keys_in_bucket(t, b, 2))


def test_tables_that_read_level_0_are_left_alone(tmp_path: Path) -> None:
    t = make(tmp_path, {})
    keys = keys_in_bucket(t, 1, 2)
    # no compaction is due: a write-only commit leaves what an interrupted one would
    t.with_options({"write-only": "true"}).write(pa.table({"k": keys, "v": ["new"] * 2}, schema=SCHEMA))
    assert {f["level"] for f in read_system_table(t, "files").to_pylist() if f["bucket"] == 1} == {0}
    assert all(visible(t)[k] == "new" for k in keys), "a merge read sees level 0"
    assert buckets_rows(t)[1] == (0, 0) and "skipped by batch reads:" not in t.explain()
    w = t.writer()
    w.write(pa.table({"k": keys_in_bucket(t, 2, 1), "v": ["x"]}, schema=SCHEMA))
    w.commit()
    assert w.result is not None and len(w.result.snapshot_ids) == 1  # its APPEND only: no healing


def test_level_0_files_published_after_a_writers_base_are_left_to_their_writer(tmp_path: Path) -> None:
    """A writer heals only what its base snapshot held: level-0 files that landed while it was writing
    may be those of a writer compacting them right now. The next commit that starts after them heals
    them."""
    t = make(tmp_path, {"deletion-vectors.enabled": "true"})
    w = t.writer()
    w.write(pa.table({"k": keys_in_bucket(t, 3, 200)[-1:], "v": ["x"]}, schema=SCHEMA))  # base read here
    crash_after_append(t, keys_in_bucket(t, 1, 2), "new")  # lands while ``w`` is writing
    w.commit()
    assert w.result is not None and len(w.result.snapshot_ids) == 2  # APPEND, COMPACT: no heal
    assert buckets_rows(t)[1] == (1, 2)
    t.write(pa.table({"k": keys_in_bucket(t, 2, 200)[-1:], "v": ["y"]}, schema=SCHEMA))
    assert buckets_rows(t)[1] == (0, 0)
    assert all(visible(t)[k] == "new" for k in keys_in_bucket(t, 1, 2))
