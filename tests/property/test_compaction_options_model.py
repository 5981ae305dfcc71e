"""Random writes, deletes and compactions under force-rewrite-all-files, off-peak hours (the clock pinned to
random hours) and deletion-vector mode changes: reads equal a dict model and forced full compactions keep
no file."""

from __future__ import annotations

import datetime as dt
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core.clock import fixed_clock
from lsmlake.schema_change import set_option

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int64())])
KEYS = st.integers(0, 60)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.lists(st.tuples(KEYS, st.integers(-9, 9)), min_size=1, max_size=40)),
        st.tuples(st.just("delete"), st.lists(KEYS, min_size=1, max_size=6)),
        st.tuples(st.just("compact"), st.booleans()),
        st.tuples(st.just("toggle-dv"), st.none()),
    ),
    min_size=1,
    max_size=12,
)


def _millis_at(hour: int) -> int:
    """Epoch milliseconds of a local time at ``hour`` (what the clock reads during the step)."""
    return int(dt.datetime(2026, 3, 10, hour, 30).timestamp() * 1000)


def _files(catalog: lsmlake.Catalog, name: str) -> list[tuple[int, str]]:
    return [(r["level"], r["file_path"]) for r in catalog.get_table(f"{name}$files").read().to_pylist()]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=OPS,
    hours=st.lists(st.integers(0, 23), min_size=12, max_size=12),
    window=st.tuples(st.integers(0, 23), st.integers(0, 23)),
    force=st.booleans(),
    dv=st.booleans(),
)
def test_reads_equal_model(
    ops: list,  # type: ignore[type-arg]
    hours: list[int],
    window: tuple[int, int],
    force: bool,
    dv: bool,
) -> None:
    with tempfile.TemporaryDirectory() as wh:
        catalog = lsmlake.Catalog(wh)
        catalog.create_database("db")
        options = {
            "bucket": "1",
            "num-sorted-run.compaction-trigger": "3",
            "compaction.force-rewrite-all-files": str(force).lower(),
            "compaction.offpeak.start.hour": str(window[0]),
            "compaction.offpeak.end.hour": str(window[1]),
            "compaction.offpeak-ratio": "400",
            "deletion-vectors.enabled": str(dv).lower(),
            "deletion-vectors.modifiable": "true",
        }
        table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
        model: dict[int, int] = {}
        for step, (op, arg) in enumerate(ops):
            with fixed_clock(_millis_at(hours[step])):
                if op == "write":
                    batch = dict(arg)  # the last value of a key within one write wins, as in the table
                    table.write(pa.table({"k": list(batch), "v": list(batch.values())}, schema=SCHEMA))
                    model.update(batch)
                elif op == "delete":
                    table.delete(pa.table({"k": pa.array(arg, pa.int32())}))
                    for k in arg:
                        model.pop(k, None)
                elif op == "compact":
                    before = _files(catalog, "db.t")
                    table.compact(full=arg)
                    after = _files(catalog, "db.t")
                    if arg and force and before:
                        assert not {p for _, p in before} & {p for _, p in after}, (
                            "a forced full compaction kept a file"
                        )
                else:
                    # Paimon's advice: a full compaction before the mode changes, so no row reads twice
                    table.compact(full=True)
                    dv = not dv
                    table = table.alter(set_option("deletion-vectors.enabled", str(dv).lower()))
            got = {r["k"]: r["v"] for r in table.read().to_pylist()}
            assert got == model, f"step {step}: {op}"
