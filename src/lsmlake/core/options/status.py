"""What lsmlake does with each option: honoured, accepted with no effect (and why), or refused (and why)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsmlake.core.options.config_option import NO_EFFECT, ConfigOption
from lsmlake.core.options.paimon_keys import PAIMON_CORE_OPTIONS
from lsmlake.core.options.registry import BY_KEY
from lsmlake.core.options.validation import is_known_option, refusal

HONOURED = "honoured"
NO_EFFECT_STATUS = "accepted, no effect"
REFUSED = "refused"
_REFUSED_MARK = "not supported by lsmlake: "


@dataclass(frozen=True)
class OptionStatus:
    """One key's status; ``reason`` says why an option has no effect or is refused (None when honoured)."""

    key: str
    status: str
    reason: str | None
    declared: ConfigOption[Any] | None
    in_paimon: bool


def _no_effect_reason(description: str) -> str:
    """The reason in ``Accepted; no effect in lsmlake (reason).``; empty when there is none."""
    rest = description[len(NO_EFFECT) :].strip().removesuffix(".").strip()
    return rest[1:-1].strip() if rest.startswith("(") and rest.endswith(")") else rest


def option_status(key: str) -> OptionStatus | None:
    """The status of ``key`` (a declared key or one of Paimon's), or None when lsmlake knows nothing of it
    (an unknown option, refused at create time as unknown)."""
    declared = BY_KEY.get(key)
    in_paimon = key in PAIMON_CORE_OPTIONS
    refused = refusal(key, "")
    if refused is not None:
        reason = refused.split(_REFUSED_MARK, 1)[-1]
        return OptionStatus(key, REFUSED, reason, declared, in_paimon)
    if declared is None:
        # a per-column or file-index option, read where its feature lives
        return OptionStatus(key, HONOURED, None, None, in_paimon) if is_known_option(key) else None
    if declared.description.startswith(NO_EFFECT):
        return OptionStatus(key, NO_EFFECT_STATUS, _no_effect_reason(declared.description), declared, in_paimon)
    return OptionStatus(key, HONOURED, None, declared, in_paimon)


def all_statuses() -> dict[str, OptionStatus | None]:
    """Every key of Paimon's CoreOptions and every declared key, sorted, with its status (None for a Paimon
    key lsmlake knows nothing of, which tests/core/test_option_status.py refuses)."""
    return {k: option_status(k) for k in sorted({*PAIMON_CORE_OPTIONS, *BY_KEY})}
