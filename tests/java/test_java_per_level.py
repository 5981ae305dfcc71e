"""Per-level formats, compressions and stats modes, per-column stats modes and external data paths: lsmlake
and live Java Paimon write and compact one table in turn and read the same rows, and twin tables written
alike by each hold files of the same formats and stats at every level."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from java_harness import JavaPaimon, arrow_rows, java_rows, sort_rows

import lsmlake
from lsmlake.core.binary_row import deserialize_row
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataType
from lsmlake.metadata.avro_container import decode_avro_container
from lsmlake.metadata.data_file import DataFileMeta

pytestmark = pytest.mark.java

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("amount", pa.int64()),
    ]
)
PER_LEVEL = {
    "bucket": "1",
    "file.format.per.level": "0:orc",
    "file.compression.per.level": "0:snappy,3:gzip",
    "metadata.stats-mode.per.level": "0:none",
    "fields.amount.stats-mode": "full",
    "fields.name.stats-mode": "counts",
    "num-levels": "4",
    "num-sorted-run.compaction-trigger": "3",
}
Row = dict[str, Any]
LEVEL0_FORMATS = ("orc", "avro")  # the level-0 format of PER_LEVEL's tables in each test case


def _per_level(level0: str, codec: str = "snappy") -> dict[str, str]:
    """PER_LEVEL with ``level0`` files compressed with ``codec`` at level 0 (Parquet above, level 3 named
    explicitly for avro)."""
    formats = "0:orc" if level0 == "orc" else "0:avro,3:parquet"
    return {**PER_LEVEL, "file.format.per.level": formats, "file.compression.per.level": f"0:{codec},3:gzip"}


def _twin_options(level0: str) -> tuple[dict[str, str], str]:
    """The twin tables' options and level-0 codec. Paimon's universal compaction picks runs by their byte
    sizes, so twin tables stay alike only while no pick depends on how large each writer's files are:
    Avro level-0 blocks are uncompressed (lsmlake's then have the byte size of Java's; snappy-java and
    pyarrow's snappy compress one block to sizes a few bytes apart), and since lsmlake's and Java's
    Parquet files differ in size, the size picks are out of play for the Avro case: every compaction the
    run count triggers takes every run (level-0 Avro files into the Parquet top level)."""
    if level0 == "orc":
        return _per_level(level0), "snappy"
    sizes_out_of_play = {"compaction.max-size-amplification-percent": "100000", "compaction.size-ratio": "100000"}
    return {**_per_level(level0, "null"), **sizes_out_of_play}, "null"


def _batch(rng: random.Random, n: int = 30) -> list[Row]:
    return [
        {
            "id": rng.randrange(60),
            "name": rng.choice([None, "a" * rng.randrange(1, 40), f"n{rng.randrange(99)}"]),
            "amount": rng.choice([None, rng.randrange(-1000, 1000)]),
        }
        for _ in range(n)
    ]


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _live_files(table: lsmlake.Table) -> list[tuple[DataFileMeta, str]]:
    """Each live data file and its path on disk."""
    out = []
    for split in table.scan().splits():
        for f in split.files:
            path = (
                f.external_path.split(":", 1)[1] if f.external_path else f"{split.bucket_path}/{f.file_name}"
            )
            out.append((f, "/" + path.lstrip("/")))
    return out


def _read_file(path: str) -> pa.Table:
    if path.endswith(".orc"):
        return orc.read_table(path)
    if path.endswith(".avro"):
        records = decode_avro_container(Path(path).read_bytes(), name=path).records
        return pa.Table.from_pylist([r for r in records if r is not None])
    return pq.read_table(path)


def _codecs(path: str) -> set[str]:
    if path.endswith(".orc"):
        return {str(orc.ORCFile(path).compression).upper()}
    if path.endswith(".avro"):
        return {decode_avro_container(Path(path).read_bytes(), name=path).codec.upper()}
    meta = pq.ParquetFile(path).metadata
    return {meta.row_group(0).column(i).compression.upper() for i in range(meta.num_columns)}


def _stats(values: bytes, types: list[DataType]) -> list[object]:
    return list(deserialize_row(values, [t.copy(nullable=True) for t in types])) if types else []


def _check_file(
    f: DataFileMeta, path: str, schema: TableSchema, level0: str = "orc", codec: str = "snappy"
) -> tuple[str, int]:
    """The file's format, codec and manifest stats are those of the level it was written for: level 0
    (or a level-0 file moved up unchanged) ``level0`` (ORC or Avro) + ``codec`` with stats of name (counts)
    and amount (full) only; files written for levels 1-3 Parquet, gzip at level 3, every column's stats.
    Key stats are truncate(128) in Parquet and ORC files; an Avro file's key column takes the level's
    mode (none at level 0), as Java's createStatsFactoriesForAvro gives it."""
    rows = _read_file(path)
    written_for_level0 = path.endswith("." + level0)
    assert written_for_level0 or f.level > 0, f"{f.file_name} at level 0 is not {level0}"
    assert written_for_level0 or path.endswith(".parquet"), path
    codecs = _codecs(path)
    if written_for_level0:
        assert codecs == {codec.upper()}, (f.file_name, codecs)
    elif f.level == 3:
        assert "GZIP" in codecs and "ZSTD" not in codecs, (f.file_name, codecs)
    else:
        assert "ZSTD" in codecs and "GZIP" not in codecs, (f.file_name, codecs)
    fields = {x.name: x.type for x in schema.fields}
    cols = ("name", "amount") if written_for_level0 else None
    assert f.value_stats_cols == cols, (f.file_name, f.value_stats_cols)
    names = list(cols or schema.field_names)
    mins, maxs = (
        _stats(v, [fields[n] for n in names]) for v in (f.value_stats.min_values, f.value_stats.max_values)
    )
    assert f.value_stats.null_counts is not None
    for i, name in enumerate(names):
        column = rows.column(name)
        assert f.value_stats.null_counts[i] == column.null_count, (f.file_name, name)
        values = [v for v in column.to_pylist() if v is not None]
        if name == "name":  # counts: no bounds
            assert (mins[i], maxs[i]) == (None, None), (f.file_name, name)
        elif values:
            assert (mins[i], maxs[i]) == (min(values), max(values)), (f.file_name, name)
    key = rows.column("_KEY_id").to_pylist()
    key_stats = [
        _stats(f.key_stats.min_values, [fields["id"]]),
        _stats(f.key_stats.max_values, [fields["id"]]),
        list(f.key_stats.null_counts or ()),
    ]
    if written_for_level0 and level0 == "avro":
        assert key_stats == [[None], [None], [None]], (f.file_name, key_stats)
    else:
        assert key_stats == [[min(key)], [max(key)], [0]], (f.file_name, key_stats)
    return path.rsplit(".", 1)[1], f.level


def _files_view(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> list[tuple[str, ...]]:
    """``columns`` of each $files row, with the byte size of Avro files (equal to Java's, uncompressed)."""
    return [
        (*(str(r[c]) for c in columns), str(r["file_size_in_bytes"]) if r["file_format"] == "avro" else "")
        for r in rows
    ]


def _manifest_view(table: lsmlake.Table) -> list[tuple[str, ...]]:
    """Each live file's level, format, rows and manifest stats (keys and values), as lsmlake reads them."""
    return sorted(
        tuple(
            str(x)
            for x in (
                f.level,
                f.file_name.rsplit(".", 1)[1],
                f.row_count,
                f.key_stats,
                f.value_stats,
                f.value_stats_cols,
                f.delete_row_count,
            )
        )
        for s in table.scan().splits()
        for f in s.files
    )


@pytest.mark.parametrize("level0", LEVEL0_FORMATS)
def test_per_level_options_on_one_table_written_in_turn(
    level0: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=_per_level(level0))
    rng = random.Random(27)
    model: dict[int, Row] = {}
    seen: set[tuple[str, int]] = set()
    for step in range(8):
        rows = _batch(rng)
        if step % 2 == 0:
            table.write(_arrow(rows))
            if step % 4 == 2:
                table.compact(full=step == 6)
        else:
            java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in rows])
            java_paimon.compact(warehouse, "db.t", full=step == 5)
        model.update({r["id"]: r for r in rows})
        table = catalog.get_table("db.t")
        expected = sort_rows(list(model.values()), ["id"])
        assert sort_rows(arrow_rows(table.read()), ["id"]) == expected, f"lsmlake read, step {step}"
        assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"]) == expected, (
            f"Java, step {step}"
        )
        seen |= {_check_file(f, path, table.schema, level0) for f, path in _live_files(table)}
    assert {(level0, 0), ("parquet", 3)} <= seen, seen


