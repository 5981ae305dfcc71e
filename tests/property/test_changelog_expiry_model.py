"""Long-lived changelogs (`changelog.num-retained.*` above the snapshot retention) against a model: each
commit's snapshot expiry turns the snapshots it expires into changelogs and keeps at most
`changelog.num-retained.max` of snapshots and changelogs together; CALL sys.expire_changelogs with
``retain_max`` keeps the newest ``retain_max``, ``delete_all`` drops them all (Java's ExpireChangelogImpl
rules, recent commits: the time retained never decides here)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import lsmlake

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.int64())])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 5)),
        st.tuples(st.just("expire"), st.integers(1, 8)),
        st.tuples(st.just("delete_all"), st.just(0)),
    ),
    min_size=1,
    max_size=14,
)


def _long_lived(root: str) -> set[int]:
    return {int(p.name.split("-")[1]) for p in Path(root, "changelog").glob("changelog-*")}


@given(ops=OPS, keep=st.integers(1, 3), extra=st.integers(1, 4))
@example(ops=[("write", 0), ("write", 0), ("expire", 1)], keep=1, extra=1)  # the latest changelog stays
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_long_lived_changelogs_match_the_model(ops: list[tuple[str, int]], keep: int, extra: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        catalog = lsmlake.Catalog(tmp)
        catalog.create_database("db")
        retain_max = keep + extra
        t = catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["id"],
            options={
                "bucket": "1",
                "changelog-producer": "input",
                "num-sorted-run.compaction-trigger": "100",
                "snapshot.num-retained.min": "1",
                "snapshot.num-retained.max": str(keep),
                "changelog.num-retained.min": "1",
                "changelog.num-retained.max": str(retain_max),
            },
        )
        latest, earliest = 0, 1  # the latest and the earliest snapshot
        model: set[int] = set()
        for op, arg in ops:
            if op == "write":
                latest = (
                    t.write(pa.table({"id": pa.array([arg], pa.int32()), "v": [latest]}, schema=SCHEMA)) or 0
                )
                # snapshot expiry keeps `keep` snapshots; those it expires become changelogs, then at
                # most `retain_max` snapshots and changelogs are kept together
                now_earliest = max(earliest, latest - keep + 1)
                model |= set(range(earliest, now_earliest))
                earliest = now_earliest
                model = {i for i in model if i >= latest - retain_max + 1}
            elif op == "expire" and latest:
                t.expire_changelogs(retain_max=arg)
                # Java's ExpireChangelogImpl never expires the latest long-lived changelog this way: it
                # caps the end at that changelog's id
                if model:
                    model = {i for i in model if i >= min(latest - arg + 1, max(model))}
            elif op == "delete_all":
                t.expire_changelogs(delete_all=True)
                model = set()
            assert _long_lived(t.root) == model, (op, arg, latest)
