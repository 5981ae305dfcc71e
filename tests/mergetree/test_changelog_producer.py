"""The vectorized changelog wrappers against a per-key reference of Paimon's lookup / full-compaction rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lsmlake.core.options import CoreOptions
from lsmlake.mergetree.changelog_producer import (
    RowDeduplicate,
    changelog_rows,
    full_compaction_before,
    lookup_before,
)
from lsmlake.mergetree.engines.segments import Segments
from lsmlake.mergetree.kv_layout import SEQUENCE_NUMBER, VALUE_KIND
from lsmlake.mergetree.lookup_merge import lookup_merge_rows, shadowed_mask
from lsmlake.mergetree.merge_function import Deduplicate

MAX_LEVEL = 5
ADD = (0, 2)
KINDS = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}

# one key: records at distinct levels above 0 (older the higher), then level-0 records (newest)
RECORD = st.tuples(st.sampled_from([0, 2, 3]), st.integers(0, 3))  # (kind, value)
KEY = st.tuples(
    st.lists(st.sampled_from([1, 2, 3, 4, 5]), unique=True, max_size=3),
    st.lists(RECORD, max_size=3),
    st.lists(RECORD, min_size=5, max_size=5),
)


def build(keys: list[Any]) -> pa.Table:
    """Key-sorted rows in merge order: per key, higher levels first (older), level 0 last."""
    out: dict[str, list[Any]] = {"k": [], "v": [], SEQUENCE_NUMBER: [], VALUE_KIND: [], "level": []}
    seq = 0
    for k, (levels, level0, pool) in enumerate(keys):
        records = [(lv, *pool[i]) for i, lv in enumerate(sorted(levels, reverse=True))]
        records += [(0, kind, v) for kind, v in level0]
        for level, kind, v in records:
            for name, value in zip(out, (k, v, seq, kind, level), strict=True):
                out[name].append(value)
            seq += 1
    return pa.table(
        {
            "k": pa.array(out["k"], pa.int32()),
            "v": pa.array(out["v"], pa.int64()),
            SEQUENCE_NUMBER: pa.array(out[SEQUENCE_NUMBER], pa.int64()),
            VALUE_KIND: pa.array(out[VALUE_KIND], pa.int8()),
            "level": pa.array(out["level"], pa.int32()),
        }
    )


def reference(rows: pa.Table, *, mode: str, dedup: bool) -> list[tuple[str, int, int, int]]:
    """Paimon's wrappers, one key at a time, over a deduplicate merge."""
    out = []
    for k in sorted(set(rows.column("k").to_pylist())):
        recs = [r for r in rows.to_pylist() if r["k"] == k]
        if mode == "lookup":
            if not any(r["level"] == 0 for r in recs):
                continue
            high = [r for r in recs if r["level"] > 0]
            before = min(high, key=lambda r: r["level"]) if high else None
            after = [r for r in recs if r["level"] == 0][-1]  # deduplicate: the newest wins
        else:
            before = next((r for r in recs if r["level"] == MAX_LEVEL), None)
            if len(recs) == 1 and before is not None:
                continue
            after = recs[-1]
        b_add = before is not None and before[VALUE_KIND] in ADD
        a_add = after[VALUE_KIND] in ADD
        if not b_add and a_add:
            out.append(("+I", k, after["v"], after[SEQUENCE_NUMBER]))
        elif b_add and not a_add:
            out.append(("-D", k, before["v"], before[SEQUENCE_NUMBER]))  # type: ignore[index]
        elif b_add and a_add and not (dedup and before["v"] == after["v"]):  # type: ignore[index]
            out.append(("-U", k, before["v"], before[SEQUENCE_NUMBER]))  # type: ignore[index]
            out.append(("+U", k, after["v"], after[SEQUENCE_NUMBER]))
    return out


def vectorized(rows: pa.Table, *, mode: str, dedup: bool) -> list[tuple[str, int, int, int]]:
    if mode == "lookup":
        rows = lookup_merge_rows(rows, ["k"], "level")
    seg = Segments.of(rows, ["k"])
    levels = rows.column("level").to_numpy()
    merged = Deduplicate().merge(rows, ["k"], reduce_singles=mode != "lookup")
    emit, before = (
        lookup_before(levels, seg) if mode == "lookup" else full_compaction_before(levels, seg, MAX_LEVEL)
    )
    options = CoreOptions.of(
        {"changelog-producer.row-deduplicate": str(dedup).lower()}, primary_key_table=True
    )
    out = changelog_rows(
        rows,
        merged,
        ["k"],
        ["k", "v"],
        emit=emit,
        before=before,
        seg=seg,
        dedup=RowDeduplicate.of(options, ["v"]),
    )
    if out is None:
        return []
    table, kinds = out
    return [
        (KINDS[int(kind)], r["k"], r["v"], r[SEQUENCE_NUMBER])
        for kind, r in zip(kinds, table.to_pylist(), strict=True)
    ]


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(KEY, max_size=8), mode=st.sampled_from(["lookup", "full"]), dedup=st.booleans())
def test_changelog_matches_the_reference(keys: list[Any], mode: str, dedup: bool) -> None:
    rows = build(keys)
    assert vectorized(rows, mode=mode, dedup=dedup) == reference(rows, mode=mode, dedup=dedup)


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(KEY, max_size=8), seed=st.integers(0, 2**16))
def test_shadowed_mask_agrees_with_the_sorted_filter(keys: list[Any], seed: int) -> None:
    rows = build(keys)
    kept = lookup_merge_rows(rows, ["k"], "level")
    order = np.random.default_rng(seed).permutation(rows.num_rows)
    shuffled = rows.take(pa.array(order))
    mask = shadowed_mask(shuffled.select(["k"]), shuffled.column("level").to_numpy())
    assert sorted(shuffled.filter(pa.array(mask)).to_pylist(), key=str) == sorted(kept.to_pylist(), key=str)
