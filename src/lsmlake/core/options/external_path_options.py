"""The `data-file.external-paths` options read as Paimon reads them: the roots new files go under and their weights."""

from __future__ import annotations

import posixpath
import re

from lsmlake.core.options.core_options import CoreOptions
from lsmlake.errors import InvalidOptionError

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def _uri(text: str) -> str:
    """A root as Java's Path renders it: ``scheme:/path`` without an authority, ``scheme://host/path`` with
    one; no trailing slash."""
    m = _SCHEME.match(text)
    assert m is not None
    rest = text[m.end() :]
    authority = ""
    if rest.startswith("//"):
        authority, _, path = rest[2:].partition("/")
        path = "/" + path
    else:
        path = "/" + rest.lstrip("/")
    path = posixpath.normpath(path) if path != "/" else path
    path = path.rstrip("/") or "/"
    return f"{m.group(1)}://{authority}{path}" if authority else f"{m.group(1)}:{path}"


def external_roots(options: CoreOptions) -> tuple[str, ...]:
    """The roots new data files go under, as Paimon's createExternalPaths picks them: none when the
    option is unset or the strategy is none; each root needs a scheme; specific-fs keeps the roots of
    ``data-file.external-paths.specific-fs``'s scheme; at least one root must remain."""
    text = options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS)
    strategy = options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS_STRATEGY)
    if not text or strategy == "none":
        return ()
    specific = options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS)
    if strategy == "specific-fs" and specific is None:
        raise InvalidOptionError(
            "option 'data-file.external-paths.specific-fs' must be set when data-file.external-paths.strategy "
            "is specific-fs"
        )
    roots: list[str] = []
    for item in text.split(","):
        item = item.strip()
        m = _SCHEME.match(item)
        if m is None or len(m.group(1)) < 2:  # a Windows drive letter is no scheme
            raise InvalidOptionError(f"option 'data-file.external-paths': root {item!r} has no scheme (e.g. file:///x)")
        if strategy != "specific-fs" or m.group(1).lower() == (specific or "").strip().lower():
            roots.append(_uri(item))
    if not roots:
        raise InvalidOptionError(
            f"option 'data-file.external-paths': no root of scheme {specific!r} (data-file.external-paths.specific-fs)"
        )
    return tuple(roots)


def external_weights(options: CoreOptions, roots: int) -> tuple[int, ...] | None:
    """The weight-robin weights (None: unset), one positive integer per root."""
    text = options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS_WEIGHTS)
    if text is None:
        return None
    try:
        weights = tuple(int(w.strip()) for w in text.split(","))
    except ValueError:
        raise InvalidOptionError(f"option 'data-file.external-paths.weights': {text!r} is not integers") from None
    if any(w <= 0 for w in weights):
        raise InvalidOptionError(f"option 'data-file.external-paths.weights': {text!r}: weights must be positive")
    if roots >= 2 and len(weights) != roots:
        raise InvalidOptionError(
            f"option 'data-file.external-paths.weights': {len(weights)} weights for {roots} external paths"
        )
    return weights


def validate_external_paths(options: CoreOptions) -> None:
    """The external-path options' errors, before a table is created."""
    roots = external_roots(options)
    if options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS_STRATEGY) == "weight-robin":
        external_weights(options, len(roots))
