"""The crash campaign's partitioned table: each write also lands in a live partition (far future, never
expires) and in its own old partition (far past), which `partition.expiration-time` drops after the
commit; after every kill the live partition matches the model, each old partition is gone or whole,
every retained snapshot reads, and orphan cleaning removes only unreferenced files."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import lsmlake
from bench.campaign_log import Model, Write, apply, differences, write_of
from lsmlake.catalog import Catalog
from lsmlake.table import Table

PTABLE = "db.p"
LIVE = "29990101"
_DAY0 = dt.date(2000, 1, 1)
PSCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("k", pa.int64(), nullable=False),
        ("v", pa.int64()),
    ]
)
POPTIONS = {
    "bucket": "1",
    "deletion-vectors.enabled": "true",
    "partition.expiration-time": "1 d",
    "partition.expiration-check-interval": "0 s",
    "partition.timestamp-formatter": "yyyyMMdd",
    "snapshot.num-retained.min": "3",
    "snapshot.num-retained.max": "6",
}


def old_partition(g: int) -> str:
    """Write ``g``'s own partition: a day of the year 2000 onwards, long expired."""
    return (_DAY0 + dt.timedelta(days=g)).strftime("%Y%m%d")


def create_ptable(catalog: Catalog) -> None:
    catalog.create_table(
        PTABLE, schema=PSCHEMA, primary_key=["dt", "k"], partition_keys=["dt"], options=POPTIONS
    )


def write_partitions(table: Table, write: Write, g: int) -> list[int]:
    """Write ``g`` into the live partition (upserts and deletes) and into its old partition (upserts);
    the commit's snapshot ids (partition expiry runs after them, before this returns)."""
    keys = list(write.upserts)
    values = [write.upserts[k] for k in keys]
    rows = pa.table(
        {"dt": [LIVE] * len(keys) + [old_partition(g)] * len(keys), "k": keys * 2, "v": values * 2},
        schema=PSCHEMA,
    )
    w = table.writer()
    w.write(rows)
    if write.deletes:
        w.delete(pa.table({"dt": [LIVE] * len(write.deletes), "k": list(write.deletes)}))
    w.commit()
    assert w.result is not None
    return list(w.result.snapshot_ids)


@dataclass
class PartitionHistory:
    """The partitioned table's writes that landed (g, Write) and the snapshot each acknowledged one made."""

    landed: dict[int, Write] = field(default_factory=dict)
    acked_snapshots: dict[int, int] = field(default_factory=dict)  # last snapshot of write g -> g
    last_acked: int = -1

    def live(self, upto: int | None = None) -> Model:
        return apply({}, [w for g, w in sorted(self.landed.items()) if upto is None or g <= upto])


@dataclass
class PartitionFigures:
    expired: set[int] = field(default_factory=set)  # writes whose old partition was found gone
    kept_whole: set[int] = field(default_factory=set)  # writes whose old partition a kill left whole
    orphans_removed: int = 0


def _by_partition(t: pa.Table) -> dict[str, Model]:
    out: dict[str, Model] = {}
    for d, k, v in zip(
        t.column("dt").to_pylist(), t.column("k").to_pylist(), t.column("v").to_pylist(), strict=True
    ):
        out.setdefault(d, {})[k] = v
    return out


def _day_of(partition: str) -> int:
    return (dt.datetime.strptime(partition, "%Y%m%d").date() - _DAY0).days


