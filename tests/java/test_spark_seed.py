"""The second seed's SQL on real Paimon (Spark SQL with Paimon's Spark runtime) and through ``lsmlake sql``:
each reads the other's table, and what each leaves on disk is compared (snapshots, levels, files, deletion vectors)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import lsmlake
from lsmlake.metadata.deletion_vector import read_deletion_vectors
from lsmlake.metadata.index_manifest import read_index_manifest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from spark_session import file_lock, run_spark_sql, tools_missing  # noqa: E402

pytestmark = [pytest.mark.java, pytest.mark.slow]

#: The seed's statements, verbatim.
SEED = (
    "insert into test_ver values(1,1)",
    "insert into test_ver values(2,2)",
    "insert into test_ver values(3,33)",
    "update test_ver set age = 2 where (user_id=1 or user_id = 2)",
)
#: The seed's table: deletion vectors on, one bucket (the seed shows bucket 0 only). The seed's files are ORC
#: (Paimon 0.9's default); parquet is the default of Paimon 1.x and lsmlake. Name -> (format, compact first).
TABLES = {"test_ver": ("parquet", False), "test_ver_c": ("parquet", True), "test_ver_orc": ("orc", False)}
EXPECTED = [[1, 2], [2, 2], [3, 33]]
#: Bytes of (the update's level-0 file, the top file) before the update's compaction, (Spark, lsmlake).
README_SIZES = {"test_ver_c": [(1131, 1110), (921, 947)], "test_ver_orc": [(516, 533), (575, 582)]}
SIZE_RATIO, MAX_SIZE_AMP, MAX_LEVEL = 1, 200, 5  # Paimon's defaults: compaction.size-ratio, ...amplification


def _props(fmt: str) -> str:
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "file.format": fmt}
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def _statements(table: str, compact_before_update: bool) -> list[str]:
    dml = [s.replace("test_ver", table) for s in SEED]
    if compact_before_update:
        dml.insert(3, f"CALL sys.compact(table => 'default.{table}')")
    return dml


def _spark_script() -> list[str]:
    """Spark writes its tables (catalog ``paimon``), then reads them and lsmlake's (catalog ``lk``)."""
    script: list[str] = []
    for table, (fmt, compact) in TABLES.items():
        script.append(
            f"CREATE TABLE {table} (user_id INT, age INT) TBLPROPERTIES ('primary-key' = 'user_id', {_props(fmt)})"
        )
        script += _statements(table, compact)
    script += [
        f"SELECT user_id, age FROM {c}.default.{t} ORDER BY user_id" for c in ("paimon", "lk") for t in TABLES
    ]
    return script


def _lsmlake_script() -> str:
    script: list[str] = []
    for table, (fmt, compact) in TABLES.items():
        script.append(
            f"CREATE TABLE {table} (user_id INT, age INT, PRIMARY KEY (user_id) NOT ENFORCED) WITH ({_props(fmt)})"
        )
        script += _statements(table, compact)
    return ";\n".join(script)


@dataclass(frozen=True)
class File:
    name: str
    level: int
    rows: int
    size: int
    max_seq: int


@dataclass(frozen=True)
class Outcome:
    """What one table holds on disk, read through lsmlake's metadata readers."""

    kinds: list[str]  # commit kind per snapshot, in order
    files: list[list[File]]  # per snapshot: the live files
    vectors: list[dict[str, Any]]  # the latest snapshot's DV index files: ranges, positions, bytes
    rowkinds: list[tuple[int, str]]  # (user_id, row kind) from $audit_log

    def levels(self) -> list[list[tuple[int, int]]]:
        return [sorted((f.level, f.rows) for f in fs) for fs in self.files]

    def upgraded(self) -> list[int]:
        """Snapshots whose COMPACT moved a file up without rewriting it (the same file name, a higher level)."""
        out = []
        for sid in range(2, len(self.files) + 1):
            before = {f.name: f.level for f in self.files[sid - 2]}
            if any(before.get(f.name, f.level) < f.level for f in self.files[sid - 1]):
                out.append(sid)
        return out


