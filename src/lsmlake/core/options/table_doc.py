"""The options table of the docs, rendered from the registry."""

from __future__ import annotations

from lsmlake.core.options.registry import all_options


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
    rows.append(
        "| `fields.<column>.stats-mode` | string | (none) | | The stats mode of one column (none, counts, "
        "truncate(N), full), over `metadata.stats-mode` and its per-level values. |"
    )
    return "\n".join(rows) + "\n"
