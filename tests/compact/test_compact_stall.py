"""Write stall: a bucket never keeps more sorted runs than num-sorted-run.stop-trigger after a commit."""

from __future__ import annotations

import pyarrow as pa
from layouts import make_file

import lsmlake
from lsmlake.compact.bucket_files import combine_results
from lsmlake.metadata.commit_message import CommitMessage
from lsmlake.metadata.live_files import live_entries

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def test_stop_trigger_bounds_sorted_runs(catalog: lsmlake.Catalog) -> None:
    # size amplification never triggers; the run-count rules keep the bucket at <= 3 runs
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_key=["k"],
        options={
            "bucket": "1",
            "num-sorted-run.compaction-trigger": "3",
            "num-sorted-run.stop-trigger": "3",
            "compaction.max-size-amplification-percent": "100000",
        },
    )
    model = {}
    for i in range(8):
        keys = list(range(i * 10, i * 10 + 10))
        t.write(pa.table({"k": keys, "v": [i] * 10}, schema=SCHEMA))
        model.update(dict.fromkeys(keys, i))
        files = [e.file for e in live_entries(t.io, t.paths, t.latest_snapshot())]
        runs = sum(1 for f in files if f.level == 0) + len({f.level for f in files if f.level > 0})
        assert runs <= 3
        assert {r["k"]: r["v"] for r in t.read().to_pylist()} == model
    # every file on disk is referenced: intermediate compaction outputs were removed
    on_disk = {s.name for s in t.io.walk_files(t.root) if s.name.endswith(".parquet")}
    referenced = {e.file.file_name for e in live_entries(t.io, t.paths, t.latest_snapshot())}
    assert referenced <= on_disk


def test_combined_compactions_drop_intermediate_files() -> None:
    a, b, c = (
        make_file(1, 5, level=0, name="a"),
        make_file(6, 9, level=0, name="b"),
        make_file(1, 9, level=5, name="c"),
    )
    mid = make_file(1, 9, level=4, name="mid")
    first = CommitMessage(b"p", 0, 1, compact_before=(a, b), compact_after=(mid,))
    second = CommitMessage(
        b"p", 0, 1, compact_before=(mid, c), compact_after=(make_file(1, 9, level=5, name="out"),)
    )
    deleted: list[str] = []
    combined = combine_results(
        first, second, data_path=lambda n: n, index_path=lambda n: n, delete=deleted.append
    )
    assert [f.file_name for f in combined.compact_before] == ["a", "b", "c"]
    assert [f.file_name for f in combined.compact_after] == ["out"]
    assert deleted == ["mid"]
