"""Filters: one frozen predicate tree, parsed from SQL WHERE text, run on Arrow, file stats and partitions."""

from __future__ import annotations

import datetime as dt
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from decimal import Decimal, InvalidOperation
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lsmlake.core.binary_row import Timestamp, deserialize_row, unscaled_decimal
from lsmlake.core.types import DataField, DataType, timestamp_unit, to_arrow_type
from lsmlake.errors import CorruptFileError
from lsmlake.metadata.stats import SimpleStats

__all__ = [
    "And", "ColumnStats", "Compare", "In", "IsNotNull", "IsNull", "Not", "Or", "Predicate", "StartsWith",
    "and_", "between", "coerce_literal", "evaluate", "might_match", "or_", "parse_filter",
    "split_by_fields", "stats_from_simple",
]

OPS = ("=", "!=", "<", "<=", ">", ">=")
_ALIASES = {"==": "=", "<>": "!="}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_PY_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_ARROW_OPS = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
              ">=": pc.greater_equal}
_NULL_BOOL = pc.scalar(pa.scalar(None, pa.bool_()))
_FLOATS = frozenset({"FLOAT", "DOUBLE"})
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_SCALAR_ROOTS = frozenset({*_INT_BITS, *_FLOATS, "BOOLEAN", "DATE", "TIME", "DECIMAL", "TIMESTAMP",
                           "TIMESTAMP_LTZ", "CHAR", "VARCHAR", "BINARY", "VARBINARY", "BLOB"})


class Predicate:
    """Base of the frozen predicate tree; combine with ``&``, ``|`` and ``~``."""

    __slots__ = ()

    def fields(self) -> frozenset[str]:
        raise NotImplementedError

    def to_arrow(self) -> pc.Expression:
        """A pyarrow expression with SQL semantics (a null result filters the row out)."""
        raise NotImplementedError

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return self.child if isinstance(self, Not) else Not(self)


@dataclass(frozen=True)
class Compare(Predicate):
    """``field op literal``; ``dtype`` (set by :func:`parse_filter`) types the Arrow literal."""

    field: str
    op: str
    literal: Any
    dtype: DataType | None = dc_field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        op = _ALIASES.get(self.op, self.op)
        if op not in OPS:
            raise ValueError(f"unknown comparison operator {self.op!r}")
        object.__setattr__(self, "op", op)

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def to_arrow(self) -> pc.Expression:
        if self.literal is None:
            return _NULL_BOOL
        return _ARROW_OPS[self.op](pc.field(self.field), pc.scalar(_arrow_scalar(self.literal, self.dtype)))

    def __str__(self) -> str:
        return f"{_sql_name(self.field)} {self.op} {_sql_literal(self.literal)}"


@dataclass(frozen=True)
class IsNull(Predicate):
    field: str

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.field).is_null()

    def __str__(self) -> str:
        return f"{_sql_name(self.field)} IS NULL"


@dataclass(frozen=True)
class IsNotNull(Predicate):
    field: str

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.field).is_valid()

    def __str__(self) -> str:
        return f"{_sql_name(self.field)} IS NOT NULL"


@dataclass(frozen=True)
class In(Predicate):
    """``field IN (literals)``; a null literal makes a non-match unknown, NaN never matches."""

    field: str
    literals: tuple[Any, ...]
    dtype: DataType | None = dc_field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "literals", tuple(self.literals))

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def to_arrow(self) -> pc.Expression:
        f = pc.field(self.field)
        values = [v for v in self.literals if v is not None and not _is_nan(v)]
        if values:
            t = None if self.dtype is None else _arrow_scalar(values[0], self.dtype).type
            value_set = pa.array([_arrow_scalar(v, self.dtype).as_py() for v in values], type=t)
            hit = pc.is_in(f, value_set=value_set)
        else:
            hit = pc.scalar(False)
        out = pc.if_else(f.is_null(), _NULL_BOOL, hit)
        return pc.if_else(out, True, _NULL_BOOL) if None in self.literals else out

    def __str__(self) -> str:
        return f"{_sql_name(self.field)} IN ({', '.join(_sql_literal(v) for v in self.literals)})"


