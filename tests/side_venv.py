"""Helpers shared by the test oracles that run in venvs of their own (pypaimon, pyspark): a lock across
pytest-xdist workers, an environment free of this venv's settings, and a checked subprocess run."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

_VENV_SETTINGS = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive fcntl lock on ``path`` (created if missing): serialises pytest-xdist workers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def clean_env(drop: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment without the variables that would leak its venv into another one."""
    removed = {*_VENV_SETTINGS, *drop}
    env = {k: v for k, v in os.environ.items() if k not in removed}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def run_checked(
    args: Sequence[str],
    *,
    timeout: float,
    what: str,
    stdin: str | None = None,
    error: type[Exception] = RuntimeError,
    drop_env: Iterable[str] = (),
) -> str:
    """Run ``args`` in a clean environment; its stdout, or ``error`` naming ``what`` with stderr's tail."""
    try:
        proc = subprocess.run(
            list(args),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=clean_env(drop_env),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise error(f"{what} timed out after {timeout:.0f}s: {' '.join(args)}") from exc
    if proc.returncode != 0:
        raise error(
            f"{what} failed (exit {proc.returncode}): {' '.join(args)}\n"
            f"--- stderr ---\n{proc.stderr[-6000:]}\n--- stdout ---\n{proc.stdout[-4000:]}"
        )
    return proc.stdout
