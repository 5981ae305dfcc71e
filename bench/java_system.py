"""Java Paimon as a bench system: the test suite's Maven-built harness jar, its BenchDriver in one warm JVM."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
HARNESS_MODULE = REPO / "tests" / "java" / "java_harness.py"
MAIN_CLASS = "lsmlake.harness.BenchDriver"
JVM_FLAGS = ("-Xmx3g",)
WARMUP_ROWS = 50_000
NAME = "java-paimon"


def java_harness() -> ModuleType:
    """tests/java/java_harness.py, loaded by path: one copy of the build logic for the tests and the bench."""
    module = sys.modules.get("java_harness")
    if module is None:
        spec = importlib.util.spec_from_file_location("java_harness", HARNESS_MODULE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["java_harness"] = module
        spec.loader.exec_module(module)
    return module


def save_columns(table: pa.Table, directory: Path) -> str:
    """The bench's columns as little-endian files for BenchDriver (strings: int32 offsets plus UTF-8 bytes)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, suffix, dtype in (
        ("id", "i64", "<i8"),
        ("amount", "f64", "<f8"),
        ("qty", "i32", "<i4"),
        ("ts", "i64", "<i8"),
    ):
        table.column(name).to_numpy().astype(dtype, copy=False).tofile(directory / f"{name}.{suffix}")
    names = table.column("name").combine_chunks().cast(pa.string())
    _, offsets_buf, data_buf = names.buffers()
    assert offsets_buf is not None and data_buf is not None
    offsets = np.frombuffer(offsets_buf, dtype="<i4")[names.offset : names.offset + len(names) + 1]
    offsets.tofile(directory / "name.off")
    (directory / "name.bin").write_bytes(data_buf.to_pybytes())
    return str(directory)


def java_check(answer: dict[str, Any]) -> dict[str, Any]:
    """Java's checksum in the form of ``bench.systems.checksum`` (amount rounded the same way)."""
    return {
        "rows": int(answer["rows"]),
        "id_sum": int(answer["id_sum"]),
        "amount_sum": round(float(answer["amount_sum"]), 3),
    }


class JavaSystem:
    """One JVM running BenchDriver: the bench's data loaded once, every scenario warmed up before timing."""

    name = NAME

    def __init__(self, classpath: str, work: Path) -> None:
        self.work = work
        self.scratch = str(work / "java-scratch")
        self._log_path = work / "java-bench.log"
        self._log = self._log_path.open("w")
        self._proc = subprocess.Popen(
            ["java", *JVM_FLAGS, "-cp", classpath, MAIN_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.version = "unknown"

    @classmethod
    def start(cls, work: Path, datasets: dict[str, pa.Table], filters: list[list[Any]]) -> JavaSystem | None:
        """The warmed-up system, or None (with the reason printed) when java or mvn is missing or the build fails."""
        harness = java_harness()
        missing: str | None = harness.tools_missing()
        if missing:
            print(f"({NAME} skipped: {missing})")
            return None
        try:
            classpath: str = harness.build_harness()
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"({NAME} skipped: the harness jar did not build: {str(e)[:2000]})")
            return None
        system = cls(classpath, work)
        for name, table in datasets.items():
            answer = system.call("load", name=name, dir=save_columns(table, work / "java-data" / name))
            system.version = str(answer.get("paimon_version"))
        system.call(
            "warmup",
            work=str(work / "java-warmup"),
            rows=WARMUP_ROWS,
            datasets=list(datasets),
            filters=filters,
        )
        return system

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one command and wait for its answer; a Java failure raises with the JVM's log tail."""
        if self._proc.poll() is not None or self._proc.stdin is None or self._proc.stdout is None:
            raise RuntimeError(f"{NAME}: the JVM exited: {self._tail()}")
        self._proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{NAME}: the JVM exited during {op!r}: {self._tail()}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.pop("ok"):
            raise RuntimeError(f"{NAME}: {answer['error']}\n{self._tail()}")
        return answer

    def _tail(self) -> str:
        self._log.flush()
        return self._log_path.read_text(errors="replace")[-3000:]

    def write(self, warehouse: Path, datasets: list[str], *, dv: bool = False) -> float:
        """Seconds of one commit per data set into ``warehouse``'s table (created if absent)."""
        answer = self.call("write", warehouse=str(warehouse), dv=dv, datasets=datasets, scratch=self.scratch)
        return float(answer["seconds"])

    def read(self, warehouse: Path, flt: list[Any] | None = None) -> tuple[float, dict[str, Any]]:
        answer = self.call("read", warehouse=str(warehouse), filter=flt)
        return float(answer["seconds"]), java_check(answer)

    def compact(self, warehouse: Path, first_dataset: str) -> tuple[float, dict[str, Any]]:
        """Seconds of a full compaction of every bucket, and the checksum of a read after it."""
        answer = self.call(
            "compact", warehouse=str(warehouse), datasets=[first_dataset], scratch=self.scratch
        )
        if answer["commit_kind"] != "COMPACT":
            raise RuntimeError(f"{NAME}: the compaction committed {answer['commit_kind']}, not COMPACT")
        return float(answer["seconds"]), java_check(answer["check"])

    def close(self) -> None:
        java_harness().stop_jvm(self._proc)
        self._log.close()