@pytest.mark.parametrize("level0", LEVEL0_FORMATS)
@pytest.mark.parametrize("deletion_vectors", [False, True])
def test_twin_tables_hold_the_same_formats_and_stats_per_level(
    deletion_vectors: bool, level0: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """One table written by lsmlake, its twin by Java with the same batches: after every write (and its
    compaction) Java's $files shows the same levels, formats and stats on both, and so do the manifests'
    key stats and stats columns. With deletion vectors (a lookup compaction) a level-0 file is rewritten,
    not moved, into a level of another format."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    seen: set[tuple[str, int]] = set()
    twin, codec = _twin_options(level0)
    options = {**twin, "deletion-vectors.enabled": str(deletion_vectors).lower()}
    ours = catalog.create_table("db.ours", schema=SCHEMA, primary_key=["id"], options=options)
    catalog.create_table("db.java", schema=SCHEMA, primary_key=["id"], options=options)
    rng = random.Random(5)
    columns = (
        "level",
        "file_format",
        "record_count",
        "null_value_counts",
        "min_value_stats",
        "max_value_stats",
    )
    for g in range(6):
        rows = _batch(rng, 40)
        ours.write(_arrow(rows))
        java_paimon.write(warehouse, "db.java", [{"_kind": "+I", **r} for r in rows])
        theirs = sorted(_files_view(java_paimon.files(warehouse, "db.java"), columns))
        mine = sorted(_files_view(java_paimon.files(warehouse, "db.ours"), columns))
        assert mine == theirs, f"write {g}"
        ours = catalog.get_table("db.ours")
        assert _manifest_view(ours) == _manifest_view(catalog.get_table("db.java")), f"write {g}"
        for f, path in _live_files(ours):
            seen.add(_check_file(f, path, ours.schema, level0, codec))
            if deletion_vectors:
                assert f.level == 0 or path.endswith(".parquet"), f"{f.file_name} moved up as {level0}"
        expected = sort_rows(arrow_rows(ours.read()), ["id"])
        assert sort_rows(java_rows(java_paimon.read(warehouse, "db.java")), ["id"]) == expected
    if deletion_vectors:  # a write's lookup compaction rewrites its level-0 files before the commit
        assert {fmt for fmt, _ in seen} == {"parquet"}, seen
    else:
        assert {(level0, 0), ("parquet", 3)} <= seen, seen


@pytest.mark.parametrize(
    ("strategy", "dv_in_data_dir", "bucket"),
    [
        ("round-robin", False, "2"),
        ("specific-fs", False, "2"),
        ("round-robin", True, "2"),
        ("round-robin", True, "-1"),
    ],
)
def test_external_paths_on_one_table_written_in_turn(
    strategy: str, dv_in_data_dir: bool, bucket: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Data, changelog and data-file index files of both writers go under the external roots, in
    <root>/<partition>/bucket-<n>/ (with deletion vectors and index-file-in-data-file-dir, the deletion
    vector index files too), the manifests name them, both read the same rows; expiry by either deletes
    them there and dropping the table deletes the roots."""
    warehouse = str(tmp_path / "warehouse")
    roots = [tmp_path / "ext1", tmp_path / "ext2"]
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([*SCHEMA, pa.field("dt", pa.string(), nullable=False)])
    options = {
        "bucket": bucket,
        "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
        "data-file.external-paths.strategy": strategy,
        "changelog-producer": "input",
        "file-index.bloom-filter.columns": "name",
        "snapshot.num-retained.min": "1",
    }
    if strategy == "specific-fs":
        options["data-file.external-paths.specific-fs"] = "file"
    if dv_in_data_dir:
        options |= {"deletion-vectors.enabled": "true", "index-file-in-data-file-dir": "true"}
    table = catalog.create_table(
        "db.t", schema=schema, primary_key=["id", "dt"], partition_keys=["dt"], options=options
    )
    rng = random.Random(9)
    model: dict[tuple[int, str], Row] = {}
    for step in range(6):
        rows = [{**r, "dt": rng.choice(["a", "b"])} for r in _batch(rng)]
        if step % 2 == 0:
            table.write(pa.Table.from_pylist(rows, schema=schema))
            table.compact(full=step == 4)
        else:
            java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in rows])
            java_paimon.compact(warehouse, "db.t", full=False)
        model.update({(r["id"], r["dt"]): r for r in rows})
        table = catalog.get_table("db.t")
        expected = sort_rows(list(model.values()), ["id", "dt"])
        assert sort_rows(arrow_rows(table.read()), ["id", "dt"]) == expected, f"lsmlake, step {step}"
        assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id", "dt"]) == expected, (
            f"Java, {step}"
        )
        assert table.read(filter="name = 'n7'").num_rows == sum(r["name"] == "n7" for r in model.values())
        for f, path in _live_files(table):
            assert f.external_path is not None and f.external_path.startswith("file:/"), f.external_path
            rel = [Path(path).relative_to(r) for r in roots if Path(path).is_relative_to(r)]
            assert len(rel) == 1 and rel[0].parts[:1] in (("dt=a",), ("dt=b",)), path
            assert rel[0].parts[1].startswith("bucket-") and rel[0].parts[2] == f.file_name, path
            assert Path(path).exists()
            for extra in f.extra_files:
                assert (Path(path).parent / extra).exists()
    table_dir = Path(warehouse) / "db.db" / "t"
    assert not [p for p in table_dir.rglob("*") if p.is_file() and "bucket-" in str(p)]
    on_roots = {p for r in roots for p in r.rglob("*") if p.is_file()}
    assert any(p.name.startswith("changelog-") for p in on_roots)
    assert any(p.name.endswith(".index") for p in on_roots)
    assert all(any(p.name.startswith("data-") for p in r.rglob("*")) for r in roots)  # each root takes files
    assert any(p.name.startswith("index-") for p in on_roots) == dv_in_data_dir
    assert (
        not (table_dir / "index").exists() or not dv_in_data_dir or not any((table_dir / "index").iterdir())
    )
    java_paimon.expire(warehouse, "db.t", retain_max=1)
    _expired_files_gone(catalog.get_table("db.t"), roots, on_roots, _index_names(catalog, dv_in_data_dir))
    table.write(pa.Table.from_pylist([{"id": 1, "name": "x", "amount": 2, "dt": "a"}], schema=schema))
    table.compact(full=True)
    on_roots = {p for r in roots for p in r.rglob("*") if p.is_file()}
    catalog.get_table("db.t").expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
    _expired_files_gone(catalog.get_table("db.t"), roots, on_roots, _index_names(catalog, dv_in_data_dir))
    catalog.drop_table("db.t")
    assert not any(r.exists() for r in roots)


