"""A file that a snapshot references but that is gone: a MissingFileError naming the file and the snapshot,
and on the command line the one-line ``error:`` and exit code 8 of every other corrupt file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from s3_server import S3Endpoint, Warehouse

import lsmlake
from lsmlake.cli.main import main
from lsmlake.errors import CorruptFileError, MissingFileError

# Each kind of file a read needs, and how to find the one the latest snapshot references.
Finder = Callable[[lsmlake.Table], str]


def _data_file(table: lsmlake.Table) -> str:
    return str(lsmlake.Catalog(table_warehouse(table)).get_table("db.t$files").read()["file_path"][0])


def _dv_index_file(table: lsmlake.Table) -> str:
    name = lsmlake.Catalog(table_warehouse(table)).get_table("db.t$table_indexes").read()["file_name"][0]
    return str(Path(table.root) / "index" / name.as_py())


def _manifest(table: lsmlake.Table) -> str:
    """The newest manifest (a DV table's read skips manifests of level-0 files only)."""
    name = lsmlake.Catalog(table_warehouse(table)).get_table("db.t$manifests").read()["file_name"][-1]
    return str(Path(table.root) / "manifest" / name.as_py())


def _snapshot_file(attr: str) -> Finder:
    def find(table: lsmlake.Table) -> str:
        snapshot = table.snapshot_manager.latest()
        assert snapshot is not None
        return str(Path(table.root) / "manifest" / getattr(snapshot, attr))

    return find


KINDS: dict[str, Finder] = {
    "data file": _data_file,
    "deletion vector index file": _dv_index_file,
    "manifest": _manifest,
    "manifest list": _snapshot_file("base_manifest_list"),
    "index manifest": _snapshot_file("index_manifest"),
}


def table_warehouse(table: lsmlake.Table) -> str:
    return str(Path(table.root).parent.parent)


@pytest.fixture
def table(tmp_path: Path) -> lsmlake.Table:
    """A deletion-vector table whose latest snapshot references every kind of file above."""
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    t = catalog.create_table(
        "db.t", schema=schema, primary_key=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"}
    )
    t.write(pa.table({"id": [1, 2], "v": [1, 2]}, schema=schema))
    t.write(pa.table({"id": [1], "v": [3]}, schema=schema))
    return t


def _remove(table: lsmlake.Table, kind: str) -> tuple[str, int]:
    path = KINDS[kind](table)
    Path(path).unlink()
    snapshot = table.snapshot_manager.latest()
    assert snapshot is not None
    return path, snapshot.id


@pytest.mark.parametrize("kind", list(KINDS))
def test_read_names_the_missing_file_and_its_snapshot(table: lsmlake.Table, kind: str) -> None:
    path, snapshot_id = _remove(table, kind)
    fresh = lsmlake.Catalog(table_warehouse(table)).get_table("db.t")  # no cached footers or manifests
    with pytest.raises(MissingFileError) as info:
        fresh.read()
    assert isinstance(info.value, CorruptFileError) and isinstance(info.value, FileNotFoundError)
    message = str(info.value)
    assert message.startswith(f"{kind} {path} does not exist")
    assert f"snapshot {snapshot_id} of table {table.root} references it" in message


@pytest.mark.parametrize(
    ("kind", "command"),
    [(kind, ["sql", "SELECT * FROM db.t"]) for kind in KINDS]
    + [("manifest list", ["inspect", "db.t"]), ("data file", ["compact", "db.t", "--full"])],
)
def test_cli_prints_one_error_line_and_exits_8(table: lsmlake.Table, kind: str, command: list[str]) -> None:
    path, _ = _remove(table, kind)
    result = CliRunner().invoke(main, ["--warehouse", table_warehouse(table), *command])
    assert result.exit_code == 8, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert f"{kind} {path} does not exist" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def _delete(warehouse: Warehouse, path: str) -> None:
    """Delete one file by its filesystem path (``bucket/key`` on S3)."""
    if warehouse.backend == "local":
        Path(path).unlink()
        return
    endpoint = S3Endpoint(url=warehouse.options["s3.endpoint"])
    endpoint.client().delete_object(Bucket=endpoint.bucket, Key=path.split("/", 1)[1])


@pytest.mark.parametrize("kind", ["data file", "manifest list"])
def test_missing_file_on_every_backend(warehouse: Warehouse, kind: str) -> None:
    catalog = warehouse.catalog()
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    t = catalog.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": [1, 2]}, schema=schema))
    snapshot = t.snapshot_manager.latest()
    assert snapshot is not None
    if kind == "data file":
        uri = str(catalog.get_table("db.t$files").read()["file_path"][0])
        path = uri.split("://", 1)[1] if "://" in uri else uri
    else:
        path = f"{t.root}/manifest/{snapshot.base_manifest_list}"
    _delete(warehouse, path)
    with pytest.raises(MissingFileError) as info:
        warehouse.catalog().get_table("db.t").read()
    shown = path if warehouse.backend == "local" else f"s3://{path}"
    assert str(info.value).startswith(f"{kind} {shown} does not exist; snapshot {snapshot.id} of table")
