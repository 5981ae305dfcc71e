"""What a table's options ask of its merge engine, parsed against the schema and validated as Paimon does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsmlake.core.options import CoreOptions
from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError
from lsmlake.mergetree.engines.aggregator import NOT_COMPARABLE
from lsmlake.mergetree.engines.aggregators import check_function_name, create_aggregator

FIELDS_PREFIX = "fields."
SEQUENCE_GROUP = "sequence-group"
DEFAULT_AGG = "default-aggregate-function"
LAST_NON_NULL = "last_non_null_value"


@dataclass(frozen=True)
class SequenceGroup:
    """``fields.<seq1>,<seq2>.sequence-group = f1,f2``: f1, f2 change only with a newer (seq1, seq2)."""

    sequence_fields: tuple[str, ...]
    protected: tuple[str, ...]


@dataclass(frozen=True)
class EngineConfig:
    """The merge engine of one table, with everything its merge needs besides the rows."""

    engine: str
    fields: tuple[str, ...]
    types: Mapping[str, DataType]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    ignore_delete: bool = False
    sequence_fields: tuple[str, ...] = ()
    descending: bool = False
    groups: tuple[SequenceGroup, ...] = ()
    remove_record_on_delete: bool = False
    remove_on_sequence_group: frozenset[str] = frozenset()
    functions: Mapping[str, str] = field(default_factory=dict)
    """Value field -> aggregate function name (aggregation: every value field; partial-update: some)."""

    @property
    def value_fields(self) -> tuple[str, ...]:
        return tuple(f for f in self.fields if f not in self.primary_keys)

    def group_of(self, name: str) -> SequenceGroup | None:
        for g in self.groups:
            if name in g.protected or name in g.sequence_fields:
                return g
        return None


def _field_function(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(f"{FIELDS_PREFIX}{name}.aggregate-function")
    if value is None:
        value = options.get(f"{FIELDS_PREFIX}{DEFAULT_AGG}")
    return value.strip().lower() if value is not None else None


def _require(name: str, known: Sequence[str], what: str) -> str:
    if name not in known:
        raise InvalidOptionError(f"{what}: field '{name}' can not be found in table schema {list(known)}")
    return name


def _check_fields_prefix(options: Mapping[str, str], names: Sequence[str]) -> None:
    """Paimon's validateFieldsPrefix: every ``fields.<a>[,<b>].<option>`` names existing columns."""
    for key in options:
        if not key.startswith(FIELDS_PREFIX):
            continue
        segments = key.split(".")
        if len(segments) < 3 and segments[1] != DEFAULT_AGG:
            raise InvalidOptionError(f"option {key!r}: expected fields.<column>.<option>")
        for name in segments[1].split(","):
            if name != DEFAULT_AGG and name not in names:
                raise InvalidOptionError(f"option {key!r}: field '{name}' can not be found in table schema")


def _sequence_groups(
    options: Mapping[str, str],
    names: Sequence[str],
    pk: Sequence[str],
) -> list[SequenceGroup]:
    groups = []
    owner: dict[str, str] = {}
    for key, value in options.items():
        if not (key.startswith(FIELDS_PREFIX) and key.endswith("." + SEQUENCE_GROUP)):
            continue
        ordering = key[len(FIELDS_PREFIX) : -len(SEQUENCE_GROUP) - 1].split(",")
        seq = tuple(_require(s.strip(), names, key) for s in ordering)
        protected = tuple(_require(p.strip(), names, key) for p in value.split(",") if p.strip())
        for name in (*protected, *seq):
            if name in pk:
                raise InvalidOptionError(
                    f"option {key!r}: the sequence-group contains primary key field '{name}', "
                    "which is not allowed"
                )
        for name in protected:
            if name in owner:
                raise InvalidOptionError(
                    f"option {key!r}: field {name} is defined repeatedly by multiple groups"
                )
            owner[name] = key
        groups.append(SequenceGroup(seq, protected))
    return groups


