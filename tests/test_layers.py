"""The package's layers hold: import-linter's contracts (pyproject.toml) are kept, no import cycles
(tools/import_graph.py), and the only imports of lsmlake modules by name or inside a function are the
deliberate lazy loads."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "lsmlake"

# Loads by name that keep start-up light, and nothing else: the root package's lazy public API
# (lsmlake.Catalog, ...) and the command line's lazy group (`lsmlake --help` loads no command). The
# compaction executors load as entry points (pyproject.toml), with no module name in the code.
LAZY_LOADERS = {"lsmlake", "lsmlake.cli.main"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_import_linter_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    assert lint_imports.exists(), "import-linter is in the dev extra: make install"
    proc = _run(str(lint_imports), "--no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"Contracts: (\d+) kept, 0 broken", proc.stdout), proc.stdout


def test_no_import_cycles() -> None:
    proc = _run(sys.executable, str(ROOT / "tools" / "import_graph.py"), str(PACKAGE), "--local")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": 0 cycle(s)") == 3, proc.stdout


def test_only_the_lazy_loaders_import_inside_functions() -> None:
    proc = _run(sys.executable, str(ROOT / "tools" / "import_graph.py"), str(PACKAGE), "--local")
    local = re.findall(r"^LOCAL\s+([\w.]+):(\d+) -> ([\w.]+)$", proc.stdout, re.M)
    assert local, proc.stdout  # the lazy loaders' own loads are found
    stray = [f"{src}:{line} -> {dst}" for src, line, dst in local if src not in LAZY_LOADERS]
    assert not stray, (
        "function-local imports of lsmlake modules (import at module level instead):\n" + "\n".join(stray)
    )
