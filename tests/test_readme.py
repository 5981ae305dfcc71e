"""The user docs' examples run as written: ```python blocks in order in one namespace per document (in a
fresh directory), ```sh blocks of lsmlake commands through bash, and every ``make`` / ``pip install`` line
names a Makefile target or a pyproject extra that exists."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lsmlake.cli.main import EXIT_CODES_HELP

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
_IDS = {doc: str(doc.relative_to(ROOT)) for doc in DOCS}
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.S | re.M)
INLINE = re.compile(r"`((?:make|pip install) [^`]+)`")


def blocks(doc: Path) -> list[tuple[str, str]]:
    """The fenced code blocks of a markdown file: (language, code)."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(doc.read_text())]


def _commands(code: str) -> list[str]:
    """The lines of a shell block without comments and blank lines."""
    lines = (line.split("#", 1)[0].strip() for line in code.splitlines())
    return [line for line in lines if line]


def _kind(lang: str, code: str) -> str:
    if lang == "python":
        return "python"
    first = {c.split()[0] for c in _commands(code)} if lang == "sh" else set()
    if first and code.lstrip().startswith("lsmlake "):
        return "cli"
    if first and first <= {"make", "pip"}:
        return "setup"
    return "unknown"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: _IDS[d])
def test_every_block_is_checked(doc: Path) -> None:
    found = blocks(doc)
    assert found or doc.parent != ROOT, f"{doc.name} has no code blocks"  # docs/ pages may be prose only
    unknown = [code[:60] for lang, code in found if _kind(lang, code) == "unknown"]
    assert not unknown, f"blocks this test neither runs nor checks (python, lsmlake or make/pip sh): {unknown}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: _IDS[d])
def test_python_blocks_run_in_order(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for i, (lang, code) in enumerate(blocks(doc)):
        if _kind(lang, code) == "python":
            exec(compile(code, f"{doc.name}, code block {i + 1}", "exec"), namespace)


def _lsmlake_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``lsmlake`` runs this interpreter's lsmlake (the code under test)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "lsmlake"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m lsmlake "$@"\n')
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: _IDS[d])
def test_command_blocks_run(doc: Path, tmp_path: Path) -> None:
    env = _lsmlake_on_path(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    for lang, code in blocks(doc):
        if _kind(lang, code) != "cli":
            continue
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", code],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, f"{code}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        assert "error:" not in proc.stderr


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {m.group(1) for m in re.finditer(r"^([A-Za-z][\w-]*):", text, re.M)}


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def _setup_lines(doc: Path) -> list[str]:
    lines = [c for lang, code in blocks(doc) if _kind(lang, code) == "setup" for c in _commands(code)]
    return lines + INLINE.findall(doc.read_text())


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: _IDS[d])
def test_setup_lines_name_targets_and_extras_that_exist(doc: Path) -> None:
    targets, extras = _make_targets(), _extras()
    for line in _setup_lines(doc):
        words = shlex.split(line)
        if words[0] == "make":
            assert set(words[1:]) <= targets, f"{line!r}: the Makefile has no such target"
            continue
        for spec in words[2:]:
            match = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", spec)
            assert match, f"{line!r}: lsmlake is not on a package index; install the checkout ('.')"
            named = set(filter(None, (match.group(1) or "").split(",")))
            assert named <= extras, f"{line!r}: pyproject.toml has no extra {named - extras}"


def test_readme_lists_the_exit_codes_of_the_cli() -> None:
    documented = re.findall(r"^\| (\d+) \| (.+?) \|$", (ROOT / "README.md").read_text(), re.M)
    in_help = re.findall(r"^ {2}(\d+) +(.+)$", EXIT_CODES_HELP, re.M)
    assert documented and documented == in_help