def engine_config(
    fields: Sequence[tuple[str, DataType]], primary_keys: Sequence[str], options: CoreOptions
) -> EngineConfig:
    """Parse and validate (against the schema) what the merge engine needs; raises InvalidOptionError."""
    names = [n for n, _ in fields]
    types = dict(fields)
    raw = dict(options.raw)
    engine = options.merge_engine
    pk = tuple(primary_keys)
    seq = options.sequence_fields
    for s in seq:
        _require(s, names, "option 'sequence.field'")
        if f"{FIELDS_PREFIX}{s}.aggregate-function" in options.raw:
            raise InvalidOptionError(f"Should not define aggregation on sequence field: '{s}'.")
        if seq.count(s) > 1:
            raise InvalidOptionError(f"Sequence field '{s}' is defined repeatedly.")
    rowkind = options.rowkind_field
    if rowkind is not None:
        _require(rowkind, names, "option 'rowkind.field'")
    _check_fields_prefix(raw, names)
    descending = options.sequence_descending
    common: dict[str, Any] = {
        "engine": engine,
        "fields": tuple(names),
        "types": types,
        "primary_keys": pk,
        "options": raw,
        "ignore_delete": options.ignore_delete,
        "sequence_fields": seq,
        "descending": descending,
    }
    if engine == "partial-update":
        return _partial_update(common, raw, names, types, pk, options)
    if engine == "aggregation":
        return _aggregation(common, raw, names, types, pk, seq, options)
    return EngineConfig(**common)


def _partial_update(
    common: dict[str, Any],
    raw: Mapping[str, str],
    names: Sequence[str],
    types: Mapping[str, DataType],
    pk: tuple[str, ...],
    options: CoreOptions,
) -> EngineConfig:
    groups = _sequence_groups(raw, names, pk)
    for g in groups:
        for s in g.sequence_fields:
            if types[s].root in NOT_COMPARABLE:
                raise InvalidOptionError(f"field '{s}' of type {types[s]} cannot order a sequence-group")
    remove_on_delete = options.get(CoreOptions.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
    on_group = options.get(CoreOptions.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP)
    ignore = options.ignore_delete
    ignore_key = options.ignore_delete_key  # name the key the user set (it has fallback keys)
    if remove_on_delete and ignore:
        raise InvalidOptionError(
            f"{ignore_key} and partial-update.remove-record-on-delete have conflicting behavior "
            "so should not be enabled at the same time"
        )
    if on_group is not None and ignore:
        raise InvalidOptionError(
            f"{ignore_key} and partial-update.remove-record-on-sequence-group have conflicting behavior "
            "so should not be enabled at the same time"
        )
    if remove_on_delete and groups:
        raise InvalidOptionError(
            "sequence-group and partial-update.remove-record-on-delete have conflicting behavior "
            "so should not be enabled at the same time"
        )
    all_seq = {s for g in groups for s in g.sequence_fields}
    on_group_fields = frozenset(s.strip() for s in (on_group or "").split(",") if s.strip())
    if not on_group_fields <= all_seq:
        raise InvalidOptionError(
            f"field '{on_group}' defined in 'partial-update.remove-record-on-sequence-group' option "
            "must be part of sequence groups"
        )
    protected = {p for g in groups for p in g.protected}
    functions = {}
    for name in names:
        if name in all_seq or name in pk:
            continue
        func = _field_function(raw, name)
        if func is None:
            continue
        if func != LAST_NON_NULL and name not in protected:
            raise InvalidOptionError(
                f"Must use sequence group for aggregation functions but not found for field {name}."
            )
        create_aggregator(func, name, types[name], dict(raw))
        functions[name] = func
    return EngineConfig(
        **common,
        groups=tuple(groups),
        remove_record_on_delete=remove_on_delete,
        remove_on_sequence_group=on_group_fields,
        functions=functions,
    )


def _aggregation(
    common: dict[str, Any],
    raw: Mapping[str, str],
    names: Sequence[str],
    types: Mapping[str, DataType],
    pk: tuple[str, ...],
    seq: tuple[str, ...],
    options: CoreOptions,
) -> EngineConfig:
    remove_on_delete = options.get(CoreOptions.AGGREGATION_REMOVE_RECORD_ON_DELETE)
    functions = {}
    for name in names:
        if name in pk:
            continue
        if name in seq:
            functions[name] = "last_value"
            continue
        func = _field_function(raw, name) or LAST_NON_NULL
        if remove_on_delete and raw.get(f"{FIELDS_PREFIX}{name}.ignore-retract", "false").lower() == "true":
            raise InvalidOptionError(
                f"aggregation.remove-record-on-delete and fields.{name}.ignore-retract have conflicting "
                "behavior so should not be enabled at the same time"
            )
        create_aggregator(func, name, types[name], dict(raw))
        functions[name] = func
    return EngineConfig(**common, remove_record_on_delete=remove_on_delete, functions=functions)


def check_option_functions(options: Mapping[str, str]) -> None:
    """Every aggregate function named in the options exists (no schema needed)."""
    for key, value in options.items():
        if key.startswith(FIELDS_PREFIX) and key.endswith(("aggregate-function", DEFAULT_AGG)):
            check_function_name(value.strip().lower(), f"option {key!r}")
