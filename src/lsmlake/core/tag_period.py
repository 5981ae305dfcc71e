"""Automatic tags' periods and names, as Paimon's TagPeriodHandler: a tag per day, hour, two hours or
`tag.creation-period-duration`, named by the period's start ('2024-01-02', '2024-01-02 10', ...)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lsmlake.errors import InvalidOptionError

_DAY_MS, _HOUR_MS = 86_400_000, 3_600_000
_EPOCH = dt.datetime(1970, 1, 1)
PERIODS = {"daily": _DAY_MS, "hourly": _HOUR_MS, "two-hours": 2 * _HOUR_MS}
FORMATTERS = ("with_dashes", "without_dashes", "without_dashes_and_spaces")

# Java DateTimeFormatter layouts (fixed-width fields, strict resolution) as regex + strftime pairs
_DAY = (r"(\d{4})-(\d{2})-(\d{2})", "%Y-%m-%d")
_DAY_NO_DASH = (r"(\d{4})(\d{2})(\d{2})", "%Y%m%d")
_HOUR = (r"(\d{4})-(\d{2})-(\d{2}) (\d{2})", "%Y-%m-%d %H")
_HOUR_NO_DASH = (r"(\d{4})(\d{2})(\d{2}) (\d{2})", "%Y%m%d %H")
_HOUR_COMPACT = (r"(\d{4})(\d{2})(\d{2})(\d{2})", "%Y%m%d%H")
_MINUTE = (r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})", "%Y%m%d%H%M")


def _java_millis(moment: dt.datetime) -> int:
    """Paimon's Timestamp.fromLocalDateTime(...).getMillisecond(): the wall clock read as if UTC."""
    return (moment - _EPOCH) // dt.timedelta(milliseconds=1)


def _from_java_millis(millis: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(milliseconds=millis)


@dataclass(frozen=True)
class TagPeriod:
    """One period's length and the layout of its tag names."""

    period_ms: int
    layout: tuple[str, str]
    daily: bool = False
    """Daily names are read from their first word, as Java's daily handler does ('2024-01-02 10' too)."""

    def tag_to_time(self, name: str) -> dt.datetime | None:
        """The period start a tag name stands for; None when it is not an automatic tag's name."""
        text = name.split(" ")[0] if self.daily else name
        match = re.fullmatch(self.layout[0], text, flags=re.ASCII)
        if match is None:
            return None
        try:
            parts = [int(g) for g in match.groups()] + [0, 0]
            return dt.datetime(parts[0], parts[1], parts[2], parts[3], parts[4])
        except ValueError:
            return None  # e.g. Feb 30 or hour 24: Java's strict resolver refuses them

    def is_auto_tag(self, name: str) -> bool:
        return self.tag_to_time(name) is not None

    def time_to_tag(self, moment: dt.datetime) -> str:
        return moment.strftime(self.layout[1])

    def normalize_to_previous_tag(self, moment: dt.datetime) -> dt.datetime:
        """The start of the period before the one ``moment`` falls in (truncating as Java's long division)."""
        millis = _java_millis(moment)
        quotient = abs(millis) // self.period_ms * (1 if millis >= 0 else -1)
        return _from_java_millis(quotient * self.period_ms - self.period_ms)

    def next_tag_time(self, moment: dt.datetime) -> dt.datetime:
        return moment + dt.timedelta(milliseconds=self.period_ms)


def tag_period(period: str, formatter: str, duration_ms: int | None) -> TagPeriod:
    """The handler for `tag.creation-period` / `tag.period-formatter` (`tag.creation-period-duration` wins)."""
    if duration_ms is not None:
        if duration_ms <= 0:
            raise InvalidOptionError(f"tag.creation-period-duration must be positive, got {duration_ms} ms")
        return TagPeriod(duration_ms, _MINUTE)
    if period == "daily":
        return TagPeriod(_DAY_MS, _DAY if formatter == "with_dashes" else _DAY_NO_DASH, daily=True)
    if period == "hourly":
        layouts = {"with_dashes": _HOUR, "without_dashes": _HOUR_NO_DASH}
        return TagPeriod(_HOUR_MS, layouts.get(formatter, _HOUR_COMPACT))
    if period == "two-hours":
        return TagPeriod(2 * _HOUR_MS, _HOUR)
    raise InvalidOptionError(f"tag.creation-period {period!r} is not one of {', '.join(PERIODS)}")


_OFFSET = re.compile(r"(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?")


def zone(name: str, *, key: str) -> dt.tzinfo:
    """A Java ZoneId: a region ('Asia/Shanghai'), 'UTC'/'Z', or an offset ('GMT-08:00', '+08:00')."""
    text = name.strip()
    if text in ("Z", "UTC", "GMT", "UT"):
        return dt.timezone.utc
    if (m := _OFFSET.fullmatch(text)) is not None:
        sign = 1 if m.group(1) == "+" else -1
        offset = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        if offset > dt.timedelta(hours=18):
            raise InvalidOptionError(f"option {key!r}: offset {name!r} is beyond 18 hours")
        return dt.timezone(sign * offset)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidOptionError(
            f"option {key!r}: {name!r} is not a time zone (e.g. 'Asia/Shanghai', 'GMT-08:00')"
        ) from None


def local_time(epoch_ms: int, tz: dt.tzinfo | None) -> dt.datetime:
    """The naive wall clock of an epoch instant in ``tz`` (None: this machine's zone)."""
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=epoch_ms)
    return (instant.astimezone(tz) if tz is not None else instant.astimezone()).replace(tzinfo=None)


def parse_zone(key: str, text: str) -> str:
    """An option parser that refuses what ``zone`` cannot read."""
    zone(text, key=key)
    return text