@dataclass(frozen=True)
class StartsWith(Predicate):
    """``field LIKE 'prefix%'`` on a string column."""

    field: str
    prefix: str

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def to_arrow(self) -> pc.Expression:
        return pc.starts_with(pc.field(self.field), pattern=self.prefix)

    def __str__(self) -> str:
        return f"{_sql_name(self.field)} LIKE {_sql_literal(self.prefix.replace('%', '').replace('_', '') + '%')}"


@dataclass(frozen=True)
class And(Predicate):
    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "children", tuple(self.children))
        if not self.children:
            raise ValueError(f"{type(self).__name__} needs at least one child")

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(c.fields() for c in self.children))

    def to_arrow(self) -> pc.Expression:
        return reduce(operator.and_, (c.to_arrow() for c in self.children))

    def __str__(self) -> str:
        return " AND ".join(f"({c})" if isinstance(c, Or) else str(c) for c in self.children)


@dataclass(frozen=True)
class Or(And):
    def to_arrow(self) -> pc.Expression:
        return reduce(operator.or_, (c.to_arrow() for c in self.children))

    def __str__(self) -> str:
        return " OR ".join(str(c) for c in self.children)


@dataclass(frozen=True)
class Not(Predicate):
    child: Predicate

    def fields(self) -> frozenset[str]:
        return self.child.fields()

    def to_arrow(self) -> pc.Expression:
        return ~self.child.to_arrow()

    def __str__(self) -> str:
        return f"NOT ({self.child})"


def and_(*parts: Predicate | None) -> Predicate | None:
    """The conjunction of the non-None parts, flattened; None if there are none."""
    flat = [c for p in parts if p is not None for c in (p.children if type(p) is And else (p,))]
    return None if not flat else flat[0] if len(flat) == 1 else And(tuple(flat))


def or_(*parts: Predicate) -> Predicate:
    flat = [c for p in parts for c in (p.children if isinstance(p, Or) else (p,))]
    return flat[0] if len(flat) == 1 else Or(tuple(flat))


def between(field: str, low: Any, high: Any) -> Predicate:
    return And((Compare(field, ">=", low), Compare(field, "<=", high)))


# --------------------------------------------------------------------------- literals


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


_TS = re.compile(r"(\d{4,})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
                 r"\s*(Z|[+-]\d{2}:?\d{2})?")


def _parse_timestamp(text: str) -> Timestamp:
    m = _TS.fullmatch(text.strip())
    if not m:
        raise ValueError("expected 'YYYY-MM-DD[ HH:MM[:SS[.fraction]]]'")
    y, mo, d, h, mi, s, frac, tz = m.groups()
    days = dt.date(int(y), int(mo), int(d)).toordinal() - dt.date(1970, 1, 1).toordinal()
    h, mi, s = int(h or 0), int(mi or 0), int(s or 0)
    if h > 23 or mi > 59 or s > 59:
        raise ValueError("time of day out of range")
    nanos = int((frac or "").ljust(9, "0"))
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        mi -= sign * (int(digits[:2]) * 60 + int(digits[2:]))
    millis = (((days * 24 + h) * 60 + mi) * 60 + s) * 1000 + nanos // 1_000_000
    return Timestamp(millis, nanos % 1_000_000)


