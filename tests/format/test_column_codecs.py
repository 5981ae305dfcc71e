"""Per-column codecs: numeric columns the codec barely shrinks are written uncompressed, the rest not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lsmlake
from lsmlake.format.column_codecs import parquet_compression


def _sample(n: int = 10_000) -> pa.Table:
    rng = np.random.default_rng(5)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),  # sorted: compresses well
            "noise": rng.random(n),  # random doubles: zstd saves ~6%
            "hash": rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64),  # random 64-bit: nothing to save
            "small": rng.integers(0, 10, n).astype(np.int8),  # narrow: never sampled
            "name": pa.array([f"user-{i % 50}" for i in range(n)]),  # text: never sampled
        }
    )


def test_incompressible_numbers_are_stored_uncompressed() -> None:
    codecs, levels = parquet_compression(_sample(), "zstd", 1)
    assert codecs == {"id": "zstd", "noise": "NONE", "hash": "NONE", "small": "zstd", "name": "zstd"}
    assert levels == {"id": 1, "small": 1, "name": 1}


def test_nulls_are_left_out_of_the_sample() -> None:
    values = np.random.default_rng(1).random(10_000)
    # every other value null: the slots under the nulls are zero bytes, which would compress well
    sample = pa.table({"v": pa.array([None if i % 2 else float(v) for i, v in enumerate(values)])})
    assert parquet_compression(sample, "zstd", 1)[0] == {"v": "NONE"}
    assert parquet_compression(pa.table({"v": pa.nulls(10, pa.float64())}), "zstd", 1) == ("zstd", 1)


@pytest.mark.parametrize("codec", ["none", "uncompressed", "brotli"])
def test_codecs_it_cannot_sample_are_kept_for_every_column(codec: str) -> None:
    assert parquet_compression(_sample(), codec, None) == (codec, None)


def test_nested_schemas_keep_one_codec() -> None:
    sample = _sample().append_column("s", pa.array([{"x": 1.5}] * 10_000))
    assert parquet_compression(sample, "zstd", 1) == ("zstd", 1)


def test_compressible_columns_keep_the_table_codec() -> None:
    sample = _sample().select(["id", "small", "name"])
    assert parquet_compression(sample, "zstd", 3) == ("zstd", 3)
    assert parquet_compression(_sample().select(["id", "noise"]), "lz4", None)[0] == {
        "id": "lz4",
        "noise": "NONE",
    }


def test_a_table_write_stores_random_doubles_uncompressed_and_reads_them_back(tmp_path: Path) -> None:
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    rows = _sample()
    t = cat.create_table("db.t", schema=rows.schema, primary_key=["id"], options={"bucket": "1"})
    t.write(rows)
    (path,) = (tmp_path / "db.db" / "t" / "bucket-0").glob("*.parquet")
    group = pq.ParquetFile(path).metadata.row_group(0)
    codecs = {group.column(i).path_in_schema: group.column(i).compression for i in range(group.num_columns)}
    assert codecs["noise"] == codecs["hash"] == "UNCOMPRESSED"
    assert codecs["id"] == codecs["name"] == codecs["_SEQUENCE_NUMBER"] == "ZSTD"
    assert t.read().sort_by("id").to_pydict() == rows.to_pydict()
