"""Bucket pruning: the buckets a filter can reach when it pins every bucket-key column."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pyarrow as pa

from lsmlake.core.bucket import bucket_ids
from lsmlake.core.options import CoreOptions
from lsmlake.core.schema import TableSchema
from lsmlake.core.types import to_arrow_type
from lsmlake.expr import And, Compare, In, Predicate

MAX_BUCKET_KEY_COMBINATIONS = 4096


def _bucket_key_literals(pred: Predicate, names: Sequence[str]) -> dict[str, tuple[object, ...]] | None:
    """Values the filter allows for every bucket-key column (equality or IN conjuncts), else None."""
    conjuncts = pred.children if isinstance(pred, And) else (pred,)
    found: dict[str, tuple[object, ...]] = {}
    for c in conjuncts:
        if isinstance(c, Compare) and c.op == "=" and c.field in names and c.literal is not None:
            values: tuple[object, ...] = (c.literal,)
        elif isinstance(c, In) and c.field in names:
            values = tuple(v for v in c.literals if v is not None)
        else:
            continue
        found[c.field] = tuple(v for v in values if v in found[c.field]) if c.field in found else values
    return found if set(found) == set(names) else None


class BucketSelector:
    """The buckets a filter can reach, when it pins every bucket-key column (Java's BucketSelectConverter)."""

    def __init__(self, predicate: Predicate | None, schema: TableSchema, options: CoreOptions) -> None:
        self.columns: list[pa.Array] | None = None
        self.types = [schema.field(k).type for k in schema.bucket_keys] if schema.bucket_keys else []
        self._buckets: dict[int, frozenset[int]] = {}
        default_hash = options.get(CoreOptions.BUCKET_FUNCTION_TYPE) == "default"
        if predicate is None or options.bucket <= 0 or not self.types or not default_hash:
            return
        literals = _bucket_key_literals(predicate, schema.bucket_keys)
        if literals is None:
            return
        combos = 1
        for k in schema.bucket_keys:
            combos *= len(literals[k])
        if combos > MAX_BUCKET_KEY_COMBINATIONS:
            return
        rows = list(itertools.product(*(literals[k] for k in schema.bucket_keys)))
        try:
            self.columns = [
                pa.array([r[i] for r in rows], to_arrow_type(t)) for i, t in enumerate(self.types)
            ]
        except (pa.ArrowException, TypeError, ValueError):
            self.columns = None  # literals Arrow cannot hold as the column type: no bucket pruning

    def buckets(self, total_buckets: int) -> frozenset[int] | None:
        """Reachable buckets for files written with ``total_buckets`` buckets (None = all)."""
        if self.columns is None or total_buckets <= 0:
            return None
        chosen = self._buckets.get(total_buckets)
        if chosen is None:
            ids = bucket_ids(self.columns, self.types, total_buckets).tolist() if len(self.columns[0]) else []
            chosen = self._buckets[total_buckets] = frozenset(int(b) for b in ids)
        return chosen
