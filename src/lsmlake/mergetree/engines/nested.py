"""Nested-table and keyed-map aggregators: nested_update, nested_partial_update, merge_map_with_keytime.

nested_update folds all key groups at once (flattened elements grouped by key and nested key); a
reset, a retraction or a nested sequence field sends a group through the record-by-record definition.

Paimon keeps the merged elements in a Java HashMap, so its output order follows the map's hashing;
lsmlake keeps them in first-seen order (the same elements, as for merge_map and distinct collect).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.core.types import DataType
from lsmlake.errors import InvalidOptionError, LsmlakeError
from lsmlake.mergetree.engines.aggregator import Ops
from lsmlake.mergetree.engines.recordwise import RecordFold, freeze
from lsmlake.mergetree.engines.segments import BoolArray, valid

INT_MAX = 2**31 - 1
NULL_STRATEGIES = ("merge", "ignore", "error")


def _names(options: Mapping[str, str], key: str) -> list[str]:
    text = options.get(key)
    return [] if text is None else [s.strip() for s in text.split(",")]


def _row_fields(name: str, field: str, dtype: DataType) -> list[str]:
    element = dtype.element
    if dtype.root != "ARRAY" or element is None or element.root != "ROW":
        raise InvalidOptionError(
            f"aggregate function '{name}' of field '{field}': data type for nested table column must be "
            f"'Array<Row>' but was '{dtype}'"
        )
    return [f.name for f in element.fields]


def _check_members(option: str, names: list[str], fields: list[str]) -> None:
    for n in names:
        if n not in fields:
            raise InvalidOptionError(f"option {option!r}: field '{n}' is not in the nested row {fields}")


def _utf16(text: str) -> bytes:
    """Java's String.compareTo order (UTF-16 code units) as a byte string."""
    return text.encode("utf-16-be", "surrogatepass")


