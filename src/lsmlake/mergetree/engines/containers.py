"""Aggregators that build strings, lists and maps: listagg, collect, merge_map."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lsmlake.mergetree.engines.aggregator import FieldAggregator, Ops, Typed
from lsmlake.mergetree.engines.segments import BoolArray, IntArray, Segments, lists_of, take_or_null, valid


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


class ListAgg(FieldAggregator):
    name = "listagg"
    types = frozenset({"VARCHAR"})
    type_noun = "VARCHAR/STRING"

    def __init__(self, field: str, options: dict[str, str]) -> None:
        super().__init__(field, options)
        self.delimiter = options.get(f"fields.{field}.list-agg-delimiter", ",")
        self.distinct = options.get(f"fields.{field}.distinct", "false").lower() == "true"

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        text = pc.fill_null(pc.not_equal(pc.utf8_trim_whitespace(values), ""), False)
        filled = valid(values) & np.asarray(text.to_numpy(zero_copy_only=False), dtype=bool)
        lists, counts = lists_of(values, ops.contributes & filled, ops.seg)
        joined = pc.binary_join(lists, self.delimiter)
        return pc.if_else(pa.array(counts > 0), joined, take_or_null(values, ops.base))

    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        return ops.seg.any(ops.contributes) if self.distinct else None

    def agg(self, acc: Any, value: Any) -> Any:
        if _blank(value):
            return acc
        if _blank(acc):
            return value
        if not self.distinct:
            return f"{acc}{self.delimiter}{value}"
        seen = set(acc.split(self.delimiter))
        out = [acc]
        for token in value.split(self.delimiter):
            if _blank(token) or token in seen:
                continue
            seen.add(token)
            out.append(token)
        return self.delimiter.join(out)


def _hashable_elements(t: pa.DataType) -> bool:
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t))


def _set_elements(t: pa.DataType) -> bool:
    """Paimon's distinct collect puts these in a hash set (others: a list checked with an equaliser)."""
    return _hashable_elements(t) and not (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    )


def _flatten_rows(values: pa.Array, mask: BoolArray, seg: Segments) -> tuple[pa.Array, IntArray, IntArray]:
    """The elements of the masked list (or map) rows, each with its group, plus per-group element counts."""
    chosen = values.filter(pa.array(mask))
    if pa.types.is_map(values.type):
        chosen = pa.ListArray.from_arrays(chosen.offsets, chosen.values, mask=chosen.is_null())
    flat = pc.list_flatten(chosen)
    lengths = np.zeros(seg.n, dtype=np.int64)
    lengths[mask] = pc.fill_null(pc.list_value_length(chosen), 0).to_numpy()
    group_of = np.repeat(seg.ids, lengths)
    counts = np.add.reduceat(lengths, seg.starts) if seg.count else np.zeros(0, dtype=np.int64)
    return flat, group_of, counts


def _unique_first(group_of: IntArray, keys: pa.Array) -> tuple[IntArray, IntArray]:
    """For (group, key) pairs in order: first and last position of every distinct pair, by first position."""
    pos = np.arange(len(keys), dtype=np.int64)
    table = pa.table({"g": pa.array(group_of, pa.int64()), "k": keys, "p": pa.array(pos)})
    agg = table.group_by(["g", "k"], use_threads=False).aggregate([("p", "min"), ("p", "max")])
    first = agg.column("p_min").to_numpy()
    last = agg.column("p_max").to_numpy()
    order = np.argsort(first, kind="stable")
    return first[order], last[order]


class Collect(Typed):
    name = "collect"
    retractable = True
    types = frozenset({"ARRAY"})
    type_noun = "ARRAY"

    def __init__(self, field: str, options: dict[str, str]) -> None:
        super().__init__(field, options)
        self.distinct = options.get(f"fields.{field}.distinct", "false").lower() == "true"

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        mask = ops.contributes & valid(values)
        flat, group_of, counts = _flatten_rows(values, mask, ops.seg)
        if self.distinct:
            first, _ = _unique_first(group_of, flat)
            flat, group_of = flat.take(pa.array(first)), group_of[first]
            counts = np.bincount(group_of, minlength=ops.seg.count).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        collected = pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), flat, type=values.type, mask=pa.array(~ops.seg.any(mask))
        )
        if not self.distinct:
            return collected
        # a reset row nothing was folded into keeps its duplicates
        untouched = (ops.base >= 0) & ~ops.seg.any(ops.add | ops.retract)
        return pc.if_else(pa.array(untouched), take_or_null(values, ops.base), collected)

    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        route = ops.seg.any(ops.retract)
        if self.distinct and not _set_elements(values.type.value_type):
            route |= ops.seg.any(ops.contributes)
        return route

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None and value is None:
            return None
        if (acc is None or value is None) and not self.distinct:
            return value if acc is None else acc
        if not self.distinct:
            return [*acc, *value]
        # a hash set (first-occurrence order here; Paimon's is the set's) or, for strings, binaries
        # and nested elements, the accumulator as it is plus the new distinct elements
        out: list[Any] = []
        if _set_elements(self.arrow_type.value_type):
            for element in acc or []:
                if element not in out:
                    out.append(element)
        else:
            out = list(acc or [])
        for element in value or []:
            if element not in out:
                out.append(element)
        return out

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.agg(acc, value)

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return None
        if not value:
            return acc
        pending = list(value)
        out = []
        for element in acc:
            if element in pending:
                pending.remove(element)
            else:
                out.append(element)
        return out


class MergeMap(FieldAggregator):
    name = "merge_map"
    retractable = True
    types = frozenset({"MAP"})
    type_noun = "MAP"

    def fold(self, values: pa.Array, ops: Ops) -> pa.Array:
        mask = ops.contributes & valid(values)
        entries, group_of, _ = _flatten_rows(values, mask, ops.seg)
        first, last = _unique_first(group_of, entries.field(0))
        counts = np.bincount(group_of[first], minlength=ops.seg.count).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        keys = entries.field(0).take(pa.array(first))
        items = entries.field(1).take(pa.array(last))
        return pa.MapArray.from_arrays(
            pa.array(offsets, pa.int32()), keys, items, type=values.type, mask=pa.array(~ops.seg.any(mask))
        )

    def scalar_groups(self, values: pa.Array, ops: Ops) -> BoolArray | None:
        route = ops.seg.any(ops.retract)
        if not _hashable_elements(values.type.key_type):
            route |= ops.seg.any(ops.contributes)
        return route

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        merged = dict(acc)
        merged.update(dict(value))
        return list(merged.items())

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return None
        if not value:
            return acc
        gone = {k for k, _ in value}
        return [(k, v) for k, v in acc if k not in gone]
