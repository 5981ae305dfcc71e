"""A differential run that once failed, replayed step by step: a rollback after a Java fast-forward."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from java_harness import JavaPaimon
from test_java_differential import KINDS, Differential

pytestmark = [pytest.mark.java]


@pytest.mark.parametrize("side", ["java", "lsmlake"])
def test_rollback_after_a_java_fast_forward_then_compaction(
    side: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Java's fast-forward copies the branch's EARLIEST hint into main (here 8, over main's 1..7); a rollback to
    tag0 (6) must still remove snapshot 7. Paimon 1.4.2's RollbackHelper deletes only from that hint up, so 7
    was the latest again and its level-0 deletes (invisible with deletion vectors) came back at the next
    compaction. lsmlake's rollback removes every snapshot above the tag; the rule finishes Java's with it."""
    kind = next(k for k in KINDS if k.name == "dedup-dynamic-orc-dv")
    attrs = {"kind": kind, "java": java_paimon, "base": tmp_path, "counter": itertools.count()}
    m = type("Replay", (Differential,), attrs)()
    m.first_writes(seed=36, more=[10, 0, 20, 12, 23, 14], keys=[1])
    m.lsmlake_compact(full=False)
    m.lsmlake_delete(picks=[802019, 6547, 394478])
    m.create_tag(side="lsmlake")
    m.lsmlake_compact(full=False)
    m.lsmlake_delete(picks=[9738, 192495, 7440])
    m.create_tag(side="lsmlake")
    m.java_branch(forward=True, keys=[20, 17, 3, 6, 1, 21], pick=401, seed=14505)
    m.both_sides_read_the_model()
    m.time_travel(pick=0)  # snapshots 1..7 are below the copied EARLIEST: the run picks among 8..10
    m.create_tag(side="lsmlake")
    m.rollback_to_tag(pick=969, side=side)
    assert m.table.snapshot_manager.listed_ids()[-1] == 6 == m.latest()
    java_left_seven = any("left snapshots [7]" in s for s in m.log)  # Paimon 1.4.2's rollback, finished
    assert java_left_seven == (side == "java"), m.log
    m.both_sides_read_the_model()
    m.java_branch(forward=False, keys=[3], pick=999999, seed=49967)
    m.lsmlake_compact(full=False)
    m.both_sides_read_the_model()
    m.lsmlake_compact(full=True)
    m.java_compact(full=True)
    m.both_sides_read_the_model()
    m.read_tag(0)
    m.teardown()
