"""A write tells "nothing happened" from "the APPEND landed": ``TableWriter.result`` names every snapshot
it published, and an error raised after a snapshot landed carries ``published_snapshot_ids``. A commit
that gives up retrying says why, after how many attempts and how long, and which options control it."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.commit.committer import REBASED_BACKOFF_LEVEL, FileStoreCommit, backoff_level, retry_wait_ms
from lsmlake.commit.publish import CommitResult
from lsmlake.core.options import CoreOptions
from lsmlake.errors import CommitConflictError, DurabilityError, LsmlakeError, PartiallyPublishedError
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.snapshot import Snapshot
from lsmlake.metadata.snapshot_manager import SnapshotManager

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
DV = {"bucket": "1", "deletion-vectors.enabled": "true"}


def rows(keys: range, tag: str) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def table(tmp_path: Path, options: dict[str, str] | None = None) -> lsmlake.Table:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options or DV)
    t.write(rows(range(0, 10), "a"))
    return t


def no_orphans(t: lsmlake.Table) -> bool:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


def fail_compactions(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """Every COMPACT commit (the write's own and the fresh one tried instead) raises ``error``."""
    original = FileStoreCommit.commit

    def commit(self: FileStoreCommit, messages: Sequence[CommitMessage], **kw: int) -> list[int]:
        if any(m.compact_before or m.compact_after for m in messages):
            raise error
        return original(self, messages, **kw)

    monkeypatch.setattr(FileStoreCommit, "commit", commit)
    monkeypatch.setattr("lsmlake.commit.publish.compact_buckets", lambda *a, **kw: _raise(error))


def _raise(error: BaseException) -> int | None:
    raise error


def test_result_names_every_snapshot_published(tmp_path: Path) -> None:
    t = table(tmp_path)
    with t.writer() as w:
        w.write(rows(range(5, 15), "b"))
    assert w.result is not None
    ids = w.result.snapshot_ids
    assert [t.snapshot(i).commit_kind for i in ids] == ["APPEND", "COMPACT"]
    assert w.result.snapshot_id == ids[-1] == t.latest_snapshot().id  # type: ignore[union-attr]
    assert not w.result.compaction_dropped
    assert t.write(rows(range(20, 21), "c")) == t.latest_snapshot().id  # type: ignore[union-attr]
    empty = t.writer()
    assert empty.commit() is None and empty.result == CommitResult()


def test_a_compaction_that_loses_after_the_append_names_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = table(tmp_path)
    before = t.latest_snapshot()
    assert before is not None
    fail_compactions(monkeypatch, CommitConflictError("simulated: another writer rewrote the bucket"))
    w = t.writer()
    w.write(rows(range(5, 15), "b"))
    with pytest.warns(UserWarning, match="compaction lost a race"):
        sid = w.commit()  # the write stands: the compaction was optional work
    assert sid == before.id + 1 and t.snapshot(sid).commit_kind == "APPEND"
    assert w.result == CommitResult((sid,), compaction_dropped=True)
    assert no_orphans(t)


def test_a_foreign_error_after_the_append_is_a_partially_published_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = table(tmp_path)
    append = t.latest_snapshot().id + 1  # type: ignore[union-attr]
    fail_compactions(monkeypatch, RuntimeError("simulated crash in the compaction"))
    with pytest.raises(PartiallyPublishedError) as info:
        t.write(rows(range(5, 15), "b"))
    err = info.value
    assert err.published_snapshot_ids == (append,)
    assert f"snapshot {append} published" in str(err) and "do not retry" in str(err)
    assert "simulated crash" in str(err) and isinstance(err.__cause__, RuntimeError)
    assert not isinstance(err, CommitConflictError)  # a retry loop on conflicts does not re-apply it
    monkeypatch.undo()
    assert t.snapshot(append).commit_kind == "APPEND"
    assert {r["k"] for r in t.read().to_pylist()} >= set(range(10))
    assert no_orphans(t)


def test_an_lsmlake_error_after_the_append_keeps_its_type_and_names_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = table(tmp_path)
    append = t.latest_snapshot().id + 1  # type: ignore[union-attr]
    fail_compactions(monkeypatch, DurabilityError("could not fsync manifest-x: simulated"))
    w = t.writer()
    w.write(rows(range(5, 15), "b"))
    with pytest.raises(DurabilityError) as info:
        w.commit()
    assert info.value.published_snapshot_ids == (append,)
    assert any(f"snapshot {append} published" in n for n in info.value.__notes__)
    assert w.result == CommitResult((append,)) and w.snapshot_ids == [append]


def test_an_error_in_expiry_after_the_commit_names_both_snapshots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = table(tmp_path)
    monkeypatch.setattr("lsmlake.table.writer.maintain_after_commit", lambda _t, **_: _raise(OSError("disk gone")))
    w = t.writer()
    w.write(rows(range(5, 15), "b"))
    with pytest.raises(PartiallyPublishedError) as info:
        w.commit()
    assert w.result is not None and len(w.result.snapshot_ids) == 2
    assert info.value.published_snapshot_ids == w.result.snapshot_ids


def test_a_conflict_before_anything_landed_names_no_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = table(tmp_path)
    before = t.latest_snapshot()

    def conflict(self: FileStoreCommit, changes: object, latest: Snapshot | None) -> None:
        raise CommitConflictError("simulated: bucket 0 was written by another writer")

    monkeypatch.setattr(FileStoreCommit, "_check_conflicts", conflict)
    w = t.writer()
    w.write(rows(range(5, 15), "b"))
    with pytest.raises(CommitConflictError) as info:
        w.commit()
    assert info.value.published_snapshot_ids == ()
    assert not getattr(info.value, "__notes__", [])
    assert w.result == CommitResult() and w.snapshot_ids == []
    monkeypatch.undo()
    assert t.latest_snapshot() == before and no_orphans(t)


def test_a_real_conflict_between_two_writers_names_no_snapshot(tmp_path: Path) -> None:
    t = table(tmp_path, {"bucket": "1"})
    first, second = t.writer(), t.writer()
    first.write(rows(range(0, 5), "b"))
    second.write(rows(range(3, 8), "c"))
    first.commit()
    try:
        second.commit()
    except LsmlakeError as e:  # refused (or, once writers rebase, it may land)
        assert isinstance(e, CommitConflictError) and e.published_snapshot_ids == ()
        assert second.result == CommitResult()
    else:
        assert second.result is not None and second.result.snapshot_ids


def always_lose(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every snapshot publish loses the race (as if another writer took the id each time)."""
    tried: list[int] = []

    def lose(
        self: SnapshotManager, snapshot: Snapshot, delta: object = (), base: object = None
    ) -> tuple[bool, Snapshot | None]:
        tried.append(snapshot.id)
        return False, None

    monkeypatch.setattr(SnapshotManager, "publish_or_read", lose)
    return tried


def test_giving_up_says_why_how_many_attempts_how_long_and_which_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = table(tmp_path).with_options(
        {"commit.max-retries": "3", "commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "2 ms"}
    )
    before = t.latest_snapshot()
    tried = always_lose(monkeypatch)
    with pytest.raises(CommitConflictError) as info:
        t.write(rows(range(5, 15), "b"))
    monkeypatch.undo()
    message = str(info.value)
    assert len(tried) == 4  # one attempt and three retries
    assert re.search(r"gave up publishing a APPEND snapshot after 4 attempts in \d+\.\d s", message)
    assert "commit.max-retries is 3" in message and "lost the race" in message
    for option in ("commit.max-retries (3)", "commit.timeout (none)", "commit.min-retry-wait (1 ms)"):
        assert option in message
    assert "commit.max-retry-wait (2 ms)" in message and "nothing was published" in message
    assert info.value.published_snapshot_ids == ()
    assert t.latest_snapshot() == before and no_orphans(t)


def test_commit_timeout_bounds_the_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = table(tmp_path).with_options(
        {"commit.max-retries": "1000", "commit.min-retry-wait": "5 ms", "commit.timeout": "100 ms"}
    )
    always_lose(monkeypatch)
    start = time.monotonic()
    with pytest.raises(CommitConflictError, match=r"would pass commit\.timeout \(100 ms\)") as info:
        t.write(rows(range(5, 15), "b"))
    assert time.monotonic() - start < 5
    attempts = int(re.findall(r"after (\d+) attempts", str(info.value))[0])
    assert 2 <= attempts < 1000


def test_retry_defaults_fit_many_writers_and_backoff_is_jittered() -> None:
    # lsmlake's defaults (Paimon: 10 retries, 10 s): 8 writers on the same 4 buckets measured 95.1%
    # of writes acknowledged without a caller-side retry with Paimon's, 100% with these
    assert CoreOptions.COMMIT_MAX_RETRIES.default == 60
    assert CoreOptions.COMMIT_MIN_RETRY_WAIT.default == 10
    assert CoreOptions.COMMIT_MAX_RETRY_WAIT.default == 1_000
    assert CoreOptions.COMMIT_TIMEOUT.default is None
    rng = random.Random(7)
    for attempt, base in [(1, 10), (2, 20), (5, 160), (10, 5120), (11, 10_000), (500, 10_000)]:
        waits = {retry_wait_ms(attempt, 10, 10_000, rng) for _ in range(50)}
        assert all(base <= w <= base * 1.2 for w in waits) and len(waits) > 1
    # with the defaults, a commit that keeps losing without rebasing waits about 55 s over its retries
    total = sum(min(10 * 2 ** (a - 1), 1_000) for a in range(1, 61))
    assert total == 54_270


def test_a_commit_that_rebased_does_not_back_off_further() -> None:
    """The fairness rule: a loss after a rebase keeps the wait at its third step (40 ms by default)."""
    level = 0
    for _ in range(20):
        level = backoff_level(level, rebased=True)
    assert level == REBASED_BACKOFF_LEVEL + 1 == 3
    assert retry_wait_ms(level, 10, 1_000) <= 40 * 1.2
    assert backoff_level(level, rebased=False) == 4  # a loss without a rebase backs off as before
    assert backoff_level(7, rebased=True) == 3


@pytest.mark.parametrize("rebased", [False, True])
def test_an_interrupt_right_after_publishing_deletes_no_referenced_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rebased: bool
) -> None:
    """A KeyboardInterrupt between the snapshot landing and the commit returning (while the hints are
    written): the files the snapshot references, rebased copies included, stay; the error names it."""
    t = table(tmp_path, {"bucket": "1", "write-only": "true"})
    w1, w2 = t.writer(), t.writer()
    w1.write(rows(range(20, 25), "w1"))
    w2.write(rows(range(30, 35), "w2"))
    if rebased:  # w2's level-0 file must be rebased above w1's sequence numbers
        w1.commit()
    original = FileStoreCommit._write_hints

    def interrupted(self: FileStoreCommit, snapshot_id: int, *, first: bool) -> None:
        original(self, snapshot_id, first=first)
        raise KeyboardInterrupt

    monkeypatch.setattr(FileStoreCommit, "_write_hints", interrupted)
    with pytest.raises(KeyboardInterrupt) as raised:
        w2.commit()
    monkeypatch.setattr(FileStoreCommit, "_write_hints", original)
    landed = t.latest_snapshot()
    assert landed is not None
    assert any(f"snapshot {landed.id}" in note for note in getattr(raised.value, "__notes__", []))
    content = {r["k"]: r["v"] for r in t.read().to_pylist()}  # every referenced file is readable
    assert all(content[k] == f"w2{k}" for k in range(30, 35))
    if rebased:
        assert all(content[k] == f"w1{k}" for k in range(20, 25))
    t.compact(full=True)
    assert len(t.read()) == 20 if rebased else 15
