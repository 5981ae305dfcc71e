"""The ``file-index.*`` table options: which columns get which per-file index, and each index's settings."""

from __future__ import annotations

from collections.abc import Mapping

from lsmlake.errors import InvalidOptionError

PREFIX = "file-index."
WRITTEN_TYPES: dict[str, frozenset[str]] = {
    "bloom-filter": frozenset({"fpp", "items"}),
    "bitmap": frozenset({"version", "index-block-size"}),
    "bsi": frozenset(),
    "range-bitmap": frozenset({"chunk-size"}),
}
"""The index types lsmlake writes, with the per-column options each takes."""
REFUSED_TYPES: dict[str, str] = {}
"""Index types Paimon knows that lsmlake cannot write (none now), with the reason given at create."""
_GLOBAL_KEYS = frozenset({"file-index.in-manifest-threshold", "file-index.read.enabled"})


def is_file_index_key(key: str) -> bool:
    """A ``file-index.<type>.columns`` or ``file-index.<type>.<column>.<option>`` key of a written type."""
    if not key.startswith(PREFIX) or key in _GLOBAL_KEYS:
        return False
    parts = key[len(PREFIX) :].split(".")
    if parts[0] not in WRITTEN_TYPES:
        return False
    return (len(parts) == 2 and parts[1] == "columns") or (
        len(parts) == 3 and parts[2] in WRITTEN_TYPES[parts[0]]
    )


def file_index_refusal(key: str) -> str | None:
    """Why lsmlake cannot honour a ``file-index.`` key (an index type it does not write), or None."""
    if not key.startswith(PREFIX):
        return None
    kind = key[len(PREFIX) :].split(".")[0]
    reason = REFUSED_TYPES.get(kind)
    return None if reason is None else f"option {key!r} is not supported by lsmlake: {reason}"


def file_index_columns(options: Mapping[str, str]) -> dict[str, dict[str, dict[str, str]]]:
    """``{column: {index type: {option: value}}}`` from the table options (Paimon's FileIndexOptions rules)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for key, value in options.items():
        parts = key[len(PREFIX) :].split(".") if key.startswith(PREFIX) else []
        if len(parts) == 2 and parts[1] == "columns" and parts[0] in WRITTEN_TYPES:
            for name in value.split(","):
                if not name.strip():
                    raise InvalidOptionError(f"option {key!r}: {value!r} names an empty column")
                out.setdefault(name.strip(), {}).setdefault(parts[0], {})
    for key, value in options.items():
        parts = key[len(PREFIX) :].split(".") if key.startswith(PREFIX) else []
        if len(parts) == 3 and parts[0] in WRITTEN_TYPES:
            kind, column, name = parts
            settings = out.get(column, {}).get(kind)
            if settings is None:
                raise InvalidOptionError(
                    f"option {key!r}: column {column!r} is not listed in 'file-index.{kind}.columns'"
                )
            settings[name] = value
    return out