def _expired_files_gone(
    table: lsmlake.Table, roots: list[Path], before: set[Path], index_names: set[str]
) -> None:
    """After expiring all but the latest snapshot, the roots hold its live data files (with their index
    files) and its changelog files only: fewer than ``before``."""
    live = {Path(p) for _, p in _live_files(table)}
    left = {p for r in roots for p in r.rglob("*") if p.is_file()}
    data_left = {p for p in left if p.name.startswith("data-") and p.suffix != ".index"}
    assert {p.name for p in left if p.name.startswith("index-")} == index_names  # only the live index files
    assert data_left == live
    assert len(left) < len(before)


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
def test_nested_columns_have_the_stats_java_gives_them(
    file_format: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """A Parquet footer has no stats for a nested column, so Java's dense store leaves it out of
    _VALUE_STATS_COLS (ORC keeps its null count): twin tables show the same stats, and lsmlake's manifest
    names the same columns."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema(
        [pa.field("id", pa.int32(), nullable=False), ("tags", pa.list_(pa.int32())), ("v", pa.int64())]
    )
    options = {"bucket": "1", "file.format": file_format}
    ours = catalog.create_table("db.ours", schema=schema, primary_key=["id"], options=options)
    catalog.create_table("db.java", schema=schema, primary_key=["id"], options=options)
    rows = [{"id": i, "tags": None if i % 3 == 0 else [i, i + 1], "v": i * 10} for i in range(12)]
    ours.write(pa.Table.from_pylist(rows, schema=schema))
    java_paimon.write(warehouse, "db.java", [{"_kind": "+I", **r} for r in rows])
    columns = (
        "level",
        "file_format",
        "record_count",
        "null_value_counts",
        "min_value_stats",
        "max_value_stats",
    )
    theirs = [tuple(str(r[c]) for c in columns) for r in java_paimon.files(warehouse, "db.java")]
    mine = [tuple(str(r[c]) for c in columns) for r in java_paimon.files(warehouse, "db.ours")]
    assert mine == theirs
    java_table = catalog.get_table("db.java")
    cols = {f.value_stats_cols for s in java_table.scan().splits() for f in s.files}
    assert cols == {f.value_stats_cols for s in ours.scan().splits() for f in s.files}
    assert cols == ({("id", "v")} if file_format == "parquet" else {None})


def _index_names(catalog: lsmlake.Catalog, in_data_dir: bool) -> set[str]:
    """The index files of the latest snapshot (those in the bucket directories: with index-file-in-data-file-dir)."""
    rows = catalog.get_table("db.t$table_indexes").read().to_pylist()
    return {r["file_name"] for r in rows} if in_data_dir else set()


@pytest.mark.parametrize(("file_format", "top_codec"), [("parquet", "gzip"), ("orc", "zlib")])
def test_per_level_codecs_read_both_ways(
    file_format: str, top_codec: str, java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """lz4 at level 0 and gzip (Parquet) or zlib (ORC) at the top level, written by each side in turn."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    options = {
        "bucket": "1",
        "file.format": file_format,
        "file.compression.per.level": f"0:lz4,5:{top_codec}",
    }
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=options)
    rng = random.Random(3)
    model: dict[int, Row] = {}
    for step in range(4):
        rows = _batch(rng)
        if step % 2 == 0:
            table.write(_arrow(rows))
        else:
            java_paimon.write(warehouse, "db.t", [{"_kind": "+I", **r} for r in rows])
        model.update({r["id"]: r for r in rows})
    java_paimon.compact(warehouse, "db.t", full=True)
    table = catalog.get_table("db.t")
    table.write(_arrow([{"id": 0, "name": "z", "amount": 1}]))
    model[0] = {"id": 0, "name": "z", "amount": 1}
    expected = sort_rows(list(model.values()), ["id"])
    assert sort_rows(arrow_rows(table.read()), ["id"]) == expected
    assert sort_rows(java_rows(java_paimon.read(warehouse, "db.t")), ["id"]) == expected
    by_level: dict[int, set[str]] = {}
    for f, path in _live_files(table):
        by_level.setdefault(f.level, set()).update(_codecs(path))
    assert any(c.startswith("LZ4") for c in by_level[0]), by_level
    assert top_codec.upper() in by_level[5], by_level


