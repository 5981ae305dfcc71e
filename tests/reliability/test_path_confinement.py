"""Paths named by metadata stay inside the table: hostile names in manifests, manifest lists, snapshots,
index manifests and tags are refused with an error naming the file, and nothing outside is touched."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from fixtures import copy_fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake.core.caches import clear_caches
from lsmlake.core.fileio import FileIO, OutputFile
from lsmlake.core.path_guard import PathGuard, PathRefusedWarning
from lsmlake.errors import CorruptFileError, LsmlakeError
from lsmlake.maintenance.planning import FileSets
from lsmlake.maintenance.protect import delete_files
from lsmlake.metadata.consumers import consumer_path
from lsmlake.metadata.index_manifest import decode_index_manifest, encode_index_manifest
from lsmlake.metadata.manifest import decode_manifest, encode_manifest
from lsmlake.metadata.manifest_list import decode_manifest_list, encode_manifest_list
from lsmlake.metadata.snapshot import decode_snapshot
from lsmlake.metadata.tags import tag_path
from lsmlake.table import Table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])

# ------------------------------------------------------------------ recording every path lsmlake touches


class _RecordingHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """A local filesystem that notes every path it is asked about, opens, creates or deletes."""

    def __init__(self, seen: list[tuple[str, str]]) -> None:
        self.fs, self.seen = pafs.LocalFileSystem(), seen

    def _note(self, op: str, *paths: str) -> None:
        self.seen.extend((op, p) for p in paths)

    def get_type_name(self) -> str:
        return "recording"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        self._note("info", *paths)
        return list(self.fs.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        self._note("list", selector.base_dir)
        return list(self.fs.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self._note("create", path)
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._note("delete", path)
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._note("delete", path)
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise AssertionError("deleting the root's contents")

    def delete_file(self, path: str) -> None:
        self._note("delete", path)
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self._note("create", src, dest)
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self._note("create", src, dest)
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        self._note("open", path)
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        self._note("open", path)
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any = None) -> pa.NativeFile:
        self._note("create", path)
        return self.fs.open_output_stream(path)

    def open_append_stream(self, path: str, metadata: Any = None) -> pa.NativeFile:
        self._note("create", path)
        return self.fs.open_append_stream(path)


class RecordingIO(FileIO):
    """Local FileIO whose filesystem records every path, and whose direct local writes (which bypass
    the filesystem) record theirs too."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        super().__init__(pafs.PyFileSystem(_RecordingHandler(self.seen)), local=True)

    def make_parent_dirs(self, path: str) -> None:
        self.seen.append(("create", os.path.dirname(path)))
        super().make_parent_dirs(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.seen.append(("create", path))
        super().write_bytes(path, data)

    def create_output(self, path: str) -> OutputFile:
        self.seen.append(("create", path))
        return super().create_output(path)

    def overwrite_hint(self, path: str, text: str) -> None:
        self.seen.append(("create", path))
        super().overwrite_hint(path, text)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self.seen.append(("create", path))
        return super().write_if_absent(path, data)

    def delete_empty_dir(self, path: str) -> bool:
        self.seen.append(("delete", path))
        return super().delete_empty_dir(path)


_AUDITED = {
    "open",
    "os.remove",
    "os.rename",
    "os.replace",
    "os.mkdir",
    "os.rmdir",
    "os.link",
    "shutil.rmtree",
}
_audit_state: dict[str, Any] = {"sandbox": None, "seen": None, "thread": None}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Python-level file access inside the sandbox (a second net below FileIO)."""
    sandbox, seen = _audit_state["sandbox"], _audit_state["seen"]
    if sandbox is None or event not in _AUDITED or not args:
        return
    for arg in args[:2]:
        if isinstance(arg, (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(arg))
            if path.startswith(sandbox):
                seen.append((event, path))


sys.addaudithook(_audit)


@contextmanager
def audited(sandbox: Path, seen: list[tuple[str, str]]) -> Iterator[None]:
    _audit_state.update(sandbox=str(sandbox), seen=seen)
    try:
        yield
    finally:
        _audit_state.update(sandbox=None, seen=None)


def outside(seen: list[tuple[str, str]], allowed: list[Path]) -> list[tuple[str, str]]:
    """Recorded paths that lie under none of ``allowed`` (directories of the table)."""
    roots = [os.path.normpath(str(p)) for p in allowed]

    def inside(path: str) -> bool:
        p = os.path.normpath(path)
        return any(p == r or p.startswith(r + "/") for r in roots)

    return [(op, p) for op, p in seen if not inside(p)]


# ------------------------------------------------------------------ a real table, its metadata rewritten


def build(sandbox: Path) -> tuple[lsmlake.Table, Path]:
    """A primary-key table with deletion vectors, three snapshots and a tag on the first; a victim
    file next to it (and one beside the warehouse) that nothing may open or delete."""
    cat = lsmlake.Catalog(str(sandbox / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"}
    )
    t.write(pa.table({"k": list(range(20)), "v": [f"v{i}" for i in range(20)]}, schema=SCHEMA))
    t.create_tag("first", 1)
    t.compact(full=True)
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    root = Path(t.root)
    shutil.copyfile(next((root / "bucket-0").iterdir()), sandbox / "victim.parquet")
    shutil.copyfile(sandbox / "victim.parquet", sandbox / "wh" / "victim.parquet")
    return t, root


def _manifests(root: Path, prefix: str) -> list[Path]:
    files = sorted(p for p in (root / "manifest").iterdir() if p.name.startswith(prefix))
    if prefix == "manifest-":
        files = [p for p in files if not p.name.startswith("manifest-list-")]
    return files


def rewrite_manifests(root: Path, field: str, value: str) -> list[Path]:
    for path in (changed := _manifests(root, "manifest-")):
        entries = decode_manifest(path.read_bytes(), name=path.name)
        hostile = []
        for e in entries:
            f = e.file
            if field == "_EXTRA_FILES":
                f = dataclasses.replace(f, extra_files=(value,))
            elif field == "_EXTERNAL_PATH":
                f = dataclasses.replace(f, external_path=value)
            else:
                f = dataclasses.replace(f, file_name=value)
            hostile.append(dataclasses.replace(e, file=f))
        path.write_bytes(encode_manifest(hostile))
    return changed


def rewrite_manifest_lists(root: Path, value: str) -> list[Path]:
    for path in (changed := _manifests(root, "manifest-list-")):
        metas = decode_manifest_list(path.read_bytes(), name=path.name)
        path.write_bytes(encode_manifest_list([dataclasses.replace(m, file_name=value) for m in metas]))
    return changed


def rewrite_index_manifests(root: Path, field: str, value: str) -> list[Path]:
    for path in (changed := _manifests(root, "index-manifest-")):
        entries = decode_index_manifest(path.read_bytes(), name=path.name)
        hostile = [
            dataclasses.replace(
                e,
                index_file=dataclasses.replace(e.index_file, external_path=value)
                if field == "_EXTERNAL_PATH"
                else dataclasses.replace(e.index_file, file_name=value),
            )
            for e in entries
        ]
        path.write_bytes(encode_index_manifest(hostile))
    return changed


def rewrite_snapshot_json(path: Path, key: str, value: str) -> None:
    obj = json.loads(path.read_text())
    decode_snapshot(path.read_text())  # it is a valid snapshot before
    obj[key] = value
    path.write_text(json.dumps(obj))


def rewrite_snapshots(root: Path, key: str, value: str) -> list[Path]:
    for path in (changed := sorted((root / "snapshot").glob("snapshot-*"))):
        rewrite_snapshot_json(path, key, value)
    return changed


def rewrite_tags(root: Path, key: str, value: str) -> list[Path]:
    for path in (changed := sorted((root / "tag").glob("tag-*"))):
        rewrite_snapshot_json(path, key, value)
    return changed


Target = tuple[str, str]
"""(metadata kind, field)."""
NAME_TARGETS: list[Target] = [
    ("manifest", "_FILE_NAME"),
    ("manifest", "_EXTRA_FILES"),
    ("manifest-list", "_FILE_NAME"),
    ("snapshot", "baseManifestList"),
    ("snapshot", "deltaManifestList"),
    ("snapshot", "indexManifest"),
    ("snapshot", "statistics"),
    ("index-manifest", "_FILE_NAME"),
    ("tag", "baseManifestList"),
]
EXTERNAL_TARGETS: list[Target] = [("manifest", "_EXTERNAL_PATH"), ("index-manifest", "_EXTERNAL_PATH")]


def corrupt(root: Path, target: Target, value: str) -> list[Path]:
    kind, field = target
    if kind == "manifest":
        return rewrite_manifests(root, field, value)
    if kind == "manifest-list":
        return rewrite_manifest_lists(root, value)
    if kind == "index-manifest":
        return rewrite_index_manifests(root, field, value)
    if kind == "snapshot":
        return rewrite_snapshots(root, field, value)
    return rewrite_tags(root, field, value)


def hostile_names(sandbox: Path) -> st.SearchStrategy[str]:
    """File names that are not one plain name: traversal, absolute, encoded, other schemes, very long,
    control characters, empty."""
    victim = str(sandbox / "victim.parquet")
    return st.one_of(
        st.sampled_from(
            [
                "../../victim.parquet",
                "../../../victim.parquet",
                "..",
                ".",
                "",
                victim,
                "file:" + victim,
                "FILE://" + victim,
                "s3://other-bucket/victim.parquet",
                "hdfs://namenode/victim.parquet",
                "..%2F..%2Fvictim.parquet",
                "%2e%2e",
                "..\\..\\victim.parquet",
                "data-\x00.parquet",
                "data-\n.parquet",
                "x" * 300 + ".parquet",
            ]
        ),
        st.builds(
            lambda n, tail: "../" * n + tail, st.integers(1, 6), st.sampled_from(["victim.parquet", "wh"])
        ),
        st.builds(lambda c: f"data-{c}.parquet", st.characters(max_codepoint=0x1F)),
    )


def hostile_external(sandbox: Path, root: Path) -> st.SearchStrategy[str]:
    """External paths outside the table (or malformed): relative, absolute elsewhere, traversal out of
    the table (plain and percent-encoded), other schemes and buckets, control characters, very long."""
    victim = str(sandbox / "victim.parquet")
    return st.sampled_from(
        [
            "victim.parquet",
            "../../victim.parquet",
            victim,
            "file:" + victim,
            "FILE:///" + victim.lstrip("/"),
            f"{root}/../../victim.parquet",
            f"file:{root}/bucket-0/%2e%2e/%2e%2e/%2e%2e/victim.parquet",
            f"file:{root}/bucket-0/..%2F..%2F..%2Fvictim.parquet",
            "s3://other-bucket/victim.parquet",
            "http://example.com/victim.parquet",
            f"{root}/bucket-0/data-\x01.parquet",
            f"{root}/" + "d" * 300 + ".parquet",
            f"{root}/" + "d/" * 2100 + "x.parquet",
        ]
    )


# ------------------------------------------------------------------ the operations


def _write(t: lsmlake.Table) -> object:
    return t.write(pa.table({"k": [7, 100], "v": ["x", "y"]}, schema=SCHEMA))


def _drop(t: lsmlake.Table, io: RecordingIO) -> None:
    cat = lsmlake.Catalog(str(Path(t.root).parent.parent))
    cat.io = io
    cat.drop_table("db.t")


OPERATIONS: dict[str, Callable[[lsmlake.Table], object]] = {
    "read": lambda t: t.read(),
    "read-tag": lambda t: t.read(tag="first"),
    "write": _write,
    "compact": lambda t: t.compact(full=True),
    "expire": lambda t: t.expire_snapshots(retain_min=1, retain_max=1),
    "rollback": lambda t: t.rollback_to(1),
    "orphans": lambda t: t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000),
    "delete-tag": lambda t: t.delete_tag("first"),
}


def run_case(sandbox: Path, target: Target, value: str, op: str) -> bool:
    """Corrupt ``target`` of a fresh table with ``value``, run ``op`` through a recording FileIO, and
    check: nothing outside the table is touched, victims survive, the error names a corrupted file."""
    if sandbox.exists():
        shutil.rmtree(sandbox)
    sandbox.mkdir(parents=True)
    t, root = build(sandbox)
    changed = corrupt(root, target, value)
    assert changed, f"no {target[0]} file to corrupt"
    clear_caches()
    io = RecordingIO()
    table = dataclasses.replace(t, io=io)
    seen = io.seen
    error: LsmlakeError | None = None
    with audited(sandbox, seen):
        try:
            if op == "drop":
                _drop(table, io)
            else:
                OPERATIONS[op](table)
        except LsmlakeError as e:
            error = e
    assert not outside(seen, [root]), f"{op} touched paths outside the table: {outside(seen, [root])[:5]}"
    assert (sandbox / "victim.parquet").exists() and (sandbox / "wh" / "victim.parquet").exists()
    if op == "drop":
        assert error is None and not root.exists()
        return False
    if error is not None:
        assert isinstance(error, CorruptFileError) or isinstance(error.__cause__, CorruptFileError), error
        # a manifest (list, snapshot, tag) is named; an external path refused where no manifest is at hand
        # (a writer restoring its buckets) names the data or index file and the field
        named = any(p.name in str(error) for p in changed) or (
            target in EXTERNAL_TARGETS and ("external path" in str(error) or "_EXTERNAL_PATH" in str(error))
        )
        assert named, f"{op}: error names no corrupted file: {error}"
        return True
    # the operation did not need the corrupted file (e.g. a rollback to before it)
    assert op not in MUST_FAIL[target[0]], f"{op} succeeded over corrupted {target}"
    return False


# Operations that must read the corrupted metadata, per target kind (the others may not reach it: a
# batch read of the tag's snapshot prunes its level-0 manifests by their stats; dropping reads nothing).
_TABLE_OPS = {"read", "write", "compact", "expire", "rollback", "orphans"}
MUST_FAIL = {
    "manifest": _TABLE_OPS,
    "manifest-list": _TABLE_OPS | {"read-tag"},
    "snapshot": _TABLE_OPS,
    "index-manifest": _TABLE_OPS,
    "tag": {"read-tag", "expire", "rollback", "orphans", "delete-tag"},
}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_names_are_refused_and_nothing_outside_is_touched(
    tmp_path: Path, data: st.DataObject
) -> None:
    sandbox = tmp_path / "sandbox"
    target = data.draw(st.sampled_from(NAME_TARGETS), label="target")
    value = data.draw(hostile_names(sandbox), label="value")
    op = data.draw(st.sampled_from([*OPERATIONS, "drop"]), label="op")
    run_case(sandbox, target, value, op)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_external_paths_outside_the_table_are_refused(tmp_path: Path, data: st.DataObject) -> None:
    sandbox = tmp_path / "sandbox"
    root = sandbox / "wh" / "db.db" / "t"
    target = data.draw(st.sampled_from(EXTERNAL_TARGETS), label="target")
    value = data.draw(hostile_external(sandbox, root), label="value")
    op = data.draw(st.sampled_from([*OPERATIONS, "drop"]), label="op")
    run_case(sandbox, target, value, op)


@pytest.mark.parametrize("target", NAME_TARGETS + EXTERNAL_TARGETS, ids="/".join)
def test_each_target_stops_an_operation_that_reads_it(tmp_path: Path, target: Target) -> None:
    """Every kind of corrupted file is refused (one operation each, rotating; the hypothesis tests
    draw the rest)."""
    root = tmp_path / "s" / "wh" / "db.db" / "t"
    value = f"{root}/../../victim.parquet" if target in EXTERNAL_TARGETS else "../../victim.parquet"
    ops = sorted(MUST_FAIL[target[0]])
    op = ops[(NAME_TARGETS + EXTERNAL_TARGETS).index(target) % len(ops)]
    assert run_case(tmp_path / "s", target, value, op), f"{op} did not fail"


# ------------------------------------------------------------------ the guard itself


def test_deletion_outside_the_table_is_refused_and_reported(tmp_path: Path) -> None:
    """The last net: a planned deletion outside the table is skipped, warned about and returned."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    t, root = build(sandbox)
    inside_file = next((root / "bucket-0").iterdir())
    plan = FileSets(data_files=frozenset({str(sandbox / "victim.parquet"), str(inside_file), f"{root}/../x"}))
    guard = PathGuard.of(t.io, t.root, t.options)
    with pytest.warns(PathRefusedWarning, match="victim.parquet"):
        refused = delete_files(t.io, plan, guard, what="test")
    assert sorted(refused) == sorted([str(sandbox / "victim.parquet"), f"{root}/../x"])
    assert (sandbox / "victim.parquet").exists() and not inside_file.exists()


def test_s3_keys_outside_the_table_prefix_are_refused() -> None:
    """On S3 the table is bucket/prefix: other buckets, other prefixes and other schemes are refused."""
    io = FileIO(pafs.LocalFileSystem(), local=False, scheme="s3")
    guard = PathGuard.of(io, "bucket/wh/db.db/t", {"data-file.external-paths": "s3://ext-bucket/data"})
    assert guard.external("s3://bucket/wh/db.db/t/bucket-0/f.parquet", source="m", field="f")[1] == (
        "bucket/wh/db.db/t/bucket-0/f.parquet"
    )
    assert guard.external("s3a://ext-bucket/data/b-0/f.parquet", source="m", field="f") == (
        "s3",
        "ext-bucket/data/b-0/f.parquet",
    )
    for bad in [
        "s3://other/wh/db.db/t/f.parquet",
        "s3://bucket/wh/db.db/t2/f.parquet",
        "s3://bucket/wh/db.db/t/../t2/f.parquet",
        "s3://bucket/wh/db.db/t/%2E%2E/t2/f.parquet",
        "s3://ext-bucket/data2/f.parquet",
        "s3:///wh/db.db/t/f.parquet",
        "gs://bucket/wh/db.db/t/f.parquet",
        "file:/wh/db.db/t/f.parquet",
    ]:
        with pytest.raises(CorruptFileError, match=r"manifest-x.*_EXTERNAL_PATH"):
            guard.external(bad, source="manifest manifest-x", field="_EXTERNAL_PATH")
    assert guard.delete_problem("bucket/wh/db.db/t/bucket-0/f.parquet") is None
    assert guard.delete_problem("bucket/wh/db.db/t2/f.parquet") is not None
    assert guard.delete_problem("other/wh/db.db/t/f.parquet") is not None


@pytest.mark.parametrize("name", ["../x", "a/b", "", "x" * 300, "a\x00", "..%2fx", "%2F"])
def test_hostile_consumer_and_tag_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError):
        consumer_path(str(tmp_path), name)
    with pytest.raises(ValueError):
        tag_path(str(tmp_path), name)


