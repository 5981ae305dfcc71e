"""Spark SQL with Paimon's Spark runtime jar: a pyspark venv and the jar cached under .cache, run as a subprocess."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.side_venv import file_lock, run_checked

#: Maven Central serves Paimon's Spark runtime only up to 0.9.0 (``paimon-spark-3.5``); the 1.x/2.x
#: names (``paimon-spark-3.5_2.12``, ``paimon-spark-4.0_2.13``) are not served. 0.9.0 is built on Spark 3.5.2.
PAIMON_SPARK_VERSION = "0.9.0"
PAIMON_SPARK_ARTIFACT = "paimon-spark-3.5"
PYSPARK_VERSION = "3.5.2"
PYSPARK_SPEC = f"pyspark=={PYSPARK_VERSION}"

ROOT = Path(__file__).resolve().parents[2]
#: Override the locations with ``LSMLAKE_SPARK_VENV`` / ``LSMLAKE_SPARK_JARS`` (e.g. a shared CI cache).
VENV_DIR = Path(os.environ.get("LSMLAKE_SPARK_VENV", ROOT / ".cache" / "spark-venv"))
JAR_DIR = Path(os.environ.get("LSMLAKE_SPARK_JARS", ROOT / ".cache" / "paimon-spark"))
CHILD_SCRIPT = Path(__file__).resolve().with_name("_spark_child.py")
_MAVEN = "https://repo1.maven.org/maven2/org/apache/paimon"
_MARKER = ".lsmlake-installed.json"
_PIP_TIMEOUT_S = 1800.0
_CHILD_TIMEOUT_S = 600.0
_process_lock = threading.Lock()
_ready: tuple[Path, Path] | None = None


class SparkError(RuntimeError):
    """The Spark child process failed (its stderr tail is in the message)."""


def _run(args: Sequence[str], *, timeout: float, what: str, stdin: str | None = None) -> str:
    return run_checked(
        args, timeout=timeout, what=what, stdin=stdin, error=SparkError, drop_env=("SPARK_HOME",)
    )


def tools_missing() -> str | None:
    """Why Spark cannot run here (no ``java`` on PATH), or None."""
    return None if shutil.which("java") else "java is not on PATH"


def _venv_ok(venv: Path) -> bool:
    try:
        marker = json.loads((venv / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(marker, dict) and marker.get("spec") == PYSPARK_SPEC and (venv / "bin" / "python").exists()
    )


def _build_venv(venv: Path) -> None:
    """A fresh venv with the pinned pyspark; the marker is written last, so a half-built one is rebuilt."""
    if venv.exists():
        shutil.rmtree(venv)
    _run([sys.executable, "-m", "venv", str(venv)], timeout=600, what="python -m venv")
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    _run([*pip, PYSPARK_SPEC], timeout=_PIP_TIMEOUT_S, what=f"pip install {PYSPARK_SPEC}")
    _run([python, "-I", "-c", "import pyspark"], timeout=120, what="import pyspark")
    (venv / _MARKER).write_text(json.dumps({"spec": PYSPARK_SPEC}), encoding="utf-8")


def jar_name() -> str:
    return f"{PAIMON_SPARK_ARTIFACT}-{PAIMON_SPARK_VERSION}.jar"


def _download_jar(target: Path) -> None:
    """Fetch the runtime jar from Maven Central and check it against the published SHA-1."""
    url = f"{_MAVEN}/{PAIMON_SPARK_ARTIFACT}/{PAIMON_SPARK_VERSION}/{jar_name()}"
    with urllib.request.urlopen(url + ".sha1", timeout=60) as response:
        expected = response.read().decode("ascii").split()[0].strip().lower()
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1()  # Maven Central publishes SHA-1 checksums
    with (
        tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp,
        urllib.request.urlopen(url, timeout=600) as response,
    ):
        for chunk in iter(lambda: response.read(1 << 20), b""):
            digest.update(chunk)
            tmp.write(chunk)
    if digest.hexdigest() != expected:
        os.unlink(tmp.name)
        raise SparkError(f"{url}: SHA-1 {digest.hexdigest()} does not match the published {expected}")
    os.replace(tmp.name, target)


def spark_environment() -> tuple[Path, Path]:
    """(python of the Spark venv, Paimon Spark jar), built once and cached; safe under pytest-xdist."""
    global _ready
    with _process_lock:
        if _ready is None:
            with file_lock(VENV_DIR.with_name(VENV_DIR.name + ".lock")):
                if not _venv_ok(VENV_DIR):
                    _build_venv(VENV_DIR)
                jar = JAR_DIR / jar_name()
                if not jar.is_file():
                    _download_jar(jar)
            _ready = (VENV_DIR / "bin" / "python", jar)
        return _ready


def run_spark_sql(catalogs: Mapping[str, Path], statements: Sequence[str]) -> list[dict[str, Any]]:
    """Run ``statements`` in order in one local Spark session (one thread) with a Paimon catalog per
    ``catalogs`` entry (name -> warehouse; the first is the current catalog, so ``default.t`` names a
    table in it). One answer per statement: ``{"sql", "columns", "rows", "seconds"}``, rows as lists of JSON
    values (nested rows as objects, anything else as text)."""
    if not catalogs:
        raise ValueError("run_spark_sql needs at least one catalog")
    python, jar = spark_environment()
    with tempfile.TemporaryDirectory(prefix="spark-") as tmp:
        result = Path(tmp) / "result.json"
        command = {
            "catalogs": {name: str(Path(path).resolve()) for name, path in catalogs.items()},
            "jar": str(jar),
            "statements": list(statements),
            "result_path": str(result),
            "scratch": tmp,
        }
        _run(
            [str(python), "-I", str(CHILD_SCRIPT)],
            stdin=json.dumps(command),
            timeout=_CHILD_TIMEOUT_S,
            what="spark",
        )
        answers = json.loads(result.read_text(encoding="utf-8"))
    if not isinstance(answers, list):
        raise SparkError(f"the Spark child returned {answers!r}")
    return answers


def spark_versions() -> dict[str, str]:
    """The pinned versions, for reports."""
    return {"pyspark": PYSPARK_VERSION, "paimon-spark": f"{PAIMON_SPARK_ARTIFACT} {PAIMON_SPARK_VERSION}"}
