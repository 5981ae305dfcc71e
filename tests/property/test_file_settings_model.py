"""Per-level formats (Parquet, ORC and Avro), compressions and stats modes, per-column stats modes and
external data paths against a dict model (random upserts, deletes and compactions): reads equal the model,
and every live file has a format of its level (or of a level below, when moved up unchanged), stats true to
its rows as its column modes say, and lies under an external root exactly when a strategy sends it there."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core.binary_row import deserialize_row
from lsmlake.metadata.avro_container import decode_avro_container
from lsmlake.metadata.data_file import DataFileMeta

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("s", pa.string()), ("v", pa.int64())])
LEVELS = 4
FORMATS = st.sampled_from(["orc", "parquet", "avro"])
MODES = st.sampled_from(["none", "counts", "full", "truncate(2)"])
WRITE = st.tuples(
    st.just("write"),
    st.lists(
        st.tuples(
            st.integers(0, 30), st.one_of(st.none(), st.text("abcxyz", max_size=6)), st.integers(-50, 50)
        ),
        min_size=1,
        max_size=20,
    ),
)
DELETE = st.tuples(st.just("delete"), st.lists(st.integers(0, 30), min_size=1, max_size=6))
COMPACT = st.tuples(st.just("compact"), st.booleans())
OPS = st.lists(st.one_of(WRITE, WRITE, DELETE, COMPACT), min_size=1, max_size=8)
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def table_options(draw: st.DrawFn) -> dict[str, str]:
    formats = draw(st.dictionaries(st.integers(0, LEVELS - 1), FORMATS, max_size=LEVELS))
    codecs = draw(st.dictionaries(st.integers(0, LEVELS - 1), st.sampled_from(["zstd", "snappy", "lz4"])))
    modes = draw(st.dictionaries(st.integers(0, LEVELS - 1), MODES, max_size=2))
    table_format = draw(FORMATS)
    # Avro has no lz4 codec (Java's AvroFileFormat names Avro codecs): an Avro level takes deflate instead
    codecs = {
        level: "deflate" if codec == "lz4" and formats.get(level, table_format) == "avro" else codec
        for level, codec in codecs.items()
    }
    options = {
        "bucket": "1",
        "num-levels": str(LEVELS),
        "num-sorted-run.compaction-trigger": "2",
        "file.format": table_format,
        "metadata.stats-mode": draw(MODES),
        "deletion-vectors.enabled": draw(st.sampled_from(["false", "true"])),
        "data-file.external-paths.strategy": draw(
            st.sampled_from(["none", "round-robin", "weight-robin", "entropy-inject"])
        ),
    }
    for key, entries in (
        ("file.format.per.level", formats),
        ("file.compression.per.level", codecs),
        ("metadata.stats-mode.per.level", modes),
    ):
        if entries:
            options[key] = ",".join(f"{level}:{value}" for level, value in entries.items())
    for column in ("s", "v"):
        mode = draw(st.one_of(st.none(), MODES))
        if mode is not None:
            options[f"fields.{column}.stats-mode"] = mode
    return options


def _format_of(options: dict[str, str], level: int) -> str:
    entries = dict(e.split(":") for e in options.get("file.format.per.level", "").split(",") if e)
    return entries.get(str(level), options["file.format"])


def _rows(f: DataFileMeta, path: Path) -> pa.Table:
    if path.suffix == ".avro":
        records = decode_avro_container(path.read_bytes(), name=str(path)).records
        return pa.Table.from_pylist([r for r in records if r is not None])
    return orc.read_table(str(path)) if path.suffix == ".orc" else pq.read_table(str(path))


def _check_stats(f: DataFileMeta, rows: pa.Table, options: dict[str, str], table: lsmlake.Table) -> None:
    """Each column's stats are true to the rows; a column whose own mode is none has none (dense store
    leaves it out), one whose own mode is full has exact bounds."""
    names = list(f.value_stats_cols) if f.value_stats_cols is not None else table.schema.field_names
    for column in ("s", "v"):
        own = options.get(f"fields.{column}.stats-mode")
        if own == "none":
            assert column not in names, (f.file_name, names)
        elif own is not None:
            assert column in names, (f.file_name, names)
    types = [table.schema.field(n).type.copy(nullable=True) for n in names]
    mins = deserialize_row(f.value_stats.min_values, types) if names else []
    maxs = deserialize_row(f.value_stats.max_values, types) if names else []
    counts = f.value_stats.null_counts or ()
    for i, name in enumerate(names):
        column = rows.column(name)
        values = [x for x in column.to_pylist() if x is not None]
        if counts[i] is not None:
            assert counts[i] == column.null_count, (f.file_name, name)
        lo, hi = mins[i], maxs[i]
        if lo is not None:
            assert values and lo <= min(values) and hi is not None and max(values) <= hi, (f.file_name, name)
            if options.get(f"fields.{name}.stats-mode") == "full":
                assert (lo, hi) == (min(values), max(values)), (f.file_name, name)
    keys = rows.column("_KEY_k").to_pylist()
    kt = [table.schema.field("k").type.copy(nullable=True)]
    bounds = (deserialize_row(f.key_stats.min_values, kt), deserialize_row(f.key_stats.max_values, kt))
    if f.file_name.endswith(".avro") and bounds == ([None], [None]):
        # Avro files give the key column the level's mode (Java's createStatsFactoriesForAvro): none or counts
        return
    assert bounds == ([min(keys)], [max(keys)]), (f.file_name, bounds)


@given(options=table_options(), ops=OPS)
@SETTINGS
def test_file_settings_match_the_model(options: dict[str, str], ops: list[tuple[Any, ...]]) -> None:
    base = Path(tempfile.mkdtemp(prefix="lsmlake-file-settings-"))
    roots = [base / "ext-a", base / "ext-b"]
    options = {**options, "data-file.external-paths": ",".join(f"file://{r}" for r in roots)}
    if options["data-file.external-paths.strategy"] == "weight-robin":
        options["data-file.external-paths.weights"] = "3,1"
    catalog = lsmlake.Catalog(str(base / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["k"], options=options)
    external = options["data-file.external-paths.strategy"] != "none"
    lookup = options["deletion-vectors.enabled"] == "true"
    model: dict[int, tuple[str | None, int]] = {}
    for op in ops:
        if op[0] == "write":
            rows = {k: (s, v) for k, s, v in op[1]}
            table.write(
                pa.table(
                    {"k": list(rows), "s": [r[0] for r in rows.values()], "v": [r[1] for r in rows.values()]},
                    schema=SCHEMA,
                )
            )
            model.update(rows)
        elif op[0] == "delete":
            table.delete(pa.table({"k": pa.array(op[1], pa.int32())}))
            for k in op[1]:
                model.pop(k, None)
        else:
            table.compact(full=op[1])
        got = {r["k"]: (r["s"], r["v"]) for r in table.read().to_pylist()}
        assert got == model
        for split in table.scan().splits():
            for f in split.files:
                path = (
                    Path("/" + f.external_path.split(":", 1)[1].lstrip("/"))
                    if f.external_path
                    else Path(split.bucket_path) / f.file_name
                )
                assert path.exists(), path
                assert (f.external_path is not None) == external, f.external_path
                if external:
                    assert any(path.is_relative_to(r / "bucket-0") for r in roots), path
                fmt = path.suffix.lstrip(".")
                allowed = {
                    _format_of(options, k) for k in range(1 if lookup and f.level > 0 else 0, f.level + 1)
                }
                assert fmt in allowed, (f.file_name, f.level, allowed)
                _check_stats(f, _rows(f, path), options, table)
