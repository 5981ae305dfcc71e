"""Isolated pypaimon 2.1.0 venv plus subprocess helpers used as an interop oracle in tests."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from tests.side_venv import clean_env, file_lock, run_checked

PYPAIMON_VERSION = "2.1.0"
PYPAIMON_SPEC = f"pypaimon=={PYPAIMON_VERSION}"

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Override the venv location with ``LSMLAKE_PYPAIMON_VENV`` (e.g. a shared CI cache).
VENV_DIR = Path(os.environ.get("LSMLAKE_PYPAIMON_VENV", REPO_ROOT / ".cache" / "pypaimon-venv"))
CHILD_SCRIPT = Path(__file__).resolve().with_name("_pypaimon_child.py")

_MARKER_NAME = ".lsmlake-installed.json"
_PIP_TIMEOUT_S = 1800.0
_CHILD_TIMEOUT_S = 600.0

_ready_specs: set[str] = set()
_ready_python: Path | None = None
_process_lock = threading.Lock()

CommitKind = Literal["append", "overwrite"]


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _lock_path(venv: Path) -> Path:
    return venv.with_name(venv.name + ".lock")


def _probe_pypaimon(python: Path) -> bool:
    """True when ``pypaimon`` (and its pyarrow) import in ``python`` at the pinned version."""
    if not python.exists():
        return False
    code = (
        "import importlib.metadata as m, sys\n"
        "from pypaimon import CatalogFactory, Schema\n"
        f"sys.exit(0 if m.version('pypaimon') == {PYPAIMON_VERSION!r} else 3)\n"
    )
    proc = subprocess.run(
        [str(python), "-I", "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
        check=False,
    )
    return proc.returncode == 0


def _read_marker(venv: Path) -> set[str]:
    try:
        data = json.loads((venv / _MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    specs = data.get("specs", []) if isinstance(data, dict) else []
    return {str(spec) for spec in specs}


def _write_marker(venv: Path, specs: set[str]) -> None:
    tmp = venv / (_MARKER_NAME + ".tmp")
    tmp.write_text(json.dumps({"specs": sorted(specs)}, indent=1), encoding="utf-8")
    os.replace(tmp, venv / _MARKER_NAME)


def _pip_install(python: Path, specs: Sequence[str]) -> None:
    run_checked(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *specs],
        timeout=_PIP_TIMEOUT_S,
        what="pip install into pypaimon venv",
    )


def _ensure_venv(venv: Path, extras: Sequence[str]) -> Path:
    """Create/repair the venv and install missing specs; caller holds the file lock."""
    python = _venv_python(venv)
    installed = _read_marker(venv)
    base_ok = PYPAIMON_SPEC in installed and _probe_pypaimon(python)
    if not base_ok:
        if not _probe_pypaimon(python):
            # Missing or half-built venv: start from scratch.
            if venv.exists():
                shutil.rmtree(venv)
            run_checked([sys.executable, "-m", "venv", str(venv)], timeout=600, what="python -m venv")
            installed = set()
        # Idempotent when pypaimon already imports (pip just verifies the deps).
        _pip_install(python, [PYPAIMON_SPEC])
        if not _probe_pypaimon(python):
            raise RuntimeError(f"{PYPAIMON_SPEC} installed into {venv} but does not import")
        installed.add(PYPAIMON_SPEC)
        _write_marker(venv, installed)
    missing = [spec for spec in extras if spec not in installed]
    if missing:
        _pip_install(python, missing)
        installed.update(missing)
        _write_marker(venv, installed)
    return python


def pypaimon_python(extras: Sequence[str] = ()) -> Path:
    """Return the python executable of the pypaimon venv, creating it on first use.

    ``extras`` are additional pip requirement specs (e.g. ``"pypaimon-rust"``)
    installed into the same venv once; they are remembered by their exact spec
    string.  Safe under pytest-xdist: creation is serialised by an fcntl lock.
    """
    global _ready_python
    wanted = {PYPAIMON_SPEC, *extras}
    with _process_lock:
        if _ready_python is not None and wanted <= _ready_specs:
            return _ready_python
        with file_lock(_lock_path(VENV_DIR)):
            python = _ensure_venv(VENV_DIR, list(extras))
        _ready_specs.update(wanted)
        _ready_python = python
        return python


def _call_child(command: dict[str, Any], workdir: Path) -> dict[str, Any]:
    python = pypaimon_python()
    result_path = workdir / "result.json"
    payload = dict(command, result_path=str(result_path))
    run_checked(
        [str(python), "-I", str(CHILD_SCRIPT)],
        stdin=json.dumps(payload),
        timeout=_CHILD_TIMEOUT_S,
        what=f"pypaimon child op={command.get('op')!r}",
    )
    result = json.loads(result_path.read_text(encoding="utf-8"))
    if not isinstance(result, dict):
        raise RuntimeError(f"pypaimon child returned a non-object result: {result!r}")
    return result


def _base_command(op: str, warehouse: str | Path, identifier: str) -> dict[str, Any]:
    """A local warehouse is passed as an absolute path, a URI (``s3://...``) as it is."""
    where = str(warehouse) if "://" in str(warehouse) else str(Path(warehouse).resolve())
    return {"op": op, "warehouse": where, "identifier": identifier}


def pypaimon_version() -> dict[str, str]:
    """Versions of pypaimon and pyarrow inside the pypaimon venv."""
    with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
        result = _call_child({"op": "version"}, Path(tmp))
    return {str(k): str(v) for k, v in result.items()}


def pypaimon_create_table(
    warehouse: str | Path,
    identifier: str,
    schema: pa.Schema,
    primary_keys: Sequence[str] = (),
    partition_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    *,
    ignore_if_exists: bool = False,
) -> None:
    """Create ``identifier`` ("db.table") via ``Schema.from_pyarrow_schema``; creates the db too."""
    command = _base_command("create_table", warehouse, identifier)
    command.update(
        schema_b64=base64.b64encode(schema.serialize().to_pybytes()).decode("ascii"),
        primary_keys=list(primary_keys),
        partition_keys=list(partition_keys),
        table_options={str(k): str(v) for k, v in (options or {}).items()},
        ignore_if_exists=ignore_if_exists,
    )
    with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
        _call_child(command, Path(tmp))


def pypaimon_read(
    warehouse: str | Path,
    identifier: str,
    *,
    options: Mapping[str, str] | None = None,
    projection: Sequence[str] | None = None,
    catalog_options: Mapping[str, str] | None = None,
) -> pa.Table:
    """Full batch read of ``identifier`` with pypaimon; ``options`` are dynamic (``table.copy``),
    ``catalog_options`` go to pypaimon's catalog (e.g. ``s3.endpoint`` for an ``s3://`` warehouse)."""
    command = _base_command("read", warehouse, identifier)
    command["options"] = {str(k): str(v) for k, v in (options or {}).items()}
    command["catalog_options"] = {str(k): str(v) for k, v in (catalog_options or {}).items()}
    if projection is not None:
        command["projection"] = list(projection)
    with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
        output = Path(tmp) / "result.arrows"
        command["output_path"] = str(output)
        _call_child(command, Path(tmp))
        with pa.OSFile(str(output), "rb") as source:
            return pa.ipc.open_stream(source).read_all()


def pypaimon_write(
    warehouse: str | Path,
    identifier: str,
    data: pa.Table,
    *,
    commit_kind: CommitKind = "append",
    overwrite_partition: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
) -> int | None:
    """Write ``data`` in one pypaimon batch commit; returns the latest snapshot id afterwards.

    ``commit_kind="overwrite"`` uses ``BatchWriteBuilder.overwrite(overwrite_partition)``
    (``None`` = whole table; values are typed JSON scalars compared against the
    partition columns, ``None`` = null partition).  ``options`` are dynamic table options.
    """
    if commit_kind not in ("append", "overwrite"):
        raise ValueError(f"commit_kind must be 'append' or 'overwrite', got {commit_kind!r}")
    command = _base_command("write", warehouse, identifier)
    command["options"] = {str(k): str(v) for k, v in (options or {}).items()}
    command["commit_kind"] = commit_kind
    if overwrite_partition is not None:
        command["overwrite_partition"] = dict(overwrite_partition)
    with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
        input_path = Path(tmp) / "input.arrows"
        with pa.OSFile(str(input_path), "wb") as sink, pa.ipc.new_stream(sink, data.schema) as writer:
            writer.write_table(data)
        command["input_path"] = str(input_path)
        result = _call_child(command, Path(tmp))
    snapshot_id = result.get("snapshot_id")
    return None if snapshot_id is None else int(snapshot_id)


class PypaimonBatch:
    """Queue several pypaimon operations and run them in ONE child process, in order.

    Each queued call returns the index of its result in the list that :meth:`run` returns:
    ``None`` for ``create_table``, the latest snapshot id for ``write`` and a ``pa.Table``
    for ``read``.  A failing step aborts the batch (``RuntimeError`` naming the step).
    """

    def __init__(self) -> None:
        self._steps: list[tuple[str, dict[str, Any], pa.Table | None]] = []

    def __len__(self) -> int:
        return len(self._steps)

    def create_table(
        self,
        warehouse: str | Path,
        identifier: str,
        schema: pa.Schema,
        primary_keys: Sequence[str] = (),
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        *,
        ignore_if_exists: bool = False,
    ) -> int:
        command = _base_command("create_table", warehouse, identifier)
        command.update(
            schema_b64=base64.b64encode(schema.serialize().to_pybytes()).decode("ascii"),
            primary_keys=list(primary_keys),
            partition_keys=list(partition_keys),
            table_options={str(k): str(v) for k, v in (options or {}).items()},
            ignore_if_exists=ignore_if_exists,
        )
        self._steps.append(("create_table", command, None))
        return len(self._steps) - 1

    def write(
        self,
        warehouse: str | Path,
        identifier: str,
        data: pa.Table,
        *,
        commit_kind: CommitKind = "append",
        overwrite_partition: Mapping[str, Any] | None = None,
        options: Mapping[str, str] | None = None,
    ) -> int:
        if commit_kind not in ("append", "overwrite"):
            raise ValueError(f"commit_kind must be 'append' or 'overwrite', got {commit_kind!r}")
        command = _base_command("write", warehouse, identifier)
        command["options"] = {str(k): str(v) for k, v in (options or {}).items()}
        command["commit_kind"] = commit_kind
        if overwrite_partition is not None:
            command["overwrite_partition"] = dict(overwrite_partition)
        self._steps.append(("write", command, data))
        return len(self._steps) - 1

    def read(
        self,
        warehouse: str | Path,
        identifier: str,
        *,
        options: Mapping[str, str] | None = None,
        projection: Sequence[str] | None = None,
    ) -> int:
        command = _base_command("read", warehouse, identifier)
        command["options"] = {str(k): str(v) for k, v in (options or {}).items()}
        if projection is not None:
            command["projection"] = list(projection)
        self._steps.append(("read", command, None))
        return len(self._steps) - 1

    def files(
        self, warehouse: str | Path, identifier: str, *, options: Mapping[str, str] | None = None
    ) -> int:
        """The live data files as pypaimon plans them for a writer: a list of dicts with ``bucket``,
        ``partition`` (values as text), ``file_name``, ``file_path``, ``level``, ``row_count``,
        ``min_sequence_number``, ``max_sequence_number`` and ``delete_row_count``."""
        command = _base_command("files", warehouse, identifier)
        command["options"] = {str(k): str(v) for k, v in (options or {}).items()}
        self._steps.append(("files", command, None))
        return len(self._steps) - 1

    def run(self) -> list[Any]:
        """Run the queued steps (then forget them); returns one result per step."""
        steps, self._steps = self._steps, []
        if not steps:
            return []
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            tmp_path = Path(tmp)
            commands = []
            for index, (op, command, data) in enumerate(steps):
                command = dict(command)
                if op == "write":
                    assert data is not None
                    input_path = tmp_path / f"input-{index}.arrows"
                    with pa.OSFile(str(input_path), "wb") as sink, pa.ipc.new_stream(sink, data.schema) as w:
                        w.write_table(data)
                    command["input_path"] = str(input_path)
                elif op == "read":
                    command["output_path"] = str(tmp_path / f"output-{index}.arrows")
                commands.append(command)
            result = _call_child({"op": "batch", "commands": commands}, tmp_path)
            out: list[Any] = []
            for (op, _, _), command, step_result in zip(steps, commands, result["results"], strict=True):
                if op == "read":
                    with pa.OSFile(command["output_path"], "rb") as source:
                        out.append(pa.ipc.open_stream(source).read_all())
                elif op == "write":
                    sid = step_result.get("snapshot_id")
                    out.append(None if sid is None else int(sid))
                elif op == "files":
                    out.append(list(step_result["files"]))
                else:
                    out.append(None)
            return out


_STREAM_CHILD = Path(__file__).with_name("_pypaimon_stream_child.py")


def pypaimon_stream(warehouse: Path, until: int, tmp: Path, consumer_id: str | None = None) -> pa.Table:
    """pypaimon's streaming scan of ``db.t`` (from the consumer's position, if any) up to snapshot
    ``until``, with its row kinds in a ``rowkind`` column."""
    output = tmp / f"stream-{until}-{consumer_id}.arrows"
    command = {
        "warehouse": str(warehouse.resolve()),
        "identifier": "db.t",
        "until": until,
        "consumer_id": consumer_id,
        "output_path": str(output),
    }
    subprocess.run(
        [str(pypaimon_python()), "-I", str(_STREAM_CHILD)],
        input=json.dumps(command),
        text=True,
        capture_output=True,
        check=True,
        timeout=300,
        env=clean_env(),
    )
    with pa.OSFile(str(output), "rb") as source:
        table = pa.ipc.open_stream(source).read_all()
    return table.rename_columns(["rowkind" if n == "_row_kind" else n for n in table.column_names])
