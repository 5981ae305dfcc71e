"""`scan.fallback-branch`: a batch read of the latest snapshot takes the partitions the table lacks
from the fallback branch (Paimon's FallbackReadFileStoreTable): a partition the table has is read
from the table alone, one only the fallback branch has from that branch."""

from __future__ import annotations

import posixpath
from dataclasses import replace

from lsmlake.core.path_guard import table_root_of
from lsmlake.core.paths import MAIN_BRANCH, branch_root, check_branch_name
from lsmlake.core.types import DataType
from lsmlake.errors import NoSuchTableError, SchemaMismatchError
from lsmlake.metadata.table_handle import TableHandle
from lsmlake.schema_change.manager import latest_schema

FALLBACK_BRANCH = "scan.fallback-branch"


def _loose(t: DataType) -> DataType:
    """The type with nullability dropped at every level (Java compares row types ignoring it)."""
    return replace(
        t,
        nullable=True,
        element=None if t.element is None else _loose(t.element),
        key=None if t.key is None else _loose(t.key),
        value=None if t.value is None else _loose(t.value),
        fields=tuple(replace(f, type=_loose(f.type), description=None) for f in t.fields),
    )


def fallback_table(table: TableHandle) -> TableHandle | None:
    """The branch ``table``'s `scan.fallback-branch` names, on its latest schema and without a fallback
    of its own; None when the option is unset or names the branch being read. Its columns must be the
    table's (names and types; nullability aside), or the read fails, as in Java."""
    name = table.options.get(FALLBACK_BRANCH)
    if not name or not name.strip():
        return None
    main = table_root_of(table.root)
    root = main if name == MAIN_BRANCH else branch_root(main, check_branch_name(name))
    if posixpath.normpath(root) == posixpath.normpath(table.root):
        return None
    base = table.name.partition("$")[0]
    label = base if root == main else f"{base}$branch_{name}"
    if not table.io.is_dir(posixpath.join(root, "schema")):
        raise NoSuchTableError(
            f"table {table.name}: {FALLBACK_BRANCH} names branch {name!r}, which does not exist"
        )
    schema = latest_schema(table.io, root, table_name=label)
    ours = [(f.name, _loose(f.type)) for f in table.schema.fields]
    theirs = [(f.name, _loose(f.type)) for f in schema.fields]
    if ours != theirs:
        raise SchemaMismatchError(
            f"table {table.name}: {FALLBACK_BRANCH} branch {name!r} does not have the same columns "
            f"({', '.join(n for n, _ in theirs)} vs {', '.join(n for n, _ in ours)}); the fallback branch "
            "must have the table's schema"
        )
    return replace(
        table,
        name=label,
        root=root,
        schema=schema,
        dynamic_options={**table.dynamic_options, FALLBACK_BRANCH: ""},
    )
