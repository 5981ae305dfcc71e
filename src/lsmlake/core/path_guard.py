"""Path confinement: every path named by metadata resolves under the table or a configured external root."""

from __future__ import annotations

import posixpath
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from lsmlake.core.fileio import FileIO
from lsmlake.core.options import CoreOptions
from lsmlake.errors import CorruptFileError

EXTERNAL_PATHS = "data-file.external-paths"
"""Paimon's option listing the roots (comma-separated URIs) data files may be written under."""
MAX_NAME_BYTES = 255
"""Longest file name a metadata field may hold (NAME_MAX of common filesystems, S3 key segments alike)."""
MAX_PATH_CHARS = 4096
"""Longest external path (PATH_MAX)."""

_PLAIN = re.compile(r"[A-Za-z0-9_\-.=+]+")
"""Names that need no closer look (every name Paimon and lsmlake generate)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})

BRANCH_DIR = "branch"
"""The directory under a table root that holds its branches (Paimon's layout)."""
BRANCH_PREFIX = "branch-"
"""A branch ``b`` lives in ``<table>/branch/branch-b/`` (its own schema/, snapshot/ and tag/)."""


def table_root_of(root: str) -> str:
    """The table root that holds the data files of ``root``: ``root`` itself, or for a branch's
    metadata root (``<table>/branch/branch-<name>``) the table two levels up. A table root is
    ``<database>.db/<table>`` in a catalog, so its parent is never named ``branch``."""
    trimmed = root.rstrip("/")
    parent, leaf = posixpath.split(trimmed)
    table, mid = posixpath.split(parent)
    if mid == BRANCH_DIR and leaf.startswith(BRANCH_PREFIX) and len(leaf) > len(BRANCH_PREFIX) and table:
        return table
    return root


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a plain file name (one path segment), or None when it is."""
    if not isinstance(name, str):
        return f"it is a {type(name).__name__}, not a string"
    if _PLAIN.fullmatch(name) and name not in (".", "..") and len(name) <= MAX_NAME_BYTES:
        return None
    if not name:
        return "it is empty"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes"
    for text in (name, unquote(name)) if "%" in name else (name,):
        if _CONTROL.search(text):
            return "it holds control characters"
        if "/" in text or "\\" in text:
            return "it holds a path separator (or an encoded one)"
        if text in (".", ".."):
            return "it names a directory ('.' or '..')"
    return None


def check_name(name: object, *, source: str, field: str) -> str:
    """``name`` if it is a plain file name, else a CorruptFileError naming ``source`` and ``field``."""
    problem = name_problem(name)
    if problem is not None:
        raise CorruptFileError(f"{source}: {field} {_show(name)} is not a plain file name: {problem}")
    assert isinstance(name, str)
    return name


def check_names(names: Iterable[object], *, source: str, field: str) -> None:
    """:func:`check_name` for each of ``names``."""
    for name in names:
        check_name(name, source=source, field=field)


def check_location(path: object, *, source: str, field: str) -> str:
    """``path`` if it is a well-formed absolute path or URI (no traversal, control characters or
    backslashes, raw or percent-encoded), else a CorruptFileError naming ``source`` and ``field``; which
    roots it may lie under is :meth:`PathGuard.external`'s to check."""
    found = split_location(path, local=True) if isinstance(path, str) else "it is not a string"
    if isinstance(found, str):
        raise CorruptFileError(f"{source}: {field} {_show(path)} is refused: {found}")
    assert isinstance(path, str)
    return path


def relative_dir_problem(path: str) -> str | None:
    """Why ``path`` is not a relative directory below a root (``a/b``), or None when it is."""
    if not path or path.startswith("/") or _SCHEME.match(path):
        return "it is empty, absolute or a URI"
    for segment in path.strip("/").split("/"):
        problem = name_problem(segment)
        if problem is not None:
            return f"segment {_show(segment)}: {problem}"
    return None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:100] + f"...' ({len(text)} characters)"


def _scheme_class(scheme: str | None, local: bool) -> str:
    """Schemes that reach the same storage compare equal: file (and none, locally); s3, s3a, s3n."""
    s = (scheme or "").lower()
    if not s:
        return "file" if local else ""
    if s in _S3_SCHEMES:
        return "s3"
    return s


def storage_class(scheme: str | None, local: bool) -> str:
    """The storage a FileIO of ``scheme`` reaches (``file``, ``s3``, ...), as external paths are compared."""
    return _scheme_class(scheme, local)


