"""sequence.snapshot-ordering against a model: writers opened together write in any interleaving and commit
in any order; the table reads as if each commit's rows were applied in commit order (a later snapshot wins
a key whatever numbers its writer gave), before and after compactions (with deletion vectors, level 0
is read only once compacted, as in Paimon)."""

from __future__ import annotations

import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int64())])
KEYS = st.integers(0, 30)
WRITER = st.integers(0, 2)
STEP = st.one_of(
    st.tuples(
        st.just("write"), WRITER, st.lists(st.tuples(KEYS, st.integers(-99, 99)), min_size=1, max_size=30)
    ),
    st.tuples(st.just("delete"), WRITER, st.lists(KEYS, min_size=1, max_size=5)),
    st.tuples(st.just("commit"), WRITER, st.none()),
    st.tuples(st.just("compact"), st.none(), st.booleans()),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=16), buckets=st.sampled_from([1, 2]), dv=st.booleans())
def test_later_commits_win(steps: list, buckets: int, dv: bool) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as wh:
        catalog = lsmlake.Catalog(wh)
        catalog.create_database("db")
        options = {
            "bucket": str(buckets),
            "sequence.snapshot-ordering": "true",
            "write-only": "true",
            "deletion-vectors.enabled": str(dv).lower(),
        }
        table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
        model: dict[int, int] = {}
        writers: dict[int, lsmlake.TableWriter] = {}
        pending: dict[int, list[tuple[str, object]]] = {}
        for op, who, arg in steps:
            if op in ("write", "delete"):
                assert who is not None
                if who not in writers:
                    writers[who] = table.writer()
                    pending[who] = []
                if op == "write":
                    batch = dict(arg)  # type: ignore[arg-type]
                    writers[who].write(pa.table({"k": list(batch), "v": list(batch.values())}, schema=SCHEMA))
                else:
                    writers[who].delete(pa.table({"k": pa.array(arg, pa.int32())}))
                pending[who].append((op, arg))
            elif op == "commit" and who in writers:
                writers.pop(who).commit()
                for kind, what in pending.pop(who):
                    if kind == "write":
                        model.update(dict(what))  # type: ignore[arg-type]
                    else:
                        for k in what:  # type: ignore[attr-defined]
                            model.pop(k, None)
            elif op == "compact":
                table.compact(full=bool(arg))
            if not dv or op == "compact":  # deletion vectors: write-only level 0 shows after a compaction
                got = {r["k"]: r["v"] for r in table.read().to_pylist()}
                assert got == model
        for w in writers.values():
            w.abort()
        table.compact()
        assert {r["k"]: r["v"] for r in table.read().to_pylist()} == model
