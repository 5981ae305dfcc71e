"""The options table of the docs, rendered from the registry."""

from __future__ import annotations

from lsmlake.core.options.registry import all_options
from lsmlake.core.options.validation import PER_LEVEL_PREFIXES


def options_table() -> str:
    """Markdown: one row per declared option (key, type, default, fallback keys, what it does)."""
    rows = ["| Key | Type | Default | Fallback keys | Description |", "| --- | --- | --- | --- | --- |"]
    for o in sorted(all_options(), key=lambda o: o.key):
        default = f"`{o.default_text}`" if o.default_text is not None else "(none)"
        fallback = ", ".join(f"`{k}`" for k in o.fallback_keys)
        what = f"Refused at create time: {o.refused}." if o.refused else o.description
        if o.choices:
            what += f" One of {', '.join(o.choices)}."
        rows.append(f"| `{o.key}` | {o.type_name} | {default} | {fallback} | {what} |")
    refused = ", ".join(f"`{p}.*`" for p in PER_LEVEL_PREFIXES)
    rows.append(
        f"| {refused} | string | (none) | | Refused at create time: every level is written with the table's "
        "settings. |"
    )
    rows.append(
        "| `fields.<column>.stats-mode` | string | (none) | | Refused at create time: every column's stats "
        "follow `metadata.stats-mode`. |"
    )
    return "\n".join(rows) + "\n"
