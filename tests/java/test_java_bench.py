"""Java Paimon as a system of ``python -m bench``: at tiny size, every Java result equals lsmlake's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from java_harness import tools_missing  # noqa: E402

from bench.__main__ import PAIRED_FULL_READ, Bench, verify  # noqa: E402
from bench.java_system import NAME  # noqa: E402


def test_without_java_the_bench_runs_the_other_systems_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    bench = Bench(2000, 1, 1, ["lsmlake", NAME], tmp_path)
    assert bench.java is None
    assert f"({NAME} skipped: java is not on PATH)" in capsys.readouterr().out


@pytest.mark.java
@pytest.mark.slow  # a JVM warmed up for every scenario: ~30-45 s
def test_java_system_runs_every_scenario_with_lsmlakes_results(tmp_path: Path) -> None:
    missing = tools_missing()
    if missing:
        pytest.skip(f"Java Paimon harness: {missing}")
    bench = Bench(3000, 1, 1, ["lsmlake", NAME], tmp_path)
    assert bench.java is not None
    bench.run()
    assert verify(bench.rows) == []
    java = [r for r in bench.rows if r.system.startswith(NAME)]
    timed = {r.scenario for r in java if r.seconds and all(s > 0 for s in r.seconds)}
    # every scenario lsmlake runs but the lsmlake-only pairing of 5a with a full read, and the point
    # lookups (7a-7c: table.lookup against filtered reads; the Java harness has no lookup step)
    lsmlake_scenarios = {
        r.scenario for r in bench.rows if r.system.startswith("lsmlake") and not r.scenario.startswith("7")
    }
    assert timed == lsmlake_scenarios - {PAIRED_FULL_READ}
    checked = [(r.scenario, r.check) for r in java if r.check is not None]
    # 3, 4, 6 once; 5a and 5b on the merge-on-read and the deletion-vector table
    assert len(checked) == 7
    for scenario, check in checked:
        lsm = [x.check for x in bench.rows if x.scenario == scenario and x.system.startswith("lsmlake")]
        assert lsm and all(c == check for c in lsm), (scenario, check, lsm)
        assert check["rows"] > 0
