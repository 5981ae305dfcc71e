"""Live Java Paimon lists its CoreOptions keys: the checked-in list equals it, so no key can appear in Paimon
without a status in lsmlake's registry (tests/core/test_option_status.py holds every listed key has one)."""

from __future__ import annotations

from typing import Any

import pytest
from java_harness import core_option_keys, tools_missing

from lsmlake.core.options.paimon_keys import PAIMON_CORE_OPTIONS, PAIMON_VERSION
from lsmlake.core.options.status import option_status

REGENERATE = "regenerate src/lsmlake/core/options/paimon_keys.py with tools/paimon_option_keys.py"


@pytest.fixture(scope="module")
def java_options() -> dict[str, Any]:
    missing = tools_missing()
    if missing:
        pytest.skip(f"Java Paimon harness: {missing}")
    return core_option_keys()


def test_checked_in_keys_equal_the_live_paimon_core_options(java_options: dict[str, Any]) -> None:
    assert java_options["paimon_version"] == PAIMON_VERSION, REGENERATE
    live = {o["key"]: tuple(o["fallback_keys"]) for o in java_options["options"]}
    assert len(live) > 250  # reflection found CoreOptions' fields, not an empty class
    assert sorted(set(live) - set(PAIMON_CORE_OPTIONS)) == [], f"new in Paimon: {REGENERATE}"
    assert sorted(set(PAIMON_CORE_OPTIONS) - set(live)) == [], f"gone from Paimon: {REGENERATE}"
    assert live == PAIMON_CORE_OPTIONS, f"fallback keys changed: {REGENERATE}"


def test_every_live_paimon_key_has_a_status_in_lsmlake(java_options: dict[str, Any]) -> None:
    without = [o["key"] for o in java_options["options"] if option_status(o["key"]) is None]
    assert not without, f"Paimon keys lsmlake's registry neither declares nor refuses: {without}"
