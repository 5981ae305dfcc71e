"""Builds the Java Paimon harness jar once (cached under .cache/java-harness) and talks to it over JSON lines."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import fcntl
import hashlib
import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

PROJECT = Path(__file__).resolve().parent
ROOT = PROJECT.parents[1]
CACHE = ROOT / ".cache" / "java-harness"
M2 = ROOT / ".cache" / "m2"  # Maven's local repository: a clean checkout fills it the same way CI does
BUILD_TIMEOUT = 900.0
CALL_TIMEOUT = 180.0
MAIN_CLASS = "lsmlake.harness.Harness"


class JavaError(RuntimeError):
    """Java Paimon answered a command with an exception."""

    def __init__(self, op: str, error: str, trace: str) -> None:
        super().__init__(f"{op}: {error}\n{trace}")
        self.error = error
        self.trace = trace


def stop_jvm(proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    """Ask a JVM that reads JSON commands on stdin to quit; kill it if it has not after ``timeout`` s."""
    if proc.poll() is not None:
        return
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.write('{"op": "quit"}\n')
            proc.stdin.close()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def tools_missing() -> str | None:
    """Why the harness cannot be built here (no java or mvn on PATH), or None."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH"
    return None


def source_key() -> str:
    """A hash of the pom and every source file: the cache key of the built jar."""
    digest = hashlib.sha256()
    files = [PROJECT / "pom.xml", *sorted((PROJECT / "src").rglob("*"))]
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(PROJECT).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _mvn(build_dir: Path, *, offline: bool) -> subprocess.CompletedProcess[str]:
    args = ["mvn", "-B", "-q", f"-Dmaven.repo.local={M2}", f"-Dharness.build.dir={build_dir}"]
    if offline:
        args.append("-o")
    args += ["-f", str(PROJECT / "pom.xml"), "package"]
    return subprocess.run(args, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)


def build_harness() -> str:
    """The harness's Java classpath (jar first), building it if the sources changed. Safe under xdist."""
    key = source_key()
    out = CACHE / key
    classpath_file = out / "classpath.txt"
    if not classpath_file.exists():
        with _file_lock(CACHE / ".lock"):
            if not classpath_file.exists():
                _build_into(out, key)
    return classpath_file.read_text().strip()