def _segments_problem(path: str) -> str | None:
    """Why the path part of a URI (or a plain path) is unsafe: traversal, control characters, backslashes
    -- in the text and in its percent-decoded form (a URI parser may decode it)."""
    if len(path) > MAX_PATH_CHARS:
        return f"it is longer than {MAX_PATH_CHARS} characters"
    for text in (path, unquote(path)) if "%" in path else (path,):
        if _CONTROL.search(text):
            return "it holds control characters"
        if "\\" in text:
            return "it holds a backslash"
        if any(seg in (".", "..") for seg in text.split("/")):
            return "it holds a '.' or '..' segment (or an encoded one)"
        if any(len(seg.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for seg in text.split("/")):
            return f"a segment is longer than {MAX_NAME_BYTES} bytes"
    return None


def split_location(path: str, *, local: bool, default: str = "") -> tuple[str, str] | str:
    """``(storage, filesystem path)`` of an absolute path or URI, or why it is not one. ``storage`` is
    the scheme class (``file``, ``s3``, ...); the filesystem path has no scheme (``bucket/key`` on S3).
    ``default``: the storage of a path without a scheme on an object store (else one is refused)."""
    if not isinstance(path, str) or not path:
        return "it is empty or not a string"
    match = _SCHEME.match(path)
    if match is None:
        if local and not path.startswith("/"):
            return "it is neither an absolute path nor a URI"
        if not local and not default:
            return "it is not a URI"
        rest, storage = (path, "file") if local else (path.lstrip("/"), default)
    else:
        storage = _scheme_class(match.group(1), local)
        rest = path[match.end() :]
        if storage == "file":
            rest = "/" + rest.lstrip("/")
        elif rest.startswith("//"):
            rest = rest[2:]
        else:
            return "it is a URI without an authority (scheme://bucket/...)"
    problem = _segments_problem(rest)
    if problem is not None:
        return problem
    if storage == "file":
        return storage, "/" + rest.lstrip("/")
    if not rest.split("/", 1)[0]:
        return "it names no bucket"
    return storage, rest


@dataclass(frozen=True)
class PathGuard:
    """Where one table's files may be: under its root, or under a root of `data-file.external-paths`."""

    storage: str
    """Scheme class of the table's filesystem (``file``, ``s3``, ...)."""
    root: str
    """The table's filesystem path (no scheme; ``bucket/prefix/...`` on S3)."""
    external_roots: tuple[tuple[str, str], ...] = ()
    local: bool = True

    @staticmethod
    def of(io: FileIO, root: str, options: CoreOptions | Mapping[str, str]) -> PathGuard:
        """The guard of the table at ``root`` (a path of ``io``) with ``options``."""
        local = io.local
        raw = options.get(EXTERNAL_PATHS)
        roots: list[tuple[str, str]] = []
        for item in (raw or "").split(","):
            item = item.strip()
            if not item:
                continue
            found = split_location(item, local=local)
            if isinstance(found, str):
                raise CorruptFileError(
                    f"table option {EXTERNAL_PATHS} root {_show(item)} is refused: {found}"
                )
            roots.append((found[0], _trimmed(found[1])))
        return PathGuard(_scheme_class(io.scheme, local), _trimmed(table_root_of(root)), tuple(roots), local)

    def _inside(self, storage: str, path: str) -> bool:
        """Whether ``path`` (free of '.' and '..' segments) lies under a root of ``storage``."""
        path = posixpath.normpath(path)
        for s, r in ((self.storage, self.root), *self.external_roots):
            if s == storage and (path == r or path.startswith(r + "/") or r == "/"):
                return True
        return False

    def external(self, path: str, *, source: str, field: str) -> tuple[str, str]:
        """``(storage, filesystem path)`` of an external path from metadata, confined to the table and
        its external roots; else a CorruptFileError naming ``source`` and ``field``."""
        found = split_location(path, local=self.local, default=self.storage)
        if isinstance(found, str):
            raise CorruptFileError(f"{source}: {field} {_show(path)} is refused: {found}")
        if not self._inside(*found):
            raise CorruptFileError(
                f"{source}: {field} {_show(path)} lies outside the table ({self.root}) and the roots of "
                f"{EXTERNAL_PATHS} ({', '.join(r for _, r in self.external_roots) or 'none set'})"
            )
        return found

    def external_fs_path(self, path: str, *, source: str, field: str) -> str:
        """An external path as a path of the table's own filesystem (for maintenance, which deletes
        through the table's FileIO); one on another storage is refused."""
        storage, fs_path = self.external(path, source=source, field=field)
        if storage != self.storage:
            raise CorruptFileError(
                f"{source}: {field} {_show(path)} is on {storage} storage, not the table's ({self.storage})"
            )
        return fs_path

    def resolve(self, external: str | None, default: str, *, source: str) -> str:
        """A file's path on the table's filesystem: ``default`` (under the table) unless metadata gives
        it an ``external`` path, which is confined (:meth:`external_fs_path`)."""
        if not external:
            return default
        return self.external_fs_path(external, source=source, field="_EXTERNAL_PATH")

    def delete_problem(self, path: str) -> str | None:
        """Why a filesystem path of the table's FileIO must not be deleted, or None when it may be."""
        problem = _segments_problem(path) if path else "it is empty"
        if problem is None and not self.local and path.startswith("/"):
            problem = "it is absolute on an object store"
        if problem is None and not self._inside(self.storage, path if self.local else path.lstrip("/")):
            problem = "it lies outside the table and its external roots"
        return problem

    def deletable(self, paths: Iterable[str], *, what: str) -> tuple[list[str], list[str]]:
        """``(may delete, refused)`` among ``paths``; refusals are warned about, naming ``what``."""
        allowed: list[str] = []
        refused: list[str] = []
        for p in paths:
            (refused if self.delete_problem(p) else allowed).append(p)
        if refused:
            warnings.warn(
                f"{what}: refused to delete {len(refused)} path(s) outside table {self.root} and its "
                f"external roots: {', '.join(_show(p) for p in refused[:5])}",
                PathRefusedWarning,
                stacklevel=3,
            )
        return allowed, refused


class PathRefusedWarning(UserWarning):
    """A maintenance run left a path alone: its metadata named a file outside the table."""


def _trimmed(path: str) -> str:
    normal = posixpath.normpath(path) if path else path
    return normal if normal == "/" else normal.rstrip("/")
