"""The schema an ALTER builds, change by change: its columns, options and keys, and the name rules."""

from __future__ import annotations

from collections.abc import Callable

from lsmlake.core.schema import TableSchema
from lsmlake.core.types import DataField
from lsmlake.errors import SchemaChangeError
from lsmlake.mergetree.engines.config import FIELDS_PREFIX
from lsmlake.mergetree.kv_layout import KEY_PREFIX

SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})
RENAMED_FIELD_LIST_OPTIONS = ("bucket-key", "sequence.field", "rowkind.field")
LIST_VALUE_SUFFIXES = (".sequence-group", ".nested-key")


def change_error(table: str, message: str) -> SchemaChangeError:
    return SchemaChangeError(f"table {table}: {message}")


class SchemaState:
    """The schema being built, change by change."""

    def __init__(self, old: TableSchema, table: str, has_snapshots: Callable[[], bool]) -> None:
        self.old = old
        self.table = table
        self._has_snapshots = has_snapshots
        self._snapshots: bool | None = None
        self.fields: list[DataField] = list(old.fields)
        self.highest = old.highest_field_id
        # Java writes the legacy defaults of old schema versions (bucket=1, orc) out explicitly
        self.old_options: dict[str, str] = dict(old.effective_options)
        self.options: dict[str, str] = dict(self.old_options)
        self.comment = old.comment
        self.primary_keys: list[str] = list(old.primary_keys)
        self.partition_keys: list[str] = list(old.partition_keys)

    @property
    def has_snapshots(self) -> bool:
        if self._snapshots is None:
            self._snapshots = bool(self._has_snapshots())
        return self._snapshots

    # -- lookups
    def index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise change_error(
            self.table, f"column {name!r} does not exist (columns: {[f.name for f in self.fields]})"
        )

    def field(self, name: str) -> DataField:
        return self.fields[self.index(name)]

    def exists(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def require_absent(self, name: str) -> None:
        if self.exists(name):
            raise change_error(self.table, f"column {name!r} already exists")

    def check_new_name(self, name: str) -> None:
        if name in SYSTEM_FIELD_NAMES or name.startswith(KEY_PREFIX):
            raise change_error(
                self.table,
                f"column name {name!r} is reserved for Paimon system fields "
                f"({sorted(SYSTEM_FIELD_NAMES)} and the '{KEY_PREFIX}' prefix)",
            )
        self.require_absent(name)

    def protect_partition(self, name: str, what: str) -> None:
        if name in self.partition_keys:
            raise change_error(self.table, f"cannot {what} partition column {name!r}")

    def protect_primary_key(self, name: str, what: str) -> None:
        if name in self.primary_keys:
            raise change_error(self.table, f"cannot {what} primary-key column {name!r}")

    def option_users(self, name: str) -> list[str]:
        """The options that name column ``name``."""
        users = []
        for key, value in self.options.items():
            if key in RENAMED_FIELD_LIST_OPTIONS and name in split_list(value):
                users.append(key)
            elif key.startswith(FIELDS_PREFIX):
                fields, _ = fields_key(key)
                if name in fields or (key.endswith(LIST_VALUE_SUFFIXES) and name in split_list(value)):
                    users.append(key)
        return users


def split_list(value: str) -> list[str]:
    return [s.strip() for s in value.split(",") if s.strip()]


def fields_key(key: str) -> tuple[list[str], str]:
    """``fields.a,b.sequence-group`` -> (["a", "b"], "sequence-group")."""
    body = key[len(FIELDS_PREFIX) :]
    names, _, suffix = body.rpartition(".")
    if not names:
        return [], body
    return names.split(","), suffix
