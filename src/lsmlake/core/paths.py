"""Path factory: where every file of a table lives, and partition directory names as Java renders them."""

from __future__ import annotations

import datetime as dt
import decimal
import posixpath
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import TYPE_CHECKING

from lsmlake.core.binary_row import Timestamp
from lsmlake.core.options import CoreOptions
from lsmlake.core.path_guard import (
    BRANCH_DIR,
    BRANCH_PREFIX,
    check_name,
    name_problem,
    relative_dir_problem,
    table_root_of,
)
from lsmlake.core.types import DataType
from lsmlake.errors import CorruptFileError, InvalidIdentifierError

if TYPE_CHECKING:
    from lsmlake.core.schema import TableSchema

MAIN_BRANCH = "main"
"""The table itself; other branches live under ``<table>/branch/branch-<name>/``."""

_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset("\"#%'*/:=?\\\x7f{}[]^")


def escape_path_name(text: str) -> str:
    """Hive-style escaping of a partition key or value (non-ASCII is left alone)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def _java_local_datetime(value: dt.datetime) -> str:
    base = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        base += f":{value.second:02d}"
    if value.microsecond:
        frac = f"{value.microsecond:06d}"
        base += "." + (frac[:3] if frac.endswith("000") else frac)
    return base


def partition_value_text(value: object, t: DataType, *, legacy: bool) -> str | None:
    """The text Java puts in a partition directory for one value (None = null)."""
    if value is None:
        return None
    if isinstance(value, Timestamp):
        value = value.to_datetime()
    if isinstance(value, bool):
        return "true" if value else "false"
    if t.root == "DATE" and isinstance(value, dt.date):
        if legacy:
            return str((value - dt.date(1970, 1, 1)).days)
        return value.isoformat()
    if isinstance(value, dt.datetime):
        if legacy:
            return _java_local_datetime(value.replace(tzinfo=None))
        return value.replace(tzinfo=None).isoformat(sep=" ")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def partition_path(
    keys: Sequence[str],
    values: Sequence[object],
    types: Sequence[DataType],
    *,
    default_name: str,
    legacy: bool,
) -> str:
    """``k1=v1/k2=v2`` for one partition, or ``""`` for an un-partitioned table."""
    parts = []
    for key, value, t in zip(keys, values, types, strict=True):
        text = partition_value_text(value, t, legacy=legacy)
        if text is None or not text.strip():
            text = default_name
        parts.append(f"{escape_path_name(key)}={escape_path_name(text)}")
    return "/".join(parts)


def partition_directory(schema: TableSchema, options: CoreOptions, values: Sequence[object]) -> str:
    """A partition's directory relative to the table root: ``k1=v1/...`` (``""`` un-partitioned), under
    `data-file.path-directory` when that option is set -- where writers, compactions and readers look."""
    keys = list(schema.partition_keys)
    plain = [v.to_datetime() if isinstance(v, Timestamp) else v for v in values]
    part = partition_path(
        keys,
        plain,
        [schema.field(k).type for k in keys],
        default_name=options.partition_default_name,
        legacy=options.partition_legacy_name,
    )
    directory = options.get(CoreOptions.DATA_FILE_PATH_DIRECTORY)
    if directory:
        problem = relative_dir_problem(directory)
        if problem is not None:
            raise CorruptFileError(
                f"table option data-file.path-directory {directory!r} is refused: {problem}"
            )
        part = posixpath.join(directory, part) if part else directory
    return part


def bucket_dir_name(bucket: int) -> str:
    return "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"


@dataclass
class TablePaths:
    """Every path of one table; one instance per writer or committer (one uuid, one counter)."""

    root: str
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    _counter: count[int] = field(default_factory=count)

    def _next(self) -> int:
        return next(self._counter)

    @property
    def schema_dir(self) -> str:
        return posixpath.join(self.root, "schema")

    @property
    def snapshot_dir(self) -> str:
        return posixpath.join(self.root, "snapshot")

    @property
    def data_root(self) -> str:
        """Where manifests, index and data files live: the table root, shared by all branches."""
        return table_root_of(self.root)

    @property
    def manifest_dir(self) -> str:
        return posixpath.join(self.data_root, "manifest")

    @property
    def index_dir(self) -> str:
        return posixpath.join(self.data_root, "index")

    def manifest(self, name: str) -> str:
        """A file of `manifest/`; ``name`` (from metadata) must be one plain file name."""
        return posixpath.join(
            self.manifest_dir, check_name(name, source=f"table {self.root}", field="manifest name")
        )

    def index_file(self, name: str) -> str:
        """A file of `index/`; ``name`` (from metadata) must be one plain file name."""
        return posixpath.join(
            self.index_dir, check_name(name, source=f"table {self.root}", field="index file name")
        )

    def new_manifest_name(self) -> str:
        return f"manifest-{self.uid}-{self._next()}"

    def new_manifest_list_name(self) -> str:
        return f"manifest-list-{self.uid}-{self._next()}"

    def new_index_manifest_name(self) -> str:
        return f"index-manifest-{self.uid}-{self._next()}"

    def new_index_file_name(self) -> str:
        return f"index-{self.uid}-{self._next()}"

    def bucket_dir(self, partition_dir: str, bucket: int) -> str:
        if partition_dir:
            return posixpath.join(self.data_root, partition_dir, bucket_dir_name(bucket))
        return posixpath.join(self.data_root, bucket_dir_name(bucket))

    def new_data_file_name(self, *, prefix: str, extension: str) -> str:
        return f"{prefix}{self.uid}-{self._next()}.{extension}"


def is_inside(root: str, path: str) -> bool:
    """Whether ``path`` stays inside ``root`` after normalisation."""
    root_n = posixpath.normpath(root)
    path_n = posixpath.normpath(path)
    return path_n == root_n or path_n.startswith(root_n.rstrip("/") + "/")


def check_branch_name(name: object) -> str:
    """``name`` if it can name a branch (Paimon's rules, and one plain directory name), else an error."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidIdentifierError(f"branch name must be a non-blank string, got {name!r}")
    if name == MAIN_BRANCH:
        raise InvalidIdentifierError(f"branch name {name!r} is the default branch and cannot be used")
    if name.isdigit():
        raise InvalidIdentifierError(f"branch name cannot be a pure numeric string, got {name!r}")
    problem = name_problem(BRANCH_PREFIX + name)
    if problem is None and ("$" in name or name != name.strip() or "%" in name):
        problem = "it holds '$', '%' or surrounding whitespace"
    if problem is not None:
        raise InvalidIdentifierError(f"branch name {name!r} is refused: {problem}")
    return name


def branch_root(table_root: str, name: str) -> str:
    """The metadata root of branch ``name`` (the table root itself for ``main``)."""
    root = table_root_of(table_root.rstrip("/"))
    if name == MAIN_BRANCH:
        return root
    return posixpath.join(root, BRANCH_DIR, BRANCH_PREFIX + check_branch_name(name))
