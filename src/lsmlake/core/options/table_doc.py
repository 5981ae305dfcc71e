"""The options table of the docs, rendered from the registry: every Paimon CoreOptions key and every key
lsmlake declares, with what lsmlake does with it."""

from __future__ import annotations

from lsmlake.core.options.paimon_keys import PAIMON_CORE_OPTIONS, PAIMON_VERSION
from lsmlake.core.options.status import HONOURED, REFUSED, OptionStatus, all_statuses, option_status


def _row(key: str, s: OptionStatus | None) -> str:
    if s is None:
        return f"| `{key}` | unknown | | | | lsmlake has no status for this Paimon key. |"
    o = s.declared
    fallbacks = sorted({*(o.fallback_keys if o else ()), *PAIMON_CORE_OPTIONS.get(key, ())})
    fallback = ", ".join(f"`{k}`" for k in fallbacks)
    type_name = o.type_name if o else ""
    default = "" if o is None else f"`{o.default_text}`" if o.default_text is not None else "(none)"
    if s.status == REFUSED:
        what = f"Refused at create time: {s.reason}."
    elif s.status == HONOURED and o is None:
        what = "A per-column option (`fields.`), read by the merge engines."
    elif s.status == HONOURED and o is not None:
        what = o.description + (f" One of {', '.join(o.choices)}." if o.choices else "")
    else:
        what = f"{s.reason[0].upper()}{s.reason[1:]}." if s.reason else ""
    if not s.in_paimon:
        what += f" Not in Paimon {PAIMON_VERSION}'s CoreOptions."
    return f"| `{key}` | {s.status} | {type_name} | {default} | {fallback} | {what.strip()} |"


def options_table() -> str:
    """Markdown: one row per key (status, type, default, fallback keys, what it does or why not)."""
    rows = [
        "| Key | lsmlake | Type | Default | Fallback keys | Description |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    rows += [_row(key, s) for key, s in all_statuses().items()]
    stats_mode = option_status("fields.<column>.stats-mode")
    stats_what = (
        f"Refused at create time: {stats_mode.reason}."
        if stats_mode is not None and stats_mode.status == REFUSED
        else "The stats mode of one column (none, counts, truncate(N), full), over `metadata.stats-mode` and its "
        "per-level values."
    )
    rows.append(
        f"| `fields.<column>.stats-mode` | {stats_mode.status if stats_mode else HONOURED} | string | (none) | "
        f"| {stats_what} |"
    )
    rows.append(
        f"| `fields.<column>.<option>` | {HONOURED} | string | (none) | | Per-column options of the merge engines "
        "(aggregate functions, sequence groups, ignore-retract, ...), checked against the schema. |"
    )
    return "\n".join(rows) + "\n"