def check_partitions(
    table: Table,
    uri: str,
    records: list[dict[str, Any]],
    inflight: tuple[int, Write] | None,
    history: PartitionHistory,
    figures: PartitionFigures,
    where: str,
) -> tuple[list[str], int]:
    """Check the partitioned table after a round; its failures and the number of checks made.
    ``records`` are the round's acknowledgements of the partitioned table ({"p": g, "up", "del", "ids"});
    ``inflight`` the write (g, Write) whose partitioned commit may have landed unacknowledged."""
    failures: list[str] = []
    checks = 0
    done = [(int(r["p"]), write_of(r)) for r in records]
    for r, (g, w) in zip(records, done, strict=True):
        history.landed[g] = w
        history.acked_snapshots[int(r["ids"][-1])] = g
    if done:
        history.last_acked = done[-1][0]
    lsmlake.clear_caches()
    checks += 1
    parts = _by_partition(table.with_options({"deletion-vectors.merge-on-read": "true"}).read())
    live = parts.pop(LIVE, {})
    if inflight is not None and inflight[0] not in history.landed:
        with_inflight = apply(history.live(), [inflight[1]])
        if live == with_inflight and live != history.live():
            history.landed[inflight[0]] = inflight[1]
    if live != history.live():
        failures.append(
            f"{where}: live partition differs from the model: {differences(live, history.live())}"
        )
    # old partitions: whole or gone; every one up to the last acknowledged write is gone (its expiry ran)
    for name, rows in parts.items():
        g = _day_of(name)
        w = history.landed.get(g)
        if w is None:
            failures.append(f"{where}: old partition {name} of write {g}, which never landed")
        elif rows != dict(w.upserts):
            failures.append(f"{where}: old partition {name} is partial: {differences(rows, dict(w.upserts))}")
        elif g <= history.last_acked:
            failures.append(
                f"{where}: old partition {name} outlived the expiry after write {history.last_acked}"
            )
        else:
            figures.kept_whole.add(g)
    figures.expired |= {g for g in history.landed if old_partition(g) not in parts}
    # every retained snapshot reads; its old partitions are whole, an acknowledged one's live partition right
    for sid in table.snapshot_manager.snapshot_ids():
        checks += 1
        try:
            got = _by_partition(table.read(snapshot_id=sid))
        except Exception as e:
            failures.append(f"{where}: {PTABLE} snapshot {sid} is unreadable: {type(e).__name__}: {e}")
            continue
        g = history.acked_snapshots.get(sid)
        if g is not None and got.get(LIVE, {}) != history.live(g):
            failures.append(f"{where}: {PTABLE} snapshot {sid} (write {g}): live partition differs")
        for name, rows in got.items():
            w = history.landed.get(_day_of(name)) if name != LIVE else None
            if name != LIVE and (w is None or rows != dict(w.upserts)):
                failures.append(f"{where}: {PTABLE} snapshot {sid}: old partition {name} is not whole")
    checks += 1
    failures += _check_orphans(table, uri, live, figures, where)
    return failures, checks


def _check_orphans(table: Table, uri: str, live: Model, figures: PartitionFigures, where: str) -> list[str]:
    """remove_orphan_files removes no file a retained snapshot references, and the reads stay the same."""
    files = Catalog(uri).get_table(f"{PTABLE}$files")
    referenced: set[str] = set()
    for sid in table.snapshot_manager.snapshot_ids():
        referenced |= {
            p.rsplit("/", 1)[-1] for p in files.read(snapshot_id=sid).column("file_path").to_pylist()
        }
    try:
        removed = table.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    except Exception as e:
        return [f"{where}: {PTABLE} remove_orphan_files failed: {type(e).__name__}: {e}"]
    figures.orphans_removed += len(removed)
    out = []
    bad = sorted(p for p in removed if p.rsplit("/", 1)[-1] in referenced)
    if bad:
        out.append(f"{where}: {PTABLE} remove_orphan_files removed referenced files: {bad[:3]}")
    lsmlake.clear_caches()
    after = table.with_options({"deletion-vectors.merge-on-read": "true"}).read()
    after_live = _by_partition(after.filter(pc.field("dt") == LIVE)).get(LIVE, {})
    if after_live != live:
        out.append(f"{where}: {PTABLE} rows changed by orphan cleaning: {differences(after_live, live)}")
    for sid in table.snapshot_manager.snapshot_ids():
        try:
            table.read(snapshot_id=sid)
        except Exception as e:
            out.append(f"{where}: {PTABLE} snapshot {sid} unreadable after orphan cleaning: {e}")
    return out