def _coerce(v: Any, t: DataType) -> Any:
    r = t.root
    if isinstance(v, np.generic):
        v = v.item()
    if r == "BOOLEAN":
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.strip().lower() in ("true", "false"):
            return v.strip().lower() == "true"
        raise TypeError("expected a boolean")
    if isinstance(v, bool) and r in (*_INT_BITS, *_FLOATS, "DECIMAL"):
        raise TypeError("expected a number, got a boolean")
    if r in _INT_BITS:
        if isinstance(v, str):
            v = Decimal(v.strip())
        if isinstance(v, (float, Decimal)):
            if not math.isfinite(v) or v != int(v):
                raise ValueError("not an integer")
            v = int(v)
        if not isinstance(v, int):
            raise TypeError("expected an integer")
        half = 1 << (_INT_BITS[r] - 1)
        if not -half <= v < half:
            raise ValueError("out of range")
        return v
    if r in _FLOATS:
        if isinstance(v, (int, float, Decimal)):
            return float(v)
        if isinstance(v, str):
            return float(v.strip())
        raise TypeError("expected a number")
    if r == "DECIMAL":
        d = Decimal(repr(v)) if isinstance(v, float) else Decimal(v.strip()) if isinstance(v, str) else v
        if isinstance(d, int):
            d = Decimal(d)
        if not isinstance(d, Decimal) or not d.is_finite():
            raise TypeError("expected a finite decimal number")
        precision, scale = t.precision or 10, t.scale or 0
        try:  # exact at the column's scale: use the column's form; otherwise compare exactly as given
            return Decimal(unscaled_decimal(d, precision, scale)).scaleb(-scale)
        except ValueError:
            return d
    if r == "DATE":
        if isinstance(v, dt.datetime):
            if v.tzinfo is None and v.time() == dt.time(0):
                return v.date()
            raise ValueError("a timestamp is not a date")
        if isinstance(v, dt.date):
            return v
        if isinstance(v, str):
            return dt.date.fromisoformat(v.strip())
        raise TypeError("expected a date")
    if r == "TIME":
        v = dt.time.fromisoformat(v.strip()) if isinstance(v, str) else v
        if isinstance(v, dt.time) and v.tzinfo is None:
            return v
        raise TypeError("expected a naive time of day")
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if isinstance(v, Timestamp):
            return v
        if isinstance(v, dt.datetime):
            return Timestamp.from_datetime(v)
        if isinstance(v, dt.date):
            return Timestamp((v.toordinal() - dt.date(1970, 1, 1).toordinal()) * 86_400_000)
        if isinstance(v, str):
            return _parse_timestamp(v)
        raise TypeError("expected a timestamp")
    if r in ("CHAR", "VARCHAR"):
        if isinstance(v, str):
            return v
        raise TypeError("expected a string")
    if r in ("BINARY", "VARBINARY", "BLOB"):
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v)
        if isinstance(v, str):
            return v.encode("utf-8")
        raise TypeError("expected bytes")
    raise ValueError(f"filters on {r} columns are not supported")


def coerce_literal(value: Any, dtype: DataType, *, column: str = "?") -> Any:
    """``value`` in binary_row's Python convention for ``dtype`` (ValueError naming the column if it cannot be)."""
    if value is None:
        return None
    try:
        return _coerce(value, dtype)
    except (TypeError, ValueError, ArithmeticError, InvalidOperation) as e:
        raise ValueError(f"literal {value!r} cannot be used with column {column!r} of type {dtype}: {e}") from None


