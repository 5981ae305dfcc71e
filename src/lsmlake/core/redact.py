"""Secrets kept out of messages and reprs: option values of tokens, passwords, secrets and HTTP headers."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "******"
# 'key' = 'value' as SQL's WITH (...) and SET spell it (key in single, double or back quotes); an
# unterminated value (a statement cut short) is masked to its end
_PAIR = re.compile(
    r"""(?P<q>['"`])(?P<key>(?:(?!(?P=q)).)*)(?P=q)(?P<eq>\s*=\s*)'(?P<value>(?:''|[^'])*)(?:'|$)""",
    re.DOTALL,
)
# a cheap test first: most statements (a large INSERT) name no secret option at all
_HINTS = ("token", "secret", "password", "header.")
_KEY_EQ = re.compile(r"""(?P<q>['"`])(?P<key>(?:(?!(?P=q)).)*)(?P=q)\s*=\s*$""", re.DOTALL)


def _maybe_secret(text: str) -> bool:
    lower = text.lower()
    return any(h in lower for h in _HINTS)


def is_secret(key: str) -> bool:
    """Whether an option's value must not be shown: ``token`` (any ``*.token`` or ``*-token`` too),
    keys containing ``secret`` or ``password``, and ``header.*`` (HTTP headers carry credentials)."""
    k = key.strip().lower()
    return (
        k == "token"
        or k.endswith((".token", "-token"))
        or "secret" in k
        or "password" in k
        or k.startswith("header.")
    )


def redact_options(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` with secret values masked."""
    return {k: MASK if is_secret(k) else v for k, v in options.items()}


def redact_sql(text: str) -> str:
    """SQL text with the values of secret ``'key' = 'value'`` pairs masked."""

    def mask(m: re.Match[str]) -> str:
        if not is_secret(m.group("key")):
            return m.group(0)
        return f"{m.group('q')}{m.group('key')}{m.group('q')}{m.group('eq')}'{MASK}'"

    return _PAIR.sub(mask, text) if _maybe_secret(text) else text


def secret_values(text: str) -> list[str]:
    """The values of secret ``'key' = 'value'`` pairs in SQL text (to mask wherever they are quoted)."""
    if not _maybe_secret(text):
        return []
    found = [m.group("value").replace("''", "'") for m in _PAIR.finditer(text) if is_secret(m.group("key"))]
    return sorted({v for v in found if v}, key=len, reverse=True)


def mask_values(message: str, values: list[str]) -> str:
    """``message`` with every occurrence of ``values`` masked."""
    for value in values:
        message = message.replace(value, MASK)
    return message


def follows_secret_key(text: str) -> bool:
    """Whether ``text`` ends with a secret ``'key' =`` (what comes next is its value)."""
    m = _KEY_EQ.search(text)
    return m is not None and is_secret(m.group("key"))
