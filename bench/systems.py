"""The systems under test: lsmlake in this process, pypaimon (pure Python or Rust) in its own venv."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import lsmlake

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "interop"))
from pypaimon_env import pypaimon_python  # noqa: E402

CHILD = Path(__file__).resolve().with_name("pypaimon_child.py")


def checksum(table: pa.Table) -> dict[str, Any]:
    """Row count and sums that must agree across systems for the same logical result."""
    return {
        "rows": table.num_rows,
        "id_sum": int(pc.sum(table.column("id")).as_py() or 0),
        "amount_sum": round(float(pc.sum(table.column("amount")).as_py() or 0.0), 3),
    }


def save_ipc(table: pa.Table, path: Path) -> str:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)
    return str(path)


@dataclass
class PypaimonSystem:
    """pypaimon 2.1.0 driven through a child process; ``native`` switches on its Rust backend.

    Every timed step is the child's second run of it (see ``pypaimon_child``): a fresh process would
    otherwise charge pypaimon its first-use costs, which lsmlake pays once per bench."""

    native: bool

    @property
    def name(self) -> str:
        return "pypaimon-rust" if self.native else "pypaimon"

    def _run(self, command: dict[str, Any]) -> dict[str, Any]:
        python = pypaimon_python(extras=("pypaimon-rust",) if self.native else ())
        command = {**command, "native": self.native, "warmup": True}
        out = subprocess.run(
            [str(python), "-I", str(CHILD), json.dumps(command)],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if out.returncode != 0:
            raise RuntimeError(f"{self.name} failed: {out.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        return result

    def write(self, warehouse: Path, data_file: str) -> float:
        return float(self._run({"op": "write", "warehouse": str(warehouse), "data": data_file})["seconds"])

    def upserts(self, warehouse: Path, files: list[str]) -> float:
        return float(
            self._run({"op": "upserts", "warehouse": str(warehouse), "data_files": files})["seconds"]
        )

    def read(self, warehouse: Path, flt: list[Any] | None = None) -> tuple[float, dict[str, Any]]:
        r = self._run({"op": "read", "warehouse": str(warehouse), "filter": flt})
        return float(r.pop("seconds")), r

    def point_reads(self, warehouse: Path, keys: list[int]) -> tuple[list[float], dict[str, Any]]:
        """Seconds of one warm ``id = k`` read per key, and the checksum of all their rows."""
        r = self._run({"op": "point_reads", "warehouse": str(warehouse), "keys": keys})
        return [float(s) for s in r.pop("seconds")], r


class LsmlakeSystem:
    """lsmlake in this process."""

    name = "lsmlake"

    @staticmethod
    def create(warehouse: Path, schema: pa.Schema, *, dv: bool) -> lsmlake.Table:
        cat = lsmlake.Catalog(str(warehouse))
        cat.create_database("db", exist_ok=True)
        options = {"bucket": "4", "deletion-vectors.enabled": str(dv).lower()}
        if not dv:
            options["write-only"] = "true"  # like pypaimon: level 0 only, merge on read
        table = cat.create_table("db.t", schema=schema, primary_key=["id"], options=options)
        assert isinstance(table, lsmlake.Table)
        return table

    @staticmethod
    def timed(fn: Any, warmup: Any = None) -> tuple[float, Any]:
        """Seconds of ``fn()`` and its result; ``warmup()`` runs first, untimed, as pypaimon's child
        does before each of its timed steps (a step right after a child process runs colder)."""
        if warmup is not None:
            warmup()
        start = time.perf_counter()
        result = fn()
        return time.perf_counter() - start, result