@pytest.mark.parametrize(
    "extra",
    [
        {"file.format": "avro", "metadata.stats-keep-first-n-columns": "4", "fields.amount.stats-mode": "full"},
        {"file.format.per.level": "0:avro", "metadata.stats-mode": "truncate(4)", "fields.name.stats-mode": "none"},
        {"file.format.per.level": "0:avro", "metadata.stats-mode.per.level": "0:counts"},
    ],
)
def test_avro_files_take_the_stats_modes_java_gives_them(
    extra: dict[str, str], java_paimon: JavaPaimon, tmp_path: Path
) -> None:
    """Java's createStatsFactoriesForAvro: an Avro file's key and system columns take the table's (or the
    level's) mode and count for metadata.stats-keep-first-n-columns; a column's own mode wins. Twin tables
    written alike hold the same key stats, value stats and stats columns (uncompressed: the same sizes)."""
    warehouse = str(tmp_path / "warehouse")
    catalog = lsmlake.Catalog(warehouse)
    catalog.create_database("db")
    options = {"bucket": "1", "file.compression": "zstd", "avro.codec": "null", "write-only": "true", **extra}
    ours = catalog.create_table("db.ours", schema=SCHEMA, primary_key=["id"], options=options)
    catalog.create_table("db.java", schema=SCHEMA, primary_key=["id"], options=options)
    rng = random.Random(11)
    for _ in range(2):
        rows = _batch(rng, 25)
        ours.write(_arrow(rows))
        java_paimon.write(warehouse, "db.java", [{"_kind": "+I", **r} for r in rows])
    columns = ("level", "file_format", "file_size_in_bytes", "null_value_counts", "min_value_stats", "max_value_stats")
    theirs = sorted(tuple(str(r[c]) for c in columns) for r in java_paimon.files(warehouse, "db.java"))
    mine = sorted(tuple(str(r[c]) for c in columns) for r in java_paimon.files(warehouse, "db.ours"))
    assert mine == theirs
    assert {r[1] for r in mine} == {"avro"}
    assert _manifest_view(catalog.get_table("db.ours")) == _manifest_view(catalog.get_table("db.java"))
