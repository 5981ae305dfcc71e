"""Cutting overlapping sections into bounded key ranges."""

from __future__ import annotations

import itertools

import pyarrow as pa

import lsmlake
from lsmlake.metadata.live_files import live_entries
from lsmlake.read.key_chunks import RowGroupRange, cut_points, piece_filters, section_pieces


def test_cut_points_bound_rows_per_piece() -> None:
    ranges = [RowGroupRange(i * 10, i * 10 + 9, 100) for i in range(10)]
    ranges += [RowGroupRange(i * 25, i * 25 + 24, 100) for i in range(4)]  # an overlapping second run
    cuts = cut_points(ranges, 250)
    assert cuts == sorted(cuts) and len(set(cuts)) == len(cuts)
    bounds = [float("-inf"), *cuts, float("inf")]
    for lo, hi in itertools.pairwise(bounds):
        assert sum(r.rows for r in ranges if lo <= r.low < hi) <= 300


def test_pieces_partition_every_key_exactly_once(catalog: lsmlake.Catalog) -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table(
        "db.t", schema=schema, primary_key=["k"], options={"bucket": "1", "write-only": "true"}
    )
    for i in range(3):
        t.write(pa.table({"k": list(range(i, 300_000, 2 + i)), "v": [i] * len(range(i, 300_000, 2 + i))}))
    files = [e.file for e in live_entries(t.io, t.paths, t.latest_snapshot())]
    paths = [f"{t.root}/bucket-0/{f.file_name}" for f in files]
    pieces = section_pieces(t.io, t.schema, paths, files, base=None, max_rows=100_000)
    assert pieces is not None and len(pieces) >= 3
    whole = t.read().sort_by("k")
    parts = [t.read(filter=p).sort_by("k") for p in pieces]
    assert sum(p.num_rows for p in parts) == whole.num_rows
    assert pa.concat_tables(parts).sort_by("k").equals(whole)
    assert piece_filters("k", [], t.schema, None) == [None]