def _arrow_scalar(v: Any, t: DataType | None) -> pa.Scalar:
    if isinstance(v, Timestamp):
        tz = "UTC" if t is not None and t.root == "TIMESTAMP_LTZ" else None
        unit = "ns" if t is None else timestamp_unit(t.precision or 0)
        per = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}[unit]
        if v.epoch_nanos % per:
            unit, per = "ns", 1
        return pa.scalar(v.epoch_nanos // per, pa.timestamp(unit, tz=tz))
    if t is None or t.root in _FLOATS:
        return pa.scalar(float(v) if t is not None else v)
    if t.root == "DECIMAL":
        target = to_arrow_type(t)
        if -v.as_tuple().exponent == t.scale:
            return pa.scalar(v, target)
        return pa.scalar(v)
    if t.root == "TIME" and v.microsecond % 1000:
        return pa.scalar(v, pa.time64("us"))
    return pa.scalar(v, to_arrow_type(t))


def _sql_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def _sql_literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float) and not math.isfinite(v):
        return f"CAST('{v}' AS DOUBLE)"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, Timestamp):
        base = v.to_datetime().replace(microsecond=0).isoformat(" ")
        return f"TIMESTAMP '{base}.{(v.millis % 1000) * 1_000_000 + v.nanos_of_milli:09d}'"
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.isoformat(' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, dt.time):
        return f"TIME '{v.isoformat()}'"
    if isinstance(v, bytes):
        v = v.decode("utf-8", "backslashreplace")
    return "'" + str(v).replace("'", "''") + "'"


# --------------------------------------------------------------------------- parsing

_SQL_CMP = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


class _Binder:
    def __init__(self, fields: Sequence[DataField]) -> None:
        self.fields = {f.name: f for f in fields}
        self.lower: dict[str, list[DataField]] = {}
        for f in fields:
            self.lower.setdefault(f.name.lower(), []).append(f)

    def column(self, name: str, exact: bool = False) -> DataField:
        if name in self.fields:
            return self.fields[name]
        matches = [] if exact else self.lower.get(name.lower(), [])
        if len(matches) == 1:
            return matches[0]
        raise ValueError(f"unknown column {name!r} in filter (columns: {sorted(self.fields)})")

    def bind(self, p: Predicate) -> Predicate:
        if isinstance(p, (And, Or)):
            return type(p)(tuple(self.bind(c) for c in p.children))
        if isinstance(p, Not):
            return Not(self.bind(p.child))
        col = self.column(p.field)  # type: ignore[attr-defined]
        if isinstance(p, Compare):
            return Compare(col.name, p.op, coerce_literal(p.literal, col.type, column=col.name), col.type)
        if isinstance(p, In):
            lits = tuple(coerce_literal(v, col.type, column=col.name) for v in p.literals)
            return In(col.name, lits, col.type)
        if isinstance(p, StartsWith):
            if not col.type.is_string:
                raise ValueError(f"LIKE needs a string column, {col.name!r} is {col.type}")
            return StartsWith(col.name, str(p.prefix))
        return type(p)(col.name)  # type: ignore[call-arg]

    # -- sqlglot
    def convert(self, node: exp.Expression) -> Predicate:
        if isinstance(node, exp.Paren):
            return self.convert(node.this)
        if isinstance(node, exp.And):
            return and_(self.convert(node.left), self.convert(node.right))  # type: ignore[return-value]
        if isinstance(node, exp.Or):
            return or_(self.convert(node.left), self.convert(node.right))
        if isinstance(node, exp.Not):
            inner = node.this.unnest() if isinstance(node.this, exp.Paren) else node.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                return IsNotNull(self._column(inner.this).name)
            return Not(self.convert(node.this))
        if isinstance(node, exp.Is):
            col = self._column(node.this)
            if isinstance(node.expression, exp.Null):
                return IsNull(col.name)
            if isinstance(node.expression, exp.Boolean) and col.type.root == "BOOLEAN":
                return And((IsNotNull(col.name), Compare(col.name, "=", bool(node.expression.this), col.type)))
        elif type(node) in _SQL_CMP:
            op, left, right = _SQL_CMP[type(node)], node.this, node.expression
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                op, left, right = _FLIP[op], right, left
            col = self._column(left)
            return Compare(col.name, op, self._literal(right, col), col.type)
        elif isinstance(node, exp.Between):
            col = self._column(node.this)
            lo, hi = self._literal(node.args["low"], col), self._literal(node.args["high"], col)
            return And((Compare(col.name, ">=", lo, col.type), Compare(col.name, "<=", hi, col.type)))
        elif isinstance(node, exp.In) and node.expressions and not node.args.get("query"):
            col = self._column(node.this)
            return In(col.name, tuple(self._literal(e, col) for e in node.expressions), col.type)
        elif isinstance(node, exp.Like) and not isinstance(node.expression, exp.Escape):
            col = self._column(node.this)
            like = self._like(col, node.expression)
            return Not(like) if node.args.get("negate") else like
        elif isinstance(node, exp.Column):
            col = self._column(node)
            if col.type.root == "BOOLEAN":
                return Compare(col.name, "=", True, col.type)
        raise ValueError(f"unsupported filter construct: {node.sql()!r}")

    def _column(self, node: exp.Expression) -> DataField:
        if not isinstance(node, exp.Column) or node.table or not isinstance(node.this, exp.Identifier):
            raise ValueError(f"expected a column name, got {node.sql()!r}")
        return self.column(node.name, exact=bool(node.this.args.get("quoted")))

    def _literal(self, node: exp.Expression, col: DataField) -> Any:
        return coerce_literal(_raw_literal(node), col.type, column=col.name)

    def _like(self, col: DataField, node: exp.Expression) -> Predicate:
        pattern = _raw_literal(node)
        if not col.type.is_string or not isinstance(pattern, str):
            raise ValueError(f"LIKE needs a string column and pattern, got {col.name!r} {col.type}")
        head = re.match(r"[^%_]*", pattern).group(0)  # type: ignore[union-attr]
        rest = pattern[len(head):]
        if not rest:
            return Compare(col.name, "=", head, col.type)
        if rest.strip("%") == "":
            return StartsWith(col.name, head)
        raise ValueError(f"unsupported LIKE pattern {pattern!r} (only 'prefix%' and exact patterns)")


def _raw_literal(node: exp.Expression) -> Any:
    if isinstance(node, exp.Literal):
        text = str(node.this)
        if node.is_string:
            return text
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else Decimal(text)
    if isinstance(node, exp.Neg):
        inner = _raw_literal(node.this)
        if isinstance(inner, (int, Decimal)) and not isinstance(inner, bool):
            return -inner
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _raw_literal(node.this)
    if isinstance(node, exp.Paren):
        return _raw_literal(node.this)
    raise ValueError(f"expected a literal, got {node.sql()!r}")


def parse_filter(filter: str | Predicate | None, schema_fields: Sequence[DataField]) -> Predicate | None:
    """A bound Predicate (column names resolved, literals coerced) from SQL WHERE text or a tree."""
    if filter is None:
        return None
    binder = _Binder(schema_fields)
    if isinstance(filter, Predicate):
        return binder.bind(filter)
    if not isinstance(filter, str):
        raise TypeError(f"filter must be SQL text or a Predicate, got {type(filter).__name__}")
    if not filter.strip():
        return None
    try:
        tree = sqlglot.parse_one(filter)
    except sqlglot.errors.SqlglotError as e:
        raise ValueError(f"cannot parse filter {filter!r}: {e}") from None
    return binder.convert(tree)


# --------------------------------------------------------------------------- evaluation


def _norm(v: Any) -> Any:
    return Timestamp.from_datetime(v) if isinstance(v, dt.datetime) else v


def _cmp(value: Any, op: str, literal: Any) -> bool:
    return _PY_OPS[op](_norm(value), _norm(literal))


def evaluate(p: Predicate | None, values: Mapping[str, Any]) -> bool | None:
    """SQL three-valued result of ``p`` on one row of Python values (None = unknown)."""
    if p is None:
        return True
    if isinstance(p, Not):
        r = evaluate(p.child, values)
        return None if r is None else not r
    if isinstance(p, (And, Or)):
        stop = isinstance(p, Or)  # the value that decides the result
        results = [evaluate(c, values) for c in p.children]
        return stop if stop in results else None if None in results else not stop
    name = p.field  # type: ignore[attr-defined]
    if name not in values:
        raise ValueError(f"no value for column {name!r}")
    v = values[name]
    if isinstance(p, IsNull):
        return v is None
    if isinstance(p, IsNotNull):
        return v is not None
    if v is None:
        return None
    if isinstance(p, Compare):
        return None if p.literal is None else _cmp(v, p.op, p.literal)
    if isinstance(p, In):
        if any(lit is not None and _cmp(v, "=", lit) for lit in p.literals):
            return True
        return None if None in p.literals else False
    if isinstance(p, StartsWith):
        return str(v).startswith(p.prefix)
    raise TypeError(f"unknown predicate {p!r}")


@dataclass(frozen=True)
class ColumnStats:
    """Per-file column statistics as Python values; None means unknown."""

    min: Any = None
    max: Any = None
    null_count: int | None = None


def stats_from_simple(
    simple: SimpleStats, fields: Sequence[DataField], row_count: int, *, name: str = ""
) -> dict[str, ColumnStats]:
    """Decode a SimpleStats (min/max BinaryRows over ``fields``) into ColumnStats by column name."""
    placeholder = DataType("BIGINT")
    types = [f.type if f.type.root in _SCALAR_ROOTS else placeholder for f in fields]
    counts = list(simple.null_counts or ())
    counts += [None] * (len(fields) - len(counts))
    try:
        mins = deserialize_row(simple.min_values, types) if fields else []
        maxs = deserialize_row(simple.max_values, types) if fields else []
    except ValueError as e:
        if simple.min_values[:4] == b"\x00\x00\x00\x00":  # empty stats row: nothing but null counts
            mins = maxs = [None] * len(fields)
        else:
            raise CorruptFileError(f"cannot decode column statistics{' of ' + name if name else ''}: {e}") from e
    out: dict[str, ColumnStats] = {}
    for f, t, lo, hi, n in zip(fields, types, mins, maxs, counts, strict=False):
        keep = t is not placeholder
        ok_count = n if n is not None and 0 <= n <= row_count else None
        out[f.name] = ColumnStats(lo if keep else None, hi if keep else None, ok_count)
    return out


def _next_prefix(s: str) -> str | None:
    """The smallest string greater than every string starting with ``s`` (None if there is none)."""
    chars = list(s)
    while chars:
        c = ord(chars[-1]) + 1
        c = 0xE000 if c == 0xD800 else c
        if c <= 0x10FFFF:
            chars[-1] = chr(c)
            return "".join(chars)
        chars.pop()
    return None


def _bound(v: Any) -> Any:
    return None if v is None or _is_nan(v) else _norm(v)


def _leaf_might(p: Predicate, s: ColumnStats, row_count: int, neg: bool) -> bool:
    if isinstance(p, (IsNull, IsNotNull)):
        if s.null_count is None:
            return True
        return s.null_count > 0 if isinstance(p, IsNull) != neg else s.null_count < row_count
    if s.null_count is not None and s.null_count >= row_count:
        return False  # only nulls: no comparison can be true, negated or not
    lo, hi = _bound(s.min), _bound(s.max)
    floats = isinstance(s.min, float) or isinstance(s.max, float)
    if isinstance(p, Compare):
        floats = floats or isinstance(p.literal, float) or (p.dtype is not None and p.dtype.root in _FLOATS)
        if p.literal is None:
            return False
        if neg and floats:
            return True  # NaN satisfies every negated comparison, and stats may not count NaN
        op, lit = _NEGATED[p.op] if neg else p.op, _norm(p.literal)
        if op == "!=":
            return floats or isinstance(lit, str) or lo is None or not (lo == hi == lit)
        if op in ("=", "<", "<=") and lo is not None and not _PY_OPS[op if op != "=" else "<="](lo, lit):
            return False
        return not (op in ("=", ">", ">=") and hi is not None and not _PY_OPS[op if op != "=" else ">="](hi, lit))
    if isinstance(p, In):
        if neg:
            return None not in p.literals
        return any(_leaf_might(Compare(p.field, "=", v), s, row_count, False) for v in p.literals if v is not None)
    if isinstance(p, StartsWith):
        if neg:
            return True
        upper = _next_prefix(p.prefix)
        return (hi is None or hi >= p.prefix) and (upper is None or lo is None or lo < upper)
    return True


def might_match(p: Predicate | None, stats: Mapping[str, ColumnStats], row_count: int) -> bool:
    """False only when no row of a file with these stats can satisfy ``p`` (unknown stats -> True)."""
    if p is None:
        return row_count > 0
    if row_count <= 0:
        return False
    return _might(p, stats, row_count, False)


def _might(p: Predicate, stats: Mapping[str, ColumnStats], row_count: int, neg: bool) -> bool:
    if isinstance(p, Not):
        return _might(p.child, stats, row_count, not neg)
    if isinstance(p, (And, Or)):
        parts = (_might(c, stats, row_count, neg) for c in p.children)
        return all(parts) if isinstance(p, Or) == neg else any(parts)
    s = stats.get(p.field)  # type: ignore[attr-defined]
    if s is None:
        return True
    try:
        return _leaf_might(p, s, row_count, neg)
    except TypeError:  # stats of an unexpected type: cannot prune
        return True


# --------------------------------------------------------------------------- splitting


def split_by_fields(p: Predicate | None, allowed: Iterable[str]) -> Predicate | None:
    """The strongest predicate implied by ``p`` that mentions only ``allowed`` fields (None if nothing)."""
    return None if p is None else _split(p, frozenset(allowed), False)


def _split(p: Predicate, allowed: frozenset[str], neg: bool) -> Predicate | None:
    if p.fields() <= allowed:
        return ~p if neg else p
    if isinstance(p, Not):
        return _split(p.child, allowed, not neg)
    if isinstance(p, (And, Or)):
        parts = [_split(c, allowed, neg) for c in p.children]
        if isinstance(p, Or) == neg:  # a conjunction: keep what survives
            return and_(*parts)
        if any(x is None for x in parts):  # a disjunction: every branch must say something
            return None
        return or_(*[x for x in parts if x is not None])
    return None
