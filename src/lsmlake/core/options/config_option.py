"""A typed option declaration (key, type, default, fallback keys, description) and Paimon's value parsers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from lsmlake.errors import InvalidOptionError

T = TypeVar("T")

NO_EFFECT = "Accepted; no effect in lsmlake"
"""How the description of an option lsmlake accepts and ignores begins; the reason follows in parentheses."""

_NUMBER_UNIT = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_SIZE_UNITS = {
    **dict.fromkeys(("", "b", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kib"), 1024),
    **dict.fromkeys(("m", "mb", "mib"), 1024**2),
    **dict.fromkeys(("g", "gb", "gib"), 1024**3),
    **dict.fromkeys(("t", "tb"), 1024**4),
}
_DURATION_UNITS = {
    **dict.fromkeys(("", "ms", "milli", "millis"), 1),
    **dict.fromkeys(("s", "sec", "second", "seconds"), 1000),
    **dict.fromkeys(("m", "min", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}


def parse_memory_size(key: str, text: str) -> int:
    """Bytes in a Paimon memory size such as ``128 mb``."""
    m = _NUMBER_UNIT.match(text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise InvalidOptionError(f"option {key!r}: {text!r} is not a memory size (e.g. '128 mb')")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def parse_duration_ms(key: str, text: str) -> int:
    """Milliseconds in a Paimon duration such as ``10 s`` or ``1 h``."""
    m = _NUMBER_UNIT.match(text)
    if not m or m.group(2).lower() not in _DURATION_UNITS:
        raise InvalidOptionError(f"option {key!r}: {text!r} is not a duration (e.g. '10 s')")
    return int(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]


def parse_bool(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r}: expected true or false, got {text!r}")
    return value == "true"


def parse_int(key: str, text: str) -> int:
    if not re.fullmatch(r"\s*-?\d+\s*", text):
        raise InvalidOptionError(f"option {key!r}: {text!r} is not an integer")
    return int(text.strip())


def parse_double(key: str, text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r}: {text!r} is not a number") from None


def parse_string(key: str, text: str) -> str:
    return text


def parse_lower(key: str, text: str) -> str:
    return text.strip().lower()


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One option: its key, how its text parses, its default, the keys read when it is unset, and what it does.

    ``refused`` says why lsmlake refuses the option at create time (Paimon has it, lsmlake cannot honour it).
    """

    key: str
    type_name: str
    parse: Callable[[str, str], T]
    default: T
    default_text: str | None
    description: str
    fallback_keys: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    refused: str | None = None

    def from_text(self, text: str, key: str | None = None) -> T:
        """The typed value of ``text`` (read under ``key``, the option's own key unless a fallback key)."""
        name = key or self.key
        if self.choices and text.strip().lower() not in self.choices:
            raise InvalidOptionError(f"option {name!r}: {text!r} is not one of {', '.join(self.choices)}")
        return self.parse(name, text)


def _option(
    key: str,
    type_name: str,
    parse: Callable[[str, str], T],
    default_text: str | None,
    description: str,
    fallback: tuple[str, ...],
    choices: tuple[str, ...] = (),
    refused: str | None = None,
) -> ConfigOption[T]:
    default = parse(key, default_text) if default_text is not None else None
    return ConfigOption(
        key, type_name, parse, default, default_text, description, fallback, choices, refused  # type: ignore[arg-type]
    )


def bool_option(key: str, default: bool, description: str, *, fallback: tuple[str, ...] = ()) -> ConfigOption[bool]:
    return _option(key, "boolean", parse_bool, str(default).lower(), description, fallback)


def int_option(key: str, default: int, description: str, *, fallback: tuple[str, ...] = ()) -> ConfigOption[int]:
    return _option(key, "integer", parse_int, str(default), description, fallback)


def optional_int(key: str, description: str, *, fallback: tuple[str, ...] = ()) -> ConfigOption[int | None]:
    return _option(key, "integer", parse_int, None, description, fallback)


def double_option(key: str, default: float, description: str) -> ConfigOption[float]:
    return _option(key, "double", parse_double, repr(default), description, ())


def memory_option(key: str, default: str, description: str) -> ConfigOption[int]:
    return _option(key, "memory size", parse_memory_size, default, description, ())


def optional_memory(key: str, description: str) -> ConfigOption[int | None]:
    return _option(key, "memory size", parse_memory_size, None, description, ())


def duration_option(key: str, default: str, description: str) -> ConfigOption[int]:
    """A duration, read as milliseconds."""
    return _option(key, "duration", parse_duration_ms, default, description, ())


def optional_duration(key: str, description: str) -> ConfigOption[int | None]:
    return _option(key, "duration", parse_duration_ms, None, description, ())


def string_option(key: str, default: str, description: str) -> ConfigOption[str]:
    return _option(key, "string", parse_string, default, description, ())


def optional_string(key: str, description: str, *, fallback: tuple[str, ...] = ()) -> ConfigOption[str | None]:
    return _option(key, "string", parse_string, None, description, fallback)


def enum_option(
    key: str, default: str, choices: tuple[str, ...], description: str, *, fallback: tuple[str, ...] = ()
) -> ConfigOption[str]:
    """One of ``choices``, read lower-cased."""
    return _option(key, "enum", parse_lower, default, description, fallback, choices)


def lower_option(key: str, default: str, description: str) -> ConfigOption[str]:
    """A name read lower-cased whose values are checked at create time with their own messages."""
    return _option(key, "string", parse_lower, default, description, ())


def refused_option(key: str, type_name: str, reason: str) -> ConfigOption[str | None]:
    """An option Paimon has and lsmlake cannot honour yet: refused at create time with ``reason``."""
    return _option(key, type_name, parse_string, None, reason, (), (), reason)
