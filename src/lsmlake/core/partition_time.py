"""The time of a partition from its values, as Paimon's PartitionTimeExtractor reads it: `$key` patterns
(`partition.timestamp-pattern`) and Java DateTimeFormatter patterns (`partition.timestamp-formatter`)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from lsmlake.errors import InvalidOptionError

_JAVA_FIELDS = {
    "yyyy": r"(?P<year>\d{4})",
    "uuuu": r"(?P<year>\d{4})",
    "MM": r"(?P<month>\d{2})",
    "dd": r"(?P<day>\d{2})",
    "HH": r"(?P<hour>\d{2})",
    "mm": r"(?P<minute>\d{2})",
    "ss": r"(?P<second>\d{2})",
    "SSS": r"(?P<milli>\d{3})",
}
_DEFAULT = re.compile(
    r"(?P<year>\d{1,10})-(?P<month>\d{1,2})-(?P<day>\d{1,2})"
    r"(?: (?P<hour>\d{1,2}):(?P<minute>\d{1,2}):(?P<second>\d{1,2})(?:\.(?P<frac>\d{1,9}))?)?"
)
"""Paimon's default: ``y-M-d`` with an optional `` H:m:s[.fraction]``."""


def formatter_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a Java DateTimeFormatter pattern made of yyyy, MM, dd, HH, mm, ss, SSS, 'quoted'
    text and punctuation; any other pattern letter is refused (lsmlake could not parse as Java does)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise InvalidOptionError(f"partition.timestamp-formatter {pattern!r}: unterminated quote")
            out.append(re.escape(pattern[i + 1 : end] or "'"))
            i = end + 1
            continue
        if c.isalpha():
            run = len(pattern) - i - len(pattern[i:].lstrip(c))
            token = pattern[i : i + run]
            if token not in _JAVA_FIELDS:
                raise InvalidOptionError(
                    f"partition.timestamp-formatter {pattern!r}: lsmlake reads the fields "
                    f"{', '.join(_JAVA_FIELDS)} only, not {token!r}"
                )
            out.append(_JAVA_FIELDS[token])
            i += run
            continue
        out.append(re.escape(c))
        i += 1
    regex = "".join(out)
    try:
        return re.compile(regex)
    except re.error as e:  # a field given twice
        raise InvalidOptionError(f"partition.timestamp-formatter {pattern!r}: {e}") from None


def check_formatter(key: str, text: str) -> str:
    """The option's parse: the pattern itself, once it is known to be readable."""
    formatter_regex(text)
    return text


def _substitute(pattern: str, keys: Sequence[str], values: Sequence[str]) -> str:
    """``$key`` replaced by the key's value, longer keys first (so ``$dt`` never matches in ``$dt1``)."""
    order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "$":
            hit = next((j for j in order if pattern.startswith(keys[j], i + 1)), None)
            if hit is not None:
                out.append(values[hit])
                i += 1 + len(keys[hit])
                continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def partition_time(
    keys: Sequence[str], values: Sequence[str | None], *, pattern: str | None, formatter: str | None
) -> dt.datetime | None:
    """The local time a partition stands for; None when its values do not parse (or hold a null),
    which Paimon logs and never expires."""
    if any(v is None for v in values):
        return None
    texts = [v for v in values if v is not None]
    text = texts[0] if pattern is None else _substitute(pattern, keys, texts)
    m = (formatter_regex(formatter) if formatter else _DEFAULT).fullmatch(text)
    if m is None or any(m.groupdict().get(f) is None for f in ("year", "month", "day")):
        return None  # Java's LocalDate needs all three
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    frac = g.get("frac", "")
    micro = int((frac + "000000")[:6]) if frac else int(g.get("milli", "0")) * 1000
    try:
        return dt.datetime(
            int(g["year"]),
            int(g["month"]),
            int(g["day"]),
            int(g.get("hour", "0")),
            int(g.get("minute", "0")),
            int(g.get("second", "0")),
            micro,
        )
    except ValueError:
        return None
