"""Branches in Paimon's layout: create from a tag or empty, write to a branch, fast-forward, delete."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from fixtures import copy_fixture

import lsmlake
from lsmlake.errors import AlreadyExistsError, InvalidIdentifierError, NoSuchTableError, UnsupportedError
from lsmlake.sql import Session
from lsmlake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def catalog(tmp_path: Path) -> lsmlake.Catalog:
    cat = lsmlake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _table(catalog: lsmlake.Catalog) -> Table:
    return catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})


def _rows(t: object) -> dict[int, str]:
    assert isinstance(t, Table)
    data = t.read().to_pylist()
    return {r["id"]: r["v"] for r in data}


def _write(t: Table, rows: dict[int, str]) -> None:
    t.write(pa.table({"id": list(rows), "v": list(rows.values())}, schema=SCHEMA))


def test_branch_from_tag_writes_apart_from_main(catalog: lsmlake.Catalog, tmp_path: Path) -> None:
    t = _table(catalog)
    _write(t, {1: "a", 2: "b"})
    t.create_tag("t1")
    _write(t, {3: "c"})
    b = t.create_branch("dev", tag="t1")
    root = tmp_path / "wh" / "db.db" / "t" / "branch" / "branch-dev"
    assert sorted(p.name for p in (root / "snapshot").iterdir()) == ["snapshot-1"]
    assert (root / "tag" / "tag-t1").is_file() and (root / "schema" / "schema-0").is_file()
    assert b.name == "db.t$branch_dev" and _rows(b) == {1: "a", 2: "b"}
    _write(b, {2: "B", 9: "z"})
    assert _rows(catalog.get_table("db.t$branch_dev")) == {1: "a", 2: "B", 9: "z"}
    assert _rows(catalog.get_table("db.t")) == {1: "a", 2: "b", 3: "c"}  # main unchanged
    # the branch's data files sit with the table's, not under the branch directory
    assert not list(root.glob("bucket-*")) and not (root / "manifest").exists()
    assert t.list_branches() == ["dev"]
    names = catalog.get_table("db.t$branches").read().column("branch_name").to_pylist()
    assert names == ["dev"]
    snaps = catalog.get_table("db.t$branch_dev$snapshots").read().column("snapshot_id").to_pylist()
    assert snaps == [1, 2]


def test_empty_branch_has_schema_only(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    b = t.create_branch("empty")
    assert b.latest_snapshot() is None and _rows(b) == {}
    _write(b, {5: "e"})
    assert _rows(t.branch("empty")) == {5: "e"} and _rows(t) == {1: "a"}


def test_fast_forward_makes_main_the_branch(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    t.create_tag("t1")
    _write(t, {2: "b"})
    _write(t, {3: "c"})
    b = t.create_branch("dev", tag="t1")
    _write(b, {1: "A", 7: "g"})
    t.fast_forward("dev")
    main = catalog.get_table("db.t")
    assert _rows(main) == {1: "A", 7: "g"}
    latest = main.latest_snapshot() if isinstance(main, Table) else None
    assert latest is not None and latest.id == 2
    _write(t, {8: "h"})  # main continues from the branch's history
    assert _rows(catalog.get_table("db.t")) == {1: "A", 7: "g", 8: "h"}


def test_delete_branch_removes_its_metadata_only(catalog: lsmlake.Catalog, tmp_path: Path) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    t.create_tag("t1")
    _write(t.create_branch("dev", tag="t1"), {2: "b"})
    t.delete_branch("dev")
    assert t.list_branches() == []
    assert list((tmp_path / "wh" / "db.db" / "t" / "branch").iterdir()) == []
    with pytest.raises(NoSuchTableError, match="branch 'dev'"):
        catalog.get_table("db.t$branch_dev")
    with pytest.raises(NoSuchTableError, match="branch 'dev'"):
        t.delete_branch("dev")
    assert _rows(t) == {1: "a"}
    # files only the deleted branch used become orphans; main's stay
    removed = t.remove_orphan_files(older_than_ms=2**62)
    assert removed and _rows(t) == {1: "a"}


def test_expiry_and_orphans_keep_branch_files(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    for i in range(4):
        _write(t, {i: f"v{i}"})
    t.create_tag("t1", 1)
    b = t.create_branch("dev", tag="t1")
    _write(b, {100: "x"})
    t.delete_tag("t1")
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
    assert t.remove_orphan_files(older_than_ms=2**62) == []
    assert _rows(t.branch("dev")) == {0: "v0", 100: "x"}
    # expiring the branch keeps what main still reads
    b = t.branch("dev")
    _write(b, {101: "y"})
    b.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=2**62)
    assert _rows(t) == {i: f"v{i}" for i in range(4)}
    assert _rows(t.branch("dev")) == {0: "v0", 100: "x", 101: "y"}
    with pytest.raises(UnsupportedError, match="branch"):
        b.remove_orphan_files()


@pytest.mark.parametrize("name", ["main", "", " ", "123", "../x", "a/b", "a$b", "x\x00", "%2e%2e"])
def test_hostile_or_reserved_branch_names_are_refused(catalog: lsmlake.Catalog, name: str) -> None:
    t = _table(catalog)
    with pytest.raises(InvalidIdentifierError):
        t.create_branch(name)
    assert t.list_branches() == []


def test_branch_of_a_branch_and_hostile_identifiers(catalog: lsmlake.Catalog, tmp_path: Path) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    dev = t.create_branch("dev")
    _write(dev, {2: "b"})
    dev.create_tag("d1")
    feature = dev.create_branch("feature", tag="d1")  # from the branch's own tag; a sibling directory
    assert _rows(feature) == {2: "b"} and t.list_branches() == ["dev", "feature"]
    assert (tmp_path / "wh" / "db.db" / "t" / "branch" / "branch-feature").is_dir()
    for bad in ("db.t$branch_../x", "db.t$branch_a/b", "db.t$branch_", "db.t$branch_12"):
        with pytest.raises(InvalidIdentifierError):
            catalog.get_table(bad)
    assert catalog.get_table("db.t$branch_main").name == "db.t"
    assert catalog.get_table("db.t$branch_main$branches").read().num_rows == 2


def test_branch_errors(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    t.create_branch("dev")
    with pytest.raises(AlreadyExistsError):
        t.create_branch("dev")
    with pytest.raises(lsmlake.errors.NoSuchTagError):
        t.create_branch("other", tag="nope")
    assert t.list_branches() == ["dev"]
    with pytest.raises(lsmlake.errors.NoSuchSnapshotError, match="no snapshot"):
        t.fast_forward("dev")
    with pytest.raises(NoSuchTableError):
        t.fast_forward("nope")


def test_sql_branches(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    s = Session(catalog, database="db")
    s.execute("CALL sys.create_tag(`table` => 'db.t', tag => 't1')")
    s.execute("CALL sys.create_branch('db.t', 'dev', 't1')")
    s.execute("INSERT INTO `t$branch_dev` VALUES (2, 'b')")
    rows = s.execute("SELECT id, v FROM `t$branch_dev` ORDER BY id")[0].table
    assert rows is not None and rows.to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    listed = s.execute("SELECT branch_name FROM `t$branches`")[0].table
    assert listed is not None and listed.to_pylist() == [{"branch_name": "dev"}]
    s.execute("ALTER TABLE `t$branch_dev` ADD c INT")
    assert catalog.get_table("db.t$branch_dev").schema.field_names == ["id", "v", "c"]
    assert catalog.get_table("db.t").schema.field_names == ["id", "v"]
    s.execute("ALTER TABLE `t$branch_dev` DROP c")
    s.execute("CALL sys.fast_forward('db.t', 'dev')")
    assert _rows(catalog.get_table("db.t")) == {1: "a", 2: "b"}
    s.execute("CALL sys.delete_branch('db.t', 'dev')")
    assert t.list_branches() == []


# --------------------------------------------------------------------------- scan.fallback-branch
CPP = "alibaba-paimon-cpp/test/test_data/parquet"


def _cpp_table(tmp_path: Path, name: str) -> Table:
    copy_fixture(f"{CPP}/{name}.db", tmp_path / "wh")
    t = lsmlake.Catalog(str(tmp_path / "wh")).get_table(f"{name}.{name}")
    assert isinstance(t, Table)
    return t


def test_fallback_branch_fills_missing_partitions(tmp_path: Path) -> None:
    # the fixture's README: main holds pt=1, branch test pt=2; main sets scan.fallback-branch=test
    t = _cpp_table(tmp_path, "append_table_with_append_pt_branch")
    rows = sorted((r["pt"], r["value"], r["value2"]) for r in t.read().to_pylist())
    assert rows == [(1, 110, None), (1, 120, 1200), (2, 210, None), (2, 220, 2200)]
    assert sorted(r["value"] for r in t.read(filter="value > 115").to_pylist()) == [120, 210, 220]
    assert t.read(filter="pt = 2", columns=["value"]).column("value").to_pylist() == [210, 220]
    assert len(t.read(limit=3)) == 3
    batches = [b for b in t.scan()]
    assert sum(b.num_rows for b in batches) == 4
    # the branch itself, and a past snapshot of main, read without fallback
    assert sorted(t.branch("test").read().column("value").to_pylist()) == [210, 220]
    assert t.read(snapshot_id=1).column("value").to_pylist() == [110]


def test_fallback_branch_keeps_main_partitions_whole(tmp_path: Path) -> None:
    # main (append) has dt=20240725; branch rt (primary key) has 20240725 and 20240726: only the latter
    # comes from rt, 20240725 is main's alone
    t = _cpp_table(tmp_path, "append_table_with_rt_branch")
    rows = sorted((r["dt"], r["name"], r["amount"]) for r in t.read().to_pylist())
    assert rows == [
        ("20240725", "apple", 5),
        ("20240725", "banana", 7),
        ("20240726", "cherry", 3),
        ("20240726", "pear", 6),
    ]


def test_interrupted_branch_deletion_is_unreachable_and_cleaned(
    catalog: lsmlake.Catalog, tmp_path: Path
) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    t.create_tag("t1")
    _write(t.create_branch("dev", tag="t1"), {2: "b"})
    branches = tmp_path / "wh" / "db.db" / "t" / "branch"
    # what delete_branch does first: the branch moves to a hidden name; a crash right after leaves this
    (branches / "branch-dev").rename(branches / ".deleted-branch-dev-1")
    assert t.list_branches() == [] and catalog.get_table("db.t$branches").read().num_rows == 0
    with pytest.raises(NoSuchTableError):
        catalog.get_table("db.t$branch_dev")
    assert t.remove_orphan_files(dry_run=True) == []  # younger than the guard: kept
    removed = t.remove_orphan_files(older_than_ms=2**62)
    assert str(branches / ".deleted-branch-dev-1") in removed and list(branches.iterdir()) == []
    assert any(p.endswith(".parquet") for p in removed)  # the branch's own data file went with it
    assert _rows(t) == {1: "a"}


def test_rename_branch(catalog: lsmlake.Catalog) -> None:
    t = _table(catalog)
    _write(t, {1: "a"})
    t.create_tag("t1")
    t.create_branch("dev", tag="t1").write(pa.table({"id": [2], "v": ["dev"]}))
    t.create_branch("other")
    s = Session(catalog, database="db")
    s.execute("CALL sys.rename_branch(`table` => 'db.t', from_branch => 'dev', to_branch => 'feature')")
    assert t.list_branches() == ["feature", "other"]
    assert _rows(catalog.get_table("db.t$branch_feature")) == {1: "a", 2: "dev"}
    _write(t.branch("feature"), {3: "more"})  # the renamed branch reads and writes as before
    assert _rows(t.branch("feature")) == {1: "a", 2: "dev", 3: "more"}
    with pytest.raises(AlreadyExistsError):
        t.rename_branch("feature", "other")
    with pytest.raises(NoSuchTableError):
        t.rename_branch("dev", "x")
    with pytest.raises(InvalidIdentifierError):
        t.rename_branch("main", "x")
    with pytest.raises(InvalidIdentifierError):
        t.rename_branch("feature", "a/b")
