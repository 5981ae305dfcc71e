"""Property: after random upserts and deletes over several commits, a read equals a dict model."""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.expr import parse_filter
from lsmlake.read.table_read import read_table, scan_table

SCHEMA = pa.schema(
    [
        pa.field("pt", pa.int32(), False),
        pa.field("id", pa.int64(), False),
        pa.field("v", pa.int64()),
        pa.field("s", pa.string()),
    ]
)
FILTERS = [
    "v > 10",
    "id < 5",
    "s = 'b'",
    "v IS NULL",
    "pt = 1 AND v >= 0",
    "id = 3 OR s = 'c'",
    "NOT (pt = 0)",
    "id IN (1, 2, 7) AND v < 50",
    "id = 3",
    "pt = 1 AND id IN (2, 3, 9)",
    "pt = 0 AND id = 4 AND v > 0",
]
Key = tuple[int, int]

rows_st = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.integers(0, 11),
        st.one_of(st.none(), st.integers(-20, 60)),
        st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
    ),
    min_size=1,
    max_size=12,
)
op_st = st.one_of(
    st.tuples(st.just("write"), rows_st),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(
        st.just("delete"), st.lists(st.tuples(st.integers(0, 1), st.integers(0, 11)), min_size=1, max_size=5)
    ),
)


def _model_table(model: dict[Key, tuple[Any, ...]]) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in model.values()], schema=SCHEMA
    )


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: (r["pt"], r["id"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    buckets=st.integers(1, 3),
    partitioned=st.booleans(),
    ops=st.lists(op_st, min_size=1, max_size=6),
    flt=st.sampled_from(FILTERS),
    dv=st.booleans(),
)
def test_reads_match_a_dict_model(
    buckets: int, partitioned: bool, ops: list[Any], flt: str, dv: bool
) -> None:
    """Merge-on-read tables, and DV tables (whose writer compacts level 0 at every commit)."""
    with tempfile.TemporaryDirectory() as warehouse:
        catalog = lsmlake.Catalog(warehouse)
        catalog.create_database("db")
        table = catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["pt", "id"],
            partition_keys=["pt"] if partitioned else None,
            options={"bucket": str(buckets), "deletion-vectors.enabled": str(dv).lower()},
        )
        predicate = parse_filter(flt, table.schema.fields)
        assert predicate is not None
        model: dict[Key, tuple[Any, ...]] = {}
        for kind, payload in ops:
            if kind == "write":
                latest = {(r[0], r[1]): r for r in payload}  # the last write of a key in one batch wins
                table.write(
                    pa.Table.from_pylist(
                        [dict(zip(SCHEMA.names, r, strict=True)) for r in payload], schema=SCHEMA
                    )
                )
                model.update(latest)
            elif kind == "compact":
                table.compact(full=payload)
            else:
                keys = pa.table(
                    {
                        "pt": pa.array([k[0] for k in payload], pa.int32()),
                        "id": pa.array([k[1] for k in payload], pa.int64()),
                    }
                )
                table.delete(keys)
                for k in payload:
                    model.pop(k, None)
            expected = _model_table(model)
            assert _sorted(read_table(table)) == _sorted(expected)
            assert _sorted(read_table(table, filter=flt)) == _sorted(expected.filter(predicate.to_arrow()))
            scan = scan_table(table, columns=["id"])
            assert scan.to_arrow().num_rows == len(model)
            if dv:
                assert all(s.raw_convertible for s in scan.splits())


def test_streaming_batches_stop_early_and_match(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow as _pa

    import lsmlake as _lsm

    cat = _lsm.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = _pa.schema([("k", _pa.int64()), ("v", _pa.int64())])
    t = cat.create_table(
        "db.s", schema=schema, primary_key=["k"], options={"bucket": "4", "write-only": "true"}
    )
    for i in range(3):
        t.write(_pa.table({"k": list(range(i * 1000, i * 1000 + 1500)), "v": [i] * 1500}, schema=schema))
    streamed = _pa.Table.from_batches(list(t.scan().to_batches()), schema=t.scan().to_batches().schema)
    assert streamed.sort_by("k").equals(t.read().sort_by("k"))
    reader = t.scan().to_batches()
    first = reader.read_next_batch()  # stop after one batch: the background reader must not hang
    assert first.num_rows > 0
    reader.close()
    assert t.scan(limit=10).to_batches().read_all().num_rows == 10
