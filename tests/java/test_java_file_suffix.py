"""file.suffix.include.compression against live Java Paimon: both name data files '<prefix><uuid>-<n>.<codec
extension>.<format>' alike, and each reads the other's files."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import pyarrow as pa
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake

pytestmark = pytest.mark.java

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _names(java: JavaPaimon, wh: str, table: str) -> list[str]:
    return [posixpath.basename(str(r["file_path"])) for r in java.files(wh, table)]


@pytest.mark.parametrize(
    ("fmt", "codec", "suffix"),
    [("parquet", "zstd", ".zst.parquet"), ("orc", "lz4", ".lz4.orc"), ("parquet", "none", ".parquet")],
)
def test_file_names_carry_the_codec_as_in_java(
    java_paimon: JavaPaimon, tmp_path: Path, fmt: str, codec: str, suffix: str
) -> None:
    wh = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(wh)
    catalog.create_database("db")
    opts = {
        "bucket": "1",
        "file.format": fmt,
        "file.compression": codec,
        "file.suffix.include.compression": "true",
    }
    ours = catalog.create_table("db.ours", schema=SCHEMA, primary_key=["id"], options=opts)
    catalog.create_table("db.java", schema=SCHEMA, primary_key=["id"], options=opts)
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": pa.array([10, 20, 30], pa.int64())})
    ours.write(rows)
    java_paimon.write(wh, "db.java", [{"_kind": "+I", **r} for r in arrow_rows(rows)])
    pattern = re.compile(r"data-[0-9a-f-]{36}-\d+" + re.escape(suffix))
    for table in ("db.ours", "db.java"):
        names = _names(java_paimon, wh, table)
        assert names and all(pattern.fullmatch(n) for n in names), names
        expected = sort_rows(arrow_rows(rows), ["id"])
        assert sort_rows(java_rows(java_paimon.read(wh, table)), ["id"]) == expected
        assert sort_rows(arrow_rows(catalog.get_table(table).read()), ["id"]) == expected
