"""Which column type changes an ALTER may make: lossless widenings only.

Paimon's ``DataTypeCasts`` allows any *implicit* cast (and by default even explicit ones such as
STRING -> INT). lsmlake allows the subset that can never lose or change a value already written, so
that files written before the change read back exactly under the new type:

* TINYINT -> SMALLINT -> INT -> BIGINT
* TINYINT/SMALLINT -> FLOAT, TINYINT/SMALLINT/INT -> DOUBLE, FLOAT -> DOUBLE
* integers -> DECIMAL(p, s) with at least as many integer digits (p - s) as the integer type has
* DECIMAL(p1, s1) -> DECIMAL(p2, s2) with s2 >= s1 and p2 - s2 >= p1 - s1 (e.g. precision increase,
  same scale)
* CHAR(n)/VARCHAR(n) -> VARCHAR(m), BINARY(n)/VARBINARY(n) -> VARBINARY(m), for m >= n
* TIME(p), TIMESTAMP(p), TIMESTAMP(p) WITH LOCAL TIME ZONE -> the same with a higher precision

Nested types (ARRAY, MAP, ROW, MULTISET) cannot change type.
"""

from __future__ import annotations

from lsmlake.core.types import NESTED_ROOTS, DataType

_INT_RANK = {"TINYINT": 1, "SMALLINT": 2, "INT": 3, "BIGINT": 4}
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_FLOAT_FROM = {"FLOAT": ("TINYINT", "SMALLINT"), "DOUBLE": ("TINYINT", "SMALLINT", "INT", "FLOAT")}
_PRECISION_ROOTS = ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ")

ALLOWED_SUMMARY = (
    "TINYINT -> SMALLINT -> INT -> BIGINT; TINYINT/SMALLINT -> FLOAT; TINYINT/SMALLINT/INT/FLOAT -> DOUBLE; "
    "integer -> DECIMAL with enough integer digits; DECIMAL(p, s) -> DECIMAL(p', s') with s' >= s and "
    "p' - s' >= p - s; CHAR/VARCHAR(n) -> VARCHAR(m >= n); BINARY/VARBINARY(n) -> VARBINARY(m >= n); "
    "TIME/TIMESTAMP precision increase"
)


def _widens(a: DataType, b: DataType) -> bool:
    ra, rb = a.root, b.root
    if ra in _INT_RANK and rb in _INT_RANK:
        return _INT_RANK[rb] >= _INT_RANK[ra]
    if rb in _FLOAT_FROM:
        return ra in _FLOAT_FROM[rb]
    if ra in _INT_RANK and rb == "DECIMAL":
        assert b.precision is not None and b.scale is not None
        return b.precision - b.scale >= _INT_DIGITS[ra]
    if ra == "DECIMAL" and rb == "DECIMAL":
        assert None not in (a.precision, a.scale, b.precision, b.scale)
        return b.scale >= a.scale and b.precision - b.scale >= a.precision - a.scale  # type: ignore[operator]
    if ra in ("CHAR", "VARCHAR") and rb == "VARCHAR":
        return (b.length or 0) >= (a.length or 0)
    if ra in ("BINARY", "VARBINARY") and rb == "VARBINARY":
        return (b.length or 0) >= (a.length or 0)
    if ra == rb and ra in _PRECISION_ROOTS:
        return (b.precision or 0) >= (a.precision or 0)
    return False


def widening_error(old: DataType, new: DataType) -> str | None:
    """None when a column of type ``old`` may become ``new`` (nullability aside), else the reason."""
    a, b = old.copy(nullable=True), new.copy(nullable=True)
    if a == b:
        return None
    if a.root in NESTED_ROOTS or b.root in NESTED_ROOTS or a.root == "VECTOR" or b.root == "VECTOR":
        return f"nested types cannot change type ({a} -> {b}); only their nullability can change"
    if _widens(a, b):
        return None
    return (
        f"{a} cannot be converted to {b} without losing information; lsmlake allows only lossless "
        f"widenings: {ALLOWED_SUMMARY}"
    )


def stats_comparable(old: DataType, new: DataType) -> bool:
    """Whether min/max statistics decoded as ``old`` compare correctly against ``new`` literals.

    True for equal types and for the numeric and string widenings (their Python values are the same
    numbers and strings); time types are left out, so files of older schemas are never pruned on them.
    """
    a, b = old.copy(nullable=True), new.copy(nullable=True)
    if a == b:
        return True
    numeric = set(_INT_RANK) | {"FLOAT", "DOUBLE", "DECIMAL"}
    if a.root in numeric and b.root in numeric:
        return _widens(a, b)
    return a.root in ("CHAR", "VARCHAR") and b.root == "VARCHAR"