def _outcome(catalog: lsmlake.Catalog, table: str) -> Outcome:
    ident = f"default.{table}"
    snapshots = catalog.get_table(f"{ident}$snapshots").read().to_pylist()
    per_snapshot = []
    for s in snapshots:
        files = catalog.get_table(f"{ident}$files").with_options({"scan.snapshot-id": str(s["snapshot_id"])})
        per_snapshot.append(
            [
                File(
                    Path(r["file_path"]).name,
                    r["level"],
                    r["record_count"],
                    r["file_size_in_bytes"],
                    r["max_sequence_number"],
                )
                for r in files.read().to_pylist()
            ]
        )
    audit = catalog.get_table(f"{ident}$audit_log").read().to_pylist()
    rowkinds = sorted((r["user_id"], r["rowkind"]) for r in audit)
    return Outcome([s["commit_kind"] for s in snapshots], per_snapshot, _vectors(catalog, ident), rowkinds)


def _vectors(catalog: lsmlake.Catalog, ident: str) -> list[dict[str, Any]]:
    t = catalog.open_table(ident)
    snapshot = t.latest_snapshot()
    if snapshot is None or not snapshot.index_manifest:
        return []
    out = []
    for entry in read_index_manifest(t.io, t.paths.manifest(snapshot.index_manifest)):
        meta = entry.index_file
        data = t.io.read_bytes(t.paths.index_file(meta.file_name))
        dvs = read_deletion_vectors(data, meta.dv_ranges or (), name=meta.file_name)
        out.append(
            {
                "type": meta.index_type,
                "bucket": entry.bucket,
                "file_size": meta.file_size,
                "row_count": meta.row_count,
                "ranges": [
                    (d.data_file_name, d.offset, d.length, d.cardinality) for d in meta.dv_ranges or ()
                ],
                "positions": {name: sorted(int(p) for p in dv.positions) for name, dv in dvs.items()},
                "bytes": data,
            }
        )
    return out


def _runs(files: list[File]) -> list[File]:
    """Sorted runs in Paimon's order: level-0 files newest first, then one run per level (one file each here)."""
    return sorted(files, key=lambda f: (f.level, -f.max_seq if f.level == 0 else 0))


def _predicted_levels(before: list[File]) -> list[int]:
    """The levels after a writer's compaction of ``before``, by Paimon's rules for a DV table
    (ForceUpLevel0Compaction over UniversalCompaction): size amplification, then the size-ratio rule from
    one run, then level 0 forced up, taking each next run while the candidates' bytes * (1 + ratio) reach it."""
    runs = _runs(before)
    sizes = [f.size for f in runs]

    def take(count: int) -> int:
        total = sum(sizes[:count])
        while count < len(runs) and total * (100 + SIZE_RATIO) / 100 >= sizes[count]:
            total += sizes[count]
            count += 1
        return count

    if len(runs) > 1 and sum(sizes[:-1]) * 100 > MAX_SIZE_AMP * sizes[-1]:
        count = len(runs)
    else:
        count = take(1)
        if count == 1:
            count = take(sum(1 for f in runs if f.level == 0))
    out_level = MAX_LEVEL if count == len(runs) else runs[count].level - 1
    return sorted([f.level for f in runs[count:]] + [out_level])


def _assert_size_ratio_explains(out: Outcome) -> None:
    """Every COMPACT right after an APPEND is the one Paimon's rules pick from the files' byte sizes;
    a COMPACT after a COMPACT (CALL sys.compact) is a full compaction: one file at the top level."""
    for i in range(1, len(out.kinds)):
        if out.kinds[i] != "COMPACT":
            continue
        got = sorted(f.level for f in out.files[i])
        if out.kinds[i - 1] == "APPEND":
            assert got == _predicted_levels(out.files[i - 1]), (i + 1, out.files[i - 1], out.files[i])
        else:
            assert got == [MAX_LEVEL], (i + 1, out.files[i])


