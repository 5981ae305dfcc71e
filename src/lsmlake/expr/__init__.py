"""Filters: one frozen predicate tree, parsed from SQL WHERE text, run on Arrow, file stats and partitions.

pyarrow expressions (:mod:`.arrow_filter`) and DNF lists or nested field paths (:mod:`.filter_input`)
become the same tree; what has no exact equivalent in it is kept as an opaque filter on the rows read.

The tree and its combinators are in :mod:`.tree`, literal coercion in :mod:`.literals`, SQL parsing in
:mod:`.sql`, row evaluation in :mod:`.evaluate` and stats pruning in :mod:`.stats`."""

from __future__ import annotations

from lsmlake.expr.arrow_filter import ArrowPredicate
from lsmlake.expr.evaluate import evaluate
from lsmlake.expr.filter_input import FilterInput
from lsmlake.expr.literals import coerce_literal
from lsmlake.expr.sql import parse_filter, sqlglot_error_text
from lsmlake.expr.stats import ColumnStats, might_match
from lsmlake.expr.tree import (
    And,
    Compare,
    In,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Predicate,
    StartsWith,
    and_,
    between,
    conjuncts,
    filter_table,
    or_,
    split_by_fields,
)

__all__ = [
    "And",
    "ArrowPredicate",
    "ColumnStats",
    "Compare",
    "FilterInput",
    "In",
    "IsNotNull",
    "IsNull",
    "Not",
    "Or",
    "Predicate",
    "StartsWith",
    "and_",
    "between",
    "coerce_literal",
    "conjuncts",
    "evaluate",
    "filter_table",
    "might_match",
    "or_",
    "parse_filter",
    "split_by_fields",
    "sqlglot_error_text",
]
