"""Column default values (Paimon's ``defaultValue``): the SQL text parsed to a value of the column's type.

Paimon casts the text (without one pair of enclosing single quotes) from STRING to the column type,
and fills it in for every null of that column a writer is given (``DefaultValueRow``).
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache

import pyarrow as pa

from lsmlake.core.types import DataType, to_arrow_type

_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})
_NO_DEFAULT = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB", "VECTOR"})
_CAST_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowNotImplementedError,
    pa.ArrowTypeError,
    ValueError,
    OverflowError,
    InvalidOperation,
)


def unquoted(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text.startswith("'") and text.endswith("'") else text


@lru_cache(maxsize=256)
def default_scalar(t: DataType, text: str) -> pa.Scalar:
    """The value ``text`` stands for in a column of type ``t``; ValueError when it is not one."""
    if t.root in _NO_DEFAULT:
        raise ValueError(f"a default value is not supported for type {t}")
    raw = unquoted(text)
    target = to_arrow_type(t)
    try:
        value = _parse(t, raw)
        scalar = pa.scalar(value, target) if value is not None else pa.scalar(raw).cast(target)
    except _CAST_ERRORS as e:
        raise ValueError(f"default value {text!r} is not a {t}: {e}") from None
    if t.root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY") and t.length is not None:
        size = len(raw) if t.root in ("CHAR", "VARCHAR") else len(raw.encode())
        if size > t.length:
            raise ValueError(f"default value {text!r} is longer than {t}")
    return scalar


def _parse(t: DataType, raw: str) -> object:
    """A Python value for the roots pyarrow's string cast does not read as Paimon does; None otherwise."""
    root = t.root
    if root == "BOOLEAN":
        word = raw.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ValueError(f"{raw!r} is not a boolean")
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return int(raw.strip())
    if root in ("FLOAT", "DOUBLE"):
        return float(raw.strip())
    if root == "DECIMAL":
        assert t.scale is not None and t.precision is not None
        value = Decimal(raw.strip()).quantize(Decimal(1).scaleb(-t.scale), rounding=ROUND_HALF_UP)
        if value.adjusted() >= t.precision - t.scale:
            raise ValueError(f"{raw!r} does not fit {t}")
        return value
    if root == "TIME":
        return dt.time.fromisoformat(raw.strip())
    if root in ("BINARY", "VARBINARY"):
        return raw.encode()
    return None