def test_hostile_consumer_file_content_is_an_error_naming_it(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    t, root = build(sandbox)
    (root / "consumer").mkdir(exist_ok=True)
    (root / "consumer" / "consumer-c1").write_text(json.dumps({"nextSnapshot": "../../victim.parquet"}))
    io = RecordingIO()
    with pytest.raises(LsmlakeError, match="consumer-c1"):
        dataclasses.replace(t, io=io).expire_snapshots(retain_min=1, retain_max=1)
    assert not outside(io.seen, [root])


# ------------------------------------------------------------------ Java tables with external paths still read

EXTERNAL_FIXTURE = "alibaba-paimon-cpp/test/test_data/parquet/pk_dv_index_in_data_with_external.db"


def _relocate(text: str, old: str, new: str) -> str:
    return new + text[len(old) :] if text.startswith(old) else text


def test_java_table_with_external_paths_still_reads(tmp_path: Path) -> None:
    """The fixture's data and index files live under `data-file.external-paths` (FILE:/tmp/external as
    Java wrote it): copied, with the root moved into tmp_path, the table reads, and a path outside the
    moved root is refused."""
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    db = copy_fixture(EXTERNAL_FIXTURE, warehouse)
    ext = db / "external"
    root = db / "pk_dv_index_in_data_with_external"
    old, new = "FILE:/tmp/external", f"FILE:{ext}"
    for path in _manifests(root, "manifest-"):
        entries = decode_manifest(path.read_bytes(), name=path.name)
        moved = [
            dataclasses.replace(
                e, file=dataclasses.replace(e.file, external_path=_relocate(e.file.external_path, old, new))
            )
            if e.file.external_path
            else e
            for e in entries
        ]
        path.write_bytes(encode_manifest(moved))
    for path in _manifests(root, "index-manifest-"):
        index = decode_index_manifest(path.read_bytes(), name=path.name)
        path.write_bytes(
            encode_index_manifest(
                [
                    dataclasses.replace(
                        e,
                        index_file=dataclasses.replace(
                            e.index_file, external_path=_relocate(e.index_file.external_path or "", old, new)
                        ),
                    )
                    for e in index
                ]
            )
        )
    schema_file = root / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"]["data-file.external-paths"] = f"FILE://{ext}"
    schema_file.write_text(json.dumps(schema))
    clear_caches()
    t = lsmlake.Catalog(str(warehouse)).get_table(
        "pk_dv_index_in_data_with_external.pk_dv_index_in_data_with_external"
    )
    assert isinstance(t, Table)
    io = RecordingIO()
    got = dataclasses.replace(t, io=io).read()
    assert got.num_rows == 8  # the README's nine rows, Tony deleted, Alice updated
    opened = [p for op, p in io.seen if op == "open"]
    assert any(p.startswith(str(ext)) for p in opened) and not outside(io.seen, [root, ext])

    schema["options"]["data-file.external-paths"] = f"FILE://{ext}/f1=20"
    schema_file.write_text(json.dumps(schema))
    clear_caches()
    t = lsmlake.Catalog(str(warehouse)).get_table(
        "pk_dv_index_in_data_with_external.pk_dv_index_in_data_with_external"
    )
    with pytest.raises(CorruptFileError, match="outside the table"):
        t.read()