def _rows(answer: dict[str, Any]) -> list[list[Any]]:
    return [list(r) for r in answer["rows"]]


Seeded = dict[str, tuple[Outcome, Outcome]]  # table -> (Spark's outcome, lsmlake's outcome)
Run = tuple[Seeded, list[dict[str, Any]], Path]  # outcomes, Spark's answers, the root of both warehouses


def _write_both(root: Path) -> list[dict[str, Any]]:
    """lsmlake's CLI, then one Spark session, write and read every table; Spark's answers are kept in
    ``root``, so pytest-xdist workers sharing ``root`` run Spark once per test session."""
    answers_file = root / "spark-answers.json"
    with file_lock(root.with_name(root.name + ".lock")):
        if not answers_file.exists():
            shutil.rmtree(root, ignore_errors=True)  # a run that failed half-way starts again
            lk_wh = root / "lsmlake"
            cli = [sys.executable, "-m", "lsmlake", "-w", str(lk_wh), "sql", _lsmlake_script()]
            done = subprocess.run(cli, capture_output=True, text=True, timeout=300, check=False)
            assert done.returncode == 0, done.stderr
            answers = run_spark_sql({"paimon": root / "spark", "lk": lk_wh}, _spark_script())
            (root / "answers.tmp").write_text(json.dumps(answers), encoding="utf-8")
            os.replace(root / "answers.tmp", answers_file)
    loaded: list[dict[str, Any]] = json.loads(answers_file.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Run:
    missing = tools_missing()
    if missing:
        pytest.skip(f"Spark with Paimon: {missing}")
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the session's base directory, shared by its workers
        root = tmp_path_factory.getbasetemp().parent / "spark-seed"
    else:
        root = tmp_path_factory.mktemp("spark-seed")
    answers = _write_both(root)
    spark_cat, lk_cat = lsmlake.Catalog(str(root / "spark")), lsmlake.Catalog(str(root / "lsmlake"))
    outcomes = {t: (_outcome(spark_cat, t), _outcome(lk_cat, t)) for t in TABLES}
    return outcomes, answers, root


def test_each_reads_the_others_table(seeded: Run) -> None:
    _, answers, root = seeded
    reads = answers[-2 * len(TABLES) :]
    # Spark reads its own tables and lsmlake's
    assert [_rows(a) for a in reads] == [EXPECTED] * len(reads), [a["sql"] for a in reads]
    for side in ("spark", "lsmlake"):
        cat = lsmlake.Catalog(str(root / side))
        for table in TABLES:
            got = cat.open_table(f"default.{table}").read().sort_by("user_id").to_pylist()
            assert [[r["user_id"], r["age"]] for r in got] == EXPECTED, (side, table)
            assert all(s.raw_convertible for s in cat.open_table(f"default.{table}").scan().splits())


def test_commits_and_compaction_choices_follow_paimons_rules(seeded: Run) -> None:
    outcomes, _, _ = seeded
    # every INSERT/UPDATE commits an APPEND (a level-0 file) and a COMPACT: DV tables force level 0 up;
    # CALL sys.compact adds one COMPACT only where more than one file is live (parquet after 3 inserts)
    four = ["APPEND", "COMPACT"] * 4
    expected = {"test_ver": four, "test_ver_c": [*four[:6], "COMPACT", *four[6:]], "test_ver_orc": four}
    for table, (spark, lk) in outcomes.items():
        assert spark.kinds == lk.kinds == expected[table], table
        _assert_size_ratio_explains(spark)
        _assert_size_ratio_explains(lk)
        # no level-0 file after any COMPACT, and reads need no merge
        assert all(f.level > 0 for i, fs in enumerate(lk.files) if lk.kinds[i] == "COMPACT" for f in fs)
        assert all(f.level > 0 for i, fs in enumerate(spark.files) if spark.kinds[i] == "COMPACT" for f in fs)


def test_seed_as_written_in_parquet_leaves_the_same_tree(seeded: Run) -> None:
    spark, lk = seeded[0]["test_ver"]
    # 1 -> L5 (moved); 2 merged into L5; 3 moved to L4 (its bytes * 1.01 < L5's); the update's L0 takes all
    assert spark.levels() == lk.levels() == [
        [(0, 1)], [(5, 1)], [(0, 1), (5, 1)], [(5, 2)], [(0, 1), (5, 2)], [(4, 1), (5, 2)],
        [(0, 2), (4, 1), (5, 2)], [(5, 3)],
    ]  # fmt: skip
    assert spark.upgraded() == lk.upgraded() == [2, 6]
    assert spark.vectors == lk.vectors == []  # the update's compaction rewrote the old rows: nothing to mark


def _parted(out: Outcome) -> str:
    """How the update's compaction went: 'kept' (the top file stays, a DV marks its two old rows) or 'merged'."""
    before, after = _runs(out.files[-2]), out.files[-1]
    l0, top = before[0], before[-1]
    if l0.size * (100 + SIZE_RATIO) / 100 < top.size:
        assert sorted((f.level, f.rows) for f in after) == [(4, 2), (5, 3)]
        (dv,) = out.vectors
        assert dv["positions"] == {top.name: [0, 1]}  # users 1 and 2, the first two rows of the top file
        return "kept"
    assert [(f.level, f.rows) for f in after] == [(5, 3)] and out.vectors == []
    return "merged"


def test_where_the_trees_part_the_file_sizes_say_why(seeded: Run) -> None:
    """Same rules, different bytes: parquet-mr/ORC-Java and Arrow write files of other sizes, and at three rows
    the 1% size ratio between the update's level-0 file and the top file flips the choice."""
    outcomes = seeded[0]
    for table in ("test_ver_c", "test_ver_orc"):
        spark, lk = outcomes[table]
        assert spark.levels()[:-2] == lk.levels()[:-2], table  # the same tree up to the update
    assert [_parted(o) for o in outcomes["test_ver_c"]] == ["merged", "kept"]
    assert [_parted(o) for o in outcomes["test_ver_orc"]] == ["kept", "kept"]
    # the README's seed section quotes these sizes (the update's level-0 file, the top file): keep it in step
    sizes = {
        t: [(_runs(o.files[-2])[0].size, _runs(o.files[-2])[-1].size) for o in outcomes[t]]
        for t in README_SIZES
    }
    assert sizes == README_SIZES


def test_deletion_vector_index_is_the_seeds_and_byte_identical(seeded: Run) -> None:
    outcomes = seeded[0]
    (java,) = outcomes["test_ver_orc"][0].vectors  # the seed's own statements and format, on Paimon
    (ours,) = outcomes["test_ver_c"][1].vectors
    for dv in (java, ours):  # the seed's index entry: one file of 33 bytes, one range at offset 1, 24 bytes
        assert (dv["type"], dv["bucket"], dv["file_size"], dv["row_count"]) == ("DELETION_VECTORS", 0, 33, 1)
        ((_, offset, length, _),) = dv["ranges"]
        assert (offset, length) == (1, 24)
    assert java["ranges"][0][3] is None  # Paimon 0.9 has no _CARDINALITY field; lsmlake writes 2.x's
    assert ours["ranges"][0][3] == 2
    assert java["bytes"] == ours["bytes"]  # version byte, length, magic, roaring bitmap, CRC: the same bytes


def test_update_row_kind(seeded: Run) -> None:
    """Spark's UPDATE on a primary-key table writes +U rows (UpdatePaimonTableCommand), and so does
    lsmlake's; $audit_log (and an input changelog) show the kind."""
    for table in TABLES:
        spark, lk = seeded[0][table]
        assert lk.rowkinds == spark.rowkinds == [(1, "+U"), (2, "+U"), (3, "+I")], table
