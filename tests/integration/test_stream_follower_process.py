"""A streaming reader in another process follows a writer, is killed, and resumes by consumer id."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
from change_model import apply_changes, as_model

import lsmlake

SCRIPT = Path(__file__).with_name("_stream_follower.py")
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
COMMITS = 20


def _start(warehouse: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(warehouse), "db.t", "follower", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for(predicate: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _logged(out: Path, pid: int) -> list[tuple[int, int, int]]:
    path = out / f"log-{pid}.txt"
    if not path.exists():
        return []
    return [tuple(int(x) for x in line.split()) for line in path.read_text().splitlines()]  # type: ignore[misc]


def _commit(table: lsmlake.Table, rng: random.Random, i: int) -> int | None:
    if i % 7 == 6:
        return table.compact(full=i % 2 == 0)
    if i % 4 == 3:
        return table.delete(
            pa.table({"id": rng.sample(range(40), 3)}, schema=pa.schema([SCHEMA.field("id")]))
        )
    ids = rng.sample(range(40), rng.randrange(2, 10))
    return table.write(pa.table({"id": ids, "v": [f"{i}-{k}" for k in ids]}, schema=SCHEMA))


def test_follower_process_is_killed_and_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    warehouse, out = tmp_path / "wh", tmp_path / "out"
    out.mkdir()
    cat = lsmlake.Catalog(str(warehouse))
    cat.create_database("db")
    table = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    rng = random.Random(5)
    first = _start(warehouse, out)
    consumer = warehouse / "db.db" / "t" / "consumer" / "consumer-follower"
    _wait_for(consumer.exists, "the follower to register")  # mode latest on an empty table: from snapshot 1
    for i in range(COMMITS // 2):
        _commit(table, rng, i)
        time.sleep(0.03)
    _wait_for(lambda: any(s >= 5 for s, _, _ in _logged(out, first.pid)), "the follower to reach snapshot 5")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    saved = json.loads(consumer.read_text())["nextSnapshot"]
    for i in range(COMMITS // 2, COMMITS):
        _commit(table, rng, i)
    second = _start(warehouse, out)
    table.write(pa.table({"id": [-1], "v": ["end"]}, schema=SCHEMA))
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()

    # the restarted follower began where the killed one had saved its progress, not earlier
    resumed = _logged(out, second.pid)
    assert resumed and resumed[0][0] >= saved
    read_by_first = {s for s, _, _ in _logged(out, first.pid)}
    assert max(read_by_first) < saved + 1  # nothing after the saved position was lost to the kill
    # every change piece was delivered; re-delivered ones (the snapshot in flight) were overwritten
    model: dict[object, dict[str, object]] = {}
    total = 0
    for path in sorted(out.glob("*.arrow")):
        with pa.memory_map(str(path)) as source:
            changes = ipc.open_file(source).read_all()
        total += changes.num_rows
        apply_changes(model, changes, "id")
    assert model == as_model(table.read(), "id")
    manager = table.snapshot_manager
    appended = 0
    for sid in manager.snapshot_ids():
        s = manager.snapshot(sid)
        if s.commit_kind == "APPEND":
            appended += s.delta_record_count
    assert total == appended  # each change row exactly once