def _compare_nulls_first(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            if x is None and y is None:
                continue
            return -1 if x is None else 1
        if x != y:
            return -1 if x < y else 1
    return 0


class NestedKeyed(RecordFold):
    """The ``fields.<f>.nested-key`` options shared by the nested-table aggregators."""

    def __init__(self, field: str, options: dict[str, str]) -> None:
        super().__init__(field, options)
        prefix = f"fields.{field}."
        self.key_option = prefix + "nested-key"
        self.nested_key = _names(options, self.key_option)
        self.strategy_option = prefix + "nested-key-null-strategy"
        strategy = options.get(self.strategy_option, "merge").strip().lower()
        if strategy not in NULL_STRATEGIES:
            raise InvalidOptionError(
                f"option {self.strategy_option!r}: {strategy!r} is not one of {', '.join(NULL_STRATEGIES)}"
            )
        self.strategy = strategy

    def check_options(self, dtype: DataType) -> None:
        self.row_fields = _row_fields(self.name, self.field, dtype)
        _check_members(self.key_option, self.nested_key, self.row_fields)

    def _key(self, row: Mapping[str, Any]) -> Hashable | None:
        """The nested key of an element, or None when the null strategy drops it."""
        key = tuple(row[k] for k in self.nested_key)
        if any(v is None for v in key):
            if self.strategy == "ignore":
                return None
            if self.strategy == "error":
                raise self._null_key_error()
        return freeze(key)

    def _null_key_error(self) -> LsmlakeError:
        return LsmlakeError(
            f"field '{self.field}': nested key {self.nested_key} contains null values; "
            "primary key fields must not be null"
        )


class NestedUpdate(NestedKeyed):
    """Rows of an ARRAY<ROW> replaced by nested key (or appended without one), up to a count limit."""

    name = "nested_update"
    retractable = True

    def __init__(self, field: str, options: dict[str, str]) -> None:
        super().__init__(field, options)
        prefix = f"fields.{field}."
        self.seq_option = prefix + "nested-sequence-field"
        self.sequence = _names(options, self.seq_option)
        limit_key = prefix + "count-limit"
        text = options.get(limit_key, str(INT_MAX)).strip()
        try:
            self.count_limit = int(text)
        except ValueError:
            raise InvalidOptionError(f"option {limit_key!r}: {text!r} is not an integer") from None
        if not -(2**31) <= self.count_limit <= INT_MAX:
            raise InvalidOptionError(f"option {limit_key!r}: {text} does not fit an INT")
        if self.strategy_option in options and not self.nested_key:
            raise InvalidOptionError(
                f"option {self.strategy_option!r} requires {self.key_option!r} to be configured"
            )
        if self.sequence and not self.nested_key:
            raise InvalidOptionError(
                f"option {self.seq_option!r} requires {self.key_option!r} to be configured"
            )

    def check_options(self, dtype: DataType) -> None:
        super().check_options(dtype)
        _check_members(self.seq_option, self.sequence, self.row_fields)

    # -- vectorized: no reset, no retraction, no nested sequence field (those go record by record)
    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        route = ops.seg.any(ops.retract) | (ops.base >= 0)
        element = values.type.value_type
        nested = any(pa.types.is_nested(element.field(k).type) for k in self.nested_key)
        if self.sequence or nested:
            route |= ops.seg.sizes > 0
        return route

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        seg = ops.seg
        mask = ops.add & valid(values)
        chosen = values.filter(pa.array(mask))
        lengths = np.zeros(seg.n, dtype=np.int64)
        lengths[mask] = pc.fill_null(pc.list_value_length(chosen), 0).to_numpy()
        flat = pc.list_flatten(chosen)
        group_of = np.repeat(seg.ids, lengths)
        keep = valid(flat)
        if self.nested_key:
            keys = [flat.field(k) for k in self.nested_key]
            null_key = np.zeros(len(flat), dtype=bool)
            for k in keys:
                null_key |= ~valid(k)
            null_key &= keep
            if null_key.any() and self.strategy == "error":
                raise self._null_key_error()
            if self.strategy == "ignore":
                keep &= ~null_key
            first, last = _first_last(group_of, keys, keep)
        else:
            first = last = np.flatnonzero(keep)
        groups = group_of[first]
        rank = np.arange(len(first)) - np.searchsorted(groups, groups)  # first-seen order within a group
        admitted = rank < max(self.count_limit, 0)
        first, last, groups = first[admitted], last[admitted], groups[admitted]
        counts = np.bincount(groups, minlength=seg.count).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        return pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()),
            flat.take(pa.array(last)),
            type=values.type,
            mask=pa.array(~seg.any(mask)),
        )

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        if not self.nested_key:
            if acc is None:
                return [r for r in value if r is not None][: max(self.count_limit, 0)]
            if len(acc) >= self.count_limit:
                return acc
            remain = self.count_limit - len(acc)
            return [r for r in acc if r is not None] + [r for r in value if r is not None][:remain]
        rows: dict[Hashable, Any] = {}
        if acc is not None:
            self._put(acc, rows, limit_new=False)
        self._put(value, rows, limit_new=True)
        return list(rows.values())

    def _put(self, elements: list[Any], rows: dict[Hashable, Any], *, limit_new: bool) -> None:
        for row in elements:
            if row is None:
                continue
            key = self._key(row)
            if key is None:
                continue
            old = rows.get(key, _ABSENT)
            if old is not _ABSENT:
                if not self.sequence or self._newer_or_equal(row, old):
                    rows[key] = row
            elif not limit_new or len(rows) < self.count_limit:
                rows[key] = row

    def _newer_or_equal(self, row: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
        new_seq = tuple(row[f] for f in self.sequence)
        old_seq = tuple(old[f] for f in self.sequence)
        return _compare_nulls_first(new_seq, old_seq) >= 0

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        if not self.nested_key:
            rows = [r for r in acc if r is not None]
            for gone in value:
                if gone is not None:
                    frozen = freeze(gone)
                    rows = [r for r in rows if freeze(r) != frozen]
            return rows
        kept: dict[Hashable, Any] = {}
        for row in acc:
            if row is not None and (key := self._key(row)) is not None:
                kept[key] = row
        for row in value:
            if row is not None and (key := self._key(row)) is not None:
                kept.pop(key, None)
        return list(kept.values())


_ABSENT = object()


def _first_last(group_of: np.ndarray, keys: list[pa.Array], keep: BoolArray) -> tuple[np.ndarray, np.ndarray]:
    """For each distinct (group, nested key) among the kept elements: its first and last position, ordered
    by group and then by first position (nulls are a key value like any other)."""
    pos = np.flatnonzero(keep)
    columns = {"g": pa.array(group_of[pos]), "p": pa.array(pos)}
    columns.update({f"k{i}": k.take(pa.array(pos)) for i, k in enumerate(keys)})
    table = pa.table(columns)
    agg = table.group_by(["g", *(f"k{i}" for i in range(len(keys)))], use_threads=False).aggregate(
        [("p", "min"), ("p", "max")]
    )
    first = agg.column("p_min").to_numpy()
    last = agg.column("p_max").to_numpy()
    order = np.argsort(first, kind="stable")  # positions grow with the group, so this orders groups too
    return first[order], last[order]


class NestedPartialUpdate(NestedKeyed):
    """Rows of an ARRAY<ROW> merged by nested key, each field taking the last non-null value."""

    name = "nested_partial_update"

    def __init__(self, field: str, options: dict[str, str]) -> None:
        super().__init__(field, options)
        if not self.nested_key:
            raise InvalidOptionError(
                f"aggregate function 'nested_partial_update' of field '{field}' needs {self.key_option!r}"
            )

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        rows = [r for r in (acc or []) if r is not None] + [r for r in value if r is not None]
        merged: dict[Hashable, dict[str, Any]] = {}
        for row in rows:
            key = self._key(row)
            if key is None:
                continue
            target = merged.setdefault(key, dict.fromkeys(row))
            for name, v in row.items():
                if v is not None:
                    target[name] = v
        return list(merged.values())


class MergeMapWithKeyTime(RecordFold):
    """MAP<K, ROW<..>> merged per key, an entry replaced only by one with a later time string;
    a null value removes its key, an entry whose time is null is skipped."""

    name = "merge_map_with_keytime"

    def __init__(self, field: str, options: dict[str, str]) -> None:
        super().__init__(field, options)
        self.ts_option = f"fields.{field}.ts-field"
        self.ts_field = options.get(self.ts_option)

    def check_options(self, dtype: DataType) -> None:
        value = dtype.value
        if dtype.root != "MAP" or value is None:
            raise InvalidOptionError(
                f"aggregate function '{self.name}': data type for field '{self.field}' must be 'MAP' "
                f"but was '{dtype}'"
            )
        if value.root != "ROW":
            raise InvalidOptionError(
                f"aggregate function '{self.name}': value type of MAP for field '{self.field}' must be ROW "
                f"but was '{value}'"
            )
        fields = {f.name: f.type for f in value.fields}
        if len(fields) < 2:
            raise InvalidOptionError(
                f"aggregate function '{self.name}': ROW type for field '{self.field}' must have at least "
                f"2 fields, but found {len(fields)}"
            )
        ts = self.ts_field if self.ts_field is not None else list(fields)[-1]
        if ts not in fields:
            raise InvalidOptionError(
                f"option {self.ts_option!r}: timestamp field '{ts}' not found in ROW type for field "
                f"'{self.field}'. Available fields: {list(fields)}"
            )
        if not fields[ts].is_string:
            raise InvalidOptionError(
                f"aggregate function '{self.name}' of field '{self.field}': the time field '{ts}' must be "
                f"a string (Paimon compares it as one), but it is {fields[ts]}"
            )

    def _ts(self, row: Mapping[str, Any]) -> Any:
        return row[self.ts_field] if self.ts_field is not None else list(row.values())[-1]

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return value
        if value is None:
            return acc
        merged: dict[Hashable, tuple[Any, Any]] = {freeze(k): (k, v) for k, v in acc}
        for k, row in value:
            key = freeze(k)
            if row is None:
                merged.pop(key, None)
                continue
            ts = self._ts(row)
            if ts is None:
                continue
            old = merged.get(key, (None, None))[1]
            old_ts = None if old is None else self._ts(old)
            if old_ts is None or _utf16(ts) > _utf16(old_ts):
                merged[key] = (k, row)
        return list(merged.values())
