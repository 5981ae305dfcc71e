"""Map-typed options (``'0:orc,3:parquet'`` or one ``key.<entry>`` per entry) and the per-level maps read from them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from lsmlake.core.options.config_option import ConfigOption
from lsmlake.errors import InvalidOptionError

_TRUNCATE = re.compile(r"^TRUNCATE\((\d+)\)$", re.IGNORECASE)
STATS_MODES = ("none", "counts", "full", "truncate(N)")


def split_escaped(text: str, delimiter: str, *, key: str) -> list[str]:
    """Split ``text`` on ``delimiter`` as Paimon's StructuredOptionsSplitter does: parts may be single- or
    double-quoted (a doubled quote is a literal one), unquoted parts are trimmed and blank ones dropped."""
    parts: list[str] = []
    i, n = 0, len(text)
    pending_empty = False
    while i < n:
        c = text[i]
        if c in "'\"":
            chunk: list[str] = []
            j = i + 1
            while True:
                if j >= n:
                    raise InvalidOptionError(f"option {key!r}: a quote in {text!r} is not closed")
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:
                        chunk.append(c)
                        j += 2
                        continue
                    break
                chunk.append(text[j])
                j += 1
            i = j + 1
            rest = text[i:].lstrip()
            if rest and rest[0] != delimiter:
                raise InvalidOptionError(f"option {key!r}: {text!r} has text after a quoted part")
            parts.append("".join(chunk))
            pending_empty = False
        elif c == delimiter:
            if pending_empty:
                parts.append("")
            pending_empty = True
            i += 1
            continue
        elif c.isspace():
            i += 1
            continue
        else:
            end = text.find(delimiter, i)
            end = n if end < 0 else end
            parts.append(text[i:end].strip())
            i = end
            pending_empty = False
            continue
        pending_empty = False
    return parts


def parse_map(key: str, text: str) -> Mapping[str, str]:
    """``'k1:v1,k2:v2'`` as a mapping; an entry without exactly one ':' or a repeated key is an error."""
    out: dict[str, str] = {}
    for item in split_escaped(text, ",", key=key):
        pair = split_escaped(item, ":", key=key)
        if len(pair) != 2:
            raise InvalidOptionError(f"option {key!r}: entry {item!r} is not a key:value pair")
        if pair[0] in out:
            raise InvalidOptionError(f"option {key!r}: key {pair[0]!r} is given twice")
        out[pair[0]] = pair[1]
    return MappingProxyType(out)


def map_option(key: str, description: str) -> ConfigOption[Mapping[str, str]]:
    """A map option, empty by default; set as ``key = 'a:1,b:2'`` or as ``key.a = 1`` (Paimon's prefix form)."""
    return ConfigOption(key, "map", parse_map, MappingProxyType({}), None, description)


def map_entries(option: ConfigOption[Mapping[str, str]], raw: Mapping[str, str]) -> Mapping[str, str]:
    """The option's entries: from its own key when set, else from the ``<key>.<entry>`` keys (as Paimon reads it)."""
    if option.key in raw:
        return option.from_text(raw[option.key])
    prefix = option.key + "."
    return MappingProxyType({k[len(prefix) :]: v for k, v in raw.items() if k.startswith(prefix)})


def level_map(option: ConfigOption[Mapping[str, str]], raw: Mapping[str, str]) -> dict[int, str]:
    """A per-level map (``'0:orc,3:parquet'``): integer levels to values."""
    out: dict[int, str] = {}
    for level, value in map_entries(option, raw).items():
        if not re.fullmatch(r"[+-]?\d+", level.strip()):
            raise InvalidOptionError(f"option {option.key!r}: level {level!r} is not an integer")
        out[int(level)] = value
    return out


def check_stats_mode(key: str, mode: str) -> str:
    """``mode`` lower-cased when it is a stats mode (none, counts, full, truncate(N)); else an error."""
    lowered = mode.strip().lower()
    if lowered in ("none", "counts", "full") or _TRUNCATE.match(lowered):
        return lowered
    raise InvalidOptionError(f"option {key!r}: {mode!r} is not a stats mode ({', '.join(STATS_MODES)})")