def _build_into(out: Path, key: str) -> None:
    build_dir = CACHE / f"build-{key}"
    shutil.rmtree(build_dir, ignore_errors=True)
    # Offline first: once .cache/m2 holds everything, no network is touched.
    result = _mvn(build_dir, offline=True)
    if result.returncode != 0:
        result = _mvn(build_dir, offline=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"building the Java harness failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    staging = CACHE / f"staging-{key}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    jar = staging / "harness.jar"
    shutil.copy(build_dir / "paimon-harness-1.jar", jar)
    deps = (build_dir / "classpath.txt").read_text().strip()
    # The jar's final place (after the rename below) first, then the Maven dependencies in .cache/m2.
    (staging / "classpath.txt").write_text(str(out / "harness.jar") + os.pathsep + deps)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    shutil.rmtree(build_dir, ignore_errors=True)


class JavaPaimon:
    """One long-lived JVM running the harness: each call sends a command line and waits for its answer."""

    def __init__(self, classpath: str, log_path: Path) -> None:
        self._log = log_path.open("w")
        self._proc = subprocess.Popen(
            ["java", "-Xmx1g", "-XX:+UseSerialGC", "-cp", classpath, MAIN_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._log_path = log_path
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        self.version: str = str(self.call("ping")["paimon_version"])

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def call(self, op: str, *, timeout: float = CALL_TIMEOUT, **fields: Any) -> dict[str, Any]:
        """Send one command; its answer, or JavaError. Kills the JVM if no answer comes within timeout."""
        if self._proc.poll() is not None:
            raise RuntimeError(f"the Java harness exited ({self._proc.returncode}): {self._stderr_tail()}")
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"op": op, **fields}, default=_json_default) + "\n")
        self._proc.stdin.flush()
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            self._proc.kill()
            raise TimeoutError(
                f"Java harness: no answer to {op!r} in {timeout}s; {self._stderr_tail()}"
            ) from None
        if line is None:
            raise RuntimeError(f"the Java harness exited during {op!r}: {self._stderr_tail()}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.pop("ok"):
            raise JavaError(op, answer["error"], answer.get("trace", ""))
        return answer

    def _stderr_tail(self) -> str:
        self._log.flush()
        return self._log_path.read_text(errors="replace")[-3000:]

    def close(self) -> None:
        stop_jvm(self._proc)
        self._log.close()

    # ---- the verbs ----

    def create(
        self,
        warehouse: str,
        table: str,
        fields: Sequence[tuple[str, str]],
        *,
        primary_key: Sequence[str] = (),
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
    ) -> None:
        self.call(
            "create",
            warehouse=warehouse,
            table=table,
            fields=[list(f) for f in fields],
            primary_key=list(primary_key),
            partition_keys=list(partition_keys),
            options=dict(options or {}),
        )

    def read(
        self,
        warehouse: str,
        table: str,
        *,
        snapshot: int | None = None,
        options: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows (JSON form) with their row kind under ``_kind``; ``options`` are dynamic (`scan.tag-name`)."""
        rows: list[dict[str, Any]] = self.call(
            "read", warehouse=warehouse, table=table, snapshot=snapshot, options=dict(options or {})
        )["rows"]
        return rows

    def read_equal(
        self, warehouse: str, table: str, column: str, value: str
    ) -> tuple[list[dict[str, Any]], int]:
        """Rows Java reads with the filter ``column = value`` (a string), and the data files its plan kept."""
        answer = self.call("read", warehouse=warehouse, table=table, options={}, equal=[column, value])
        return answer["rows"], int(answer["files"])

    def read_where(
        self, warehouse: str, table: str, where: Sequence[Any]
    ) -> tuple[list[dict[str, Any]], int]:
        """Rows Java reads with the filter ``[column, op, literal...]`` (op: = != < <= > >= in between
        is_null is_not_null; literals in the JSON form ``write`` takes), and the data files its plan kept."""
        answer = self.call("read_where", warehouse=warehouse, table=table, where=list(where))
        return answer["rows"], int(answer["files"])

    def index_eval(self, warehouse: str, table: str, where: Sequence[Any]) -> list[dict[str, Any]]:
        """Per data file of the latest snapshot: Java's FileIndexPredicate verdict on ``where`` (``remain``,
        and ``rows`` when the result is a bitmap of row positions)."""
        files: list[dict[str, Any]] = self.call(
            "index_eval", warehouse=warehouse, table=table, where=list(where)
        )["files"]
        return files

    def write(
        self,
        warehouse: str,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        *,
        options: Mapping[str, str] | None = None,
        overwrite: bool = False,
    ) -> int | None:
        """One BatchWriteBuilder commit of rows (``_kind`` defaults to +I) under dynamic ``options``
        (`write-only`, ...), an overwrite when ``overwrite``; the latest snapshot id after it."""
        sid: int | None = self.call(
            "write",
            warehouse=warehouse,
            table=table,
            rows=list(rows),
            options=dict(options or {}),
            overwrite=overwrite,
        )["snapshot"]
        return sid

    def postpone_batch_write(
        self, warehouse: str, table: str, rows: Sequence[Mapping[str, Any]], *, parallelism: int = 1
    ) -> int | None:
        """A postpone table's batch write as Flink's sink runs it with `postpone.batch-write-fixed-bucket`
        (``parallelism`` writers): rows straight into real buckets; the latest snapshot id after it."""
        sid: int | None = self.call(
            "postpone_batch_write", warehouse=warehouse, table=table, rows=list(rows), parallelism=parallelism
        )["snapshot"]
        return sid

    def compact(self, warehouse: str, table: str, *, full: bool = True) -> int | None:
        """A compaction (full, or each bucket's strategy) of every bucket with live files, one commit; the
        latest snapshot id."""
        sid: int | None = self.call("compact", warehouse=warehouse, table=table, full=full)["snapshot"]
        return sid

    def create_tag(self, warehouse: str, table: str, name: str, snapshot: int | None = None) -> None:
        self.call("tag", warehouse=warehouse, table=table, action="create", name=name, id=snapshot)

    def delete_tag(self, warehouse: str, table: str, name: str) -> None:
        self.call("tag", warehouse=warehouse, table=table, action="delete", name=name)

    def branch(self, warehouse: str, table: str, action: str, name: str, *, tag: str | None = None) -> None:
        """``action``: create (from ``tag``, or empty), delete, fast_forward; the branch is table ``t$branch_<name>``."""
        self.call("branch", warehouse=warehouse, table=table, action=action, name=name, tag=tag)

    def expire(
        self, warehouse: str, table: str, *, retain_min: int = 1, retain_max: int, time_retain_ms: int = 0
    ) -> int:
        """``ExpireSnapshots`` with these limits; how many snapshots it expired."""
        expired: int = self.call(
            "expire",
            warehouse=warehouse,
            table=table,
            retain_min=retain_min,
            retain_max=retain_max,
            time_retain_ms=time_retain_ms,
        )["expired"]
        return expired

    def rollback(
        self, warehouse: str, table: str, *, snapshot: int | None = None, tag: str | None = None
    ) -> int | None:
        """``Table.rollbackTo`` a snapshot or a tag; the latest snapshot id after it."""
        sid: int | None = self.call("rollback", warehouse=warehouse, table=table, id=snapshot, tag=tag)[
            "snapshot"
        ]
        return sid

    def snapshots(self, warehouse: str, table: str) -> tuple[list[int], list[str]]:
        """The snapshot ids Java sees on storage and the tag names."""
        answer = self.call("snapshots", warehouse=warehouse, table=table)
        return [int(i) for i in answer["ids"]], [str(t) for t in answer["tags"]]

    def stream(
        self, warehouse: str, table: str, options: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """A streaming read (``newStreamScan``) under ``options`` (`scan.mode`, `scan.snapshot-id`, ...) until
        caught up: rows with ``_kind`` and ``_snapshot`` (the snapshot each plan came from)."""
        rows: list[dict[str, Any]] = self.call(
            "stream", warehouse=warehouse, table=table, options=dict(options or {})
        )["rows"]
        return rows

    def system(
        self, warehouse: str, table: str, name: str, options: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """A batch read of system table ``name`` (e.g. ``audit_log``) under dynamic ``options``."""
        rows: list[dict[str, Any]] = self.call(
            "system", warehouse=warehouse, table=table, name=name, options=dict(options or {})
        )["rows"]
        return rows

    def alter(self, warehouse: str, table: str, changes: Sequence[Mapping[str, str | None]]) -> None:
        """``Catalog.alterTable``: ``{"add": name, "type": sql}``, ``{"rename": name, "to": new}``, ``{"drop": name}``,
        ``{"default": name, "value": text}`` (``updateColumnDefaultValue``), ``{"set": option, "value": text}``,
        ``{"reset": option}`` (``setOption`` / ``removeOption``)."""
        self.call("alter", warehouse=warehouse, table=table, changes=[dict(c) for c in changes])

    def files(self, warehouse: str, table: str) -> list[dict[str, Any]]:
        """The ``$files`` system table's rows as Java Paimon computes them."""
        rows: list[dict[str, Any]] = self.call("files", warehouse=warehouse, table=table)["rows"]
        return rows


def _json_default(value: object) -> object:
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        return to_micros(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")  # the harness's BYTES form
    raise TypeError(f"cannot send {type(value).__name__} to the Java harness")


def to_micros(value: dt.datetime) -> int:
    """A naive (UTC wall-clock) datetime as epoch microseconds, the harness's timestamp form."""
    delta = value - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def arrow_rows(table: pa.Table) -> list[dict[str, Any]]:
    """An Arrow table's rows in the harness's JSON form (decimal text, ISO dates, timestamps in microseconds)."""
    columns: dict[str, list[Any]] = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        t = col.type
        if pa.types.is_timestamp(t):
            if t.tz is not None:
                col = col.cast(pa.timestamp(t.unit))
            columns[name] = pc.cast(col.cast(pa.timestamp("us")), pa.int64()).to_pylist()
        elif pa.types.is_decimal(t):
            columns[name] = [None if v is None else format(v, "f") for v in col.to_pylist()]
        elif pa.types.is_date(t):
            columns[name] = [None if v is None else v.isoformat() for v in col.to_pylist()]
        else:
            columns[name] = col.to_pylist()
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def java_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Java's batch-read rows without ``_kind``; each must be live (+I, or +U when its last record was one)."""
    kinds = {r["_kind"] for r in rows}
    assert kinds <= {"+I", "+U"}, f"a merged batch read returned row kinds {kinds}"
    return [{k: v for k, v in r.items() if k != "_kind"} for r in rows]


def sort_rows(rows: Sequence[Mapping[str, Any]], key: Sequence[str]) -> list[dict[str, Any]]:
    return sorted((dict(r) for r in rows), key=lambda r: tuple(str(r[k]) for k in key))


def catalog_check(work_dir: Path, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Run CatalogCheck (its own JVM on the harness's classpath: a catalog opened with ``spec["options"]``,
    the tables of ``spec["write"]`` written, those of ``spec["read"]`` read); its JSON answer."""
    spec_file = work_dir / "catalog-check.json"
    spec_file.write_text(json.dumps(spec))
    done = subprocess.run(
        ["java", "-Xmx512m", "-cp", build_harness(), "lsmlake.harness.CatalogCheck", str(spec_file)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise JavaError("CatalogCheck", f"exit {done.returncode}", done.stderr[-4000:])
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def lifecycle(java: JavaPaimon, warehouse: str, table: str, action: str, **fields: Any) -> dict[str, Any]:
    """One table-lifecycle operation as Java Paimon's procedures run it (Lifecycle.java): ``set_option``
    (key, value or None to reset), ``rescale`` (bucket_num, partition), ``consumer`` (sub: get, list,
    reset, delete, clear), ``expire_changelogs``, ``purge``, ``compact_manifest``,
    ``rollback_to_timestamp`` / ``rollback_to_watermark`` (value), ``rename_branch`` (name, to),
    ``mark_done`` (partitions: paths), ``success_file`` (partition: path), ``remove_unexisting``
    (dry_run); its answer."""
    return java.call("lifecycle", warehouse=warehouse, table=table, action=action, **fields)


def core_option_keys() -> dict[str, Any]:
    """The harness's ``CoreOptionKeys`` answer: ``{"paimon_version": ..., "options": [{"field", "key",
    "fallback_keys"}]}`` (CoreOptions' ConfigOption fields by reflection); used by the live test and by
    tools/paimon_option_keys.py, which regenerates the checked-in list."""
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", build_harness(), "lsmlake.harness.CoreOptionKeys"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer
