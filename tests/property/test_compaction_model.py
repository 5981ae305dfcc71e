"""Random upserts, deletes and compactions (parquet or avro files): reads equal a dict model; DV tables keep
the LSM invariant."""

from __future__ import annotations

import tempfile
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.compact.bucket_compactor import restore_deletion_vectors
from lsmlake.format.avro_data import read_avro
from lsmlake.mergetree.dv_maintainer import BucketDeletionVectors
from lsmlake.metadata.restore import RestoredState

SCHEMA = pa.schema([("k", pa.int32()), ("s", pa.string()), ("v", pa.int64())])
KEYS = st.integers(0, 40)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.lists(st.tuples(KEYS, st.integers(-5, 5)), min_size=1, max_size=25)),
        st.tuples(st.just("delete"), st.lists(KEYS, min_size=1, max_size=6)),
        st.tuples(st.just("compact"), st.booleans()),
    ),
    min_size=1,
    max_size=12,
)


def live_keys_above_level0(table: lsmlake.Table) -> Counter[int]:
    """Every key of every level >= 1 file, deletion vectors applied."""
    restored = RestoredState.load(table.io, table.paths, table.latest_snapshot())
    counts: Counter[int] = Counter()
    for (partition, bucket), entries in restored.files.items():
        dvs: BucketDeletionVectors = restore_deletion_vectors(
            table.io, table.paths, restored, partition, bucket, table.options
        )
        for e in entries:
            if e.file.level == 0:
                continue
            path = f"{table.root}/bucket-{bucket}/{e.file.file_name}"
            if path.endswith(".avro"):
                keys = read_avro(table.io, path, ["k"]).column("k")
            else:
                keys = pq.read_table(path, columns=["k"]).column("k")
            keep = dvs.keep_mask(e.file.file_name, len(keys))
            counts.update(k for k, live in zip(keys.to_pylist(), keep, strict=False) if live)
    return counts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, dv=st.booleans(), buckets=st.sampled_from([1, 2]), fmt=st.sampled_from(["parquet", "avro"]))
def test_reads_equal_model(ops: list, dv: bool, buckets: int, fmt: str) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as wh:
        cat = lsmlake.Catalog(wh)
        cat.create_database("db")
        t = cat.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["k"],
            options={
                "bucket": str(buckets),
                "deletion-vectors.enabled": str(dv).lower(),
                "num-sorted-run.compaction-trigger": "3",
                "file.format": fmt,
            },
        )
        model: dict[int, tuple[str, int]] = {}
        for step, (op, arg) in enumerate(ops):
            if op == "write":
                ks = [k for k, _ in arg]
                vals = [(f"s{step}-{k}", v) for k, v in arg]
                t.write(
                    pa.table({"k": ks, "s": [a for a, _ in vals], "v": [b for _, b in vals]}, schema=SCHEMA)
                )
                model.update(zip(ks, vals, strict=False))
            elif op == "delete":
                t.delete(pa.table({"k": arg}, schema=pa.schema([("k", pa.int32())])))
                for k in arg:
                    model.pop(k, None)
            else:
                before = t.read()
                t.compact(full=arg)
                assert t.read().sort_by("k").equals(before.sort_by("k")), "compaction changed the result"
            got = {r["k"]: (r["s"], r["v"]) for r in t.read().to_pylist()}
            assert got == model
            if dv:
                assert all(s.raw_convertible for s in t.scan().splits())
                assert all(c == 1 for c in live_keys_above_level0(t).values())
        filtered = t.read(filter="v > 0 AND k < 30", columns=["k", "v"]).to_pylist()
        assert sorted((r["k"], r["v"]) for r in filtered) == sorted(
            (k, v) for k, (_, v) in model.items() if v > 0 and k < 30
        )
